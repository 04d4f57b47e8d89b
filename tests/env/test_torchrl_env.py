"""The TorchRL env adapter (in-process envs only: spawning torchrl workers takes seconds)."""

from __future__ import annotations

import numpy as np
import pytest

torchrl_envs = pytest.importorskip("torchrl.envs")

from tdrl.env import make_vector_env  # noqa: E402
from tdrl.env.testing import MoveToRightEnv  # noqa: E402


def _serial(n: int):
    from torchrl.envs import GymWrapper, SerialEnv

    fns = [
        lambda i=i: GymWrapper(MoveToRightEnv(2 + i), categorical_action_encoding=True)
        for i in range(n)
    ]
    return SerialEnv(n, fns)


def test_serial_env_subset_step_and_reset() -> None:
    venv = make_vector_env(_serial(3))
    assert type(venv).__name__ == "TorchRLVectorEnv" and len(venv) == 3
    assert venv.action_space[0].n == 2
    obs, info = venv.reset()
    assert obs.reshape(3).tolist() == [0, 0, 0] and [d["env_id"] for d in info] == [0, 1, 2]
    obs, rew, term, trunc, info = venv.step(np.array([1, 1]), env_id=[0, 2])
    assert obs.reshape(2).tolist() == [1, 1] and [d["env_id"] for d in info] == [0, 2]
    obs, rew, term, trunc, _ = venv.step(np.array([1, 1, 1]))
    assert obs.reshape(3).tolist() == [2, 1, 2]
    assert term.tolist() == [True, False, False] and rew.dtype == np.float64
    assert rew.tolist() == [1.0, 0.0, 0.0] and trunc.tolist() == [False] * 3
    obs, _ = venv.reset(env_id=[0])
    assert obs.reshape(1).tolist() == [0]
    obs, *_ = venv.step(np.array([1]), env_id=[1])
    assert obs.reshape(1).tolist() == [2]
    venv.close()


def test_unbatched_gym_env() -> None:
    from torchrl.envs import GymEnv

    venv = make_vector_env(GymEnv("CartPole-v1", categorical_action_encoding=True))
    assert len(venv) == 1
    venv.seed(0)
    obs, _ = venv.reset()
    assert obs.shape == (1, 4)
    obs, rew, _, _, info = venv.step(np.array([1]))
    assert obs.shape == (1, 4) and rew.tolist() == [1.0] and info[0]["env_id"] == 0
    venv.close()


def test_one_hot_actions_take_integers() -> None:
    from torchrl.envs import GymEnv, SerialEnv

    venv = make_vector_env(SerialEnv(2, lambda: GymEnv("CartPole-v1")))
    assert venv.action_space[1].n == 2
    venv.reset()
    obs, rew, *_ = venv.step(np.array([0, 1]))
    assert obs.shape == (2, 4) and rew.tolist() == [1.0, 1.0]
    venv.close()


def test_parallel_env_fork() -> None:
    from torchrl.envs import GymEnv, ParallelEnv

    penv = ParallelEnv(
        2,
        lambda: GymEnv("CartPole-v1", categorical_action_encoding=True),
        mp_start_method="fork",
    )
    venv = make_vector_env(penv)
    obs, _ = venv.reset()
    assert obs.shape == (2, 4)
    obs, rew, *_ = venv.step(np.array([1]), env_id=[1])
    assert obs.shape == (1, 4) and rew.tolist() == [1.0]
    venv.close()
