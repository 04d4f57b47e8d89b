"""``make_vector_env``: every source kind, and clear errors for bad input."""

from __future__ import annotations

import gymnasium as gym
import pytest

from tdrl.env import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv, make_vector_env
from tdrl.env.testing import MoveToRightEnv


@pytest.mark.parametrize(
    ("kind", "cls"),
    [("dummy", DummyVectorEnv), ("subproc", SubprocVectorEnv), ("shmem", ShmemVectorEnv)],
)
def test_factories_by_kind(kind: str, cls: type) -> None:
    venv = make_vector_env([lambda: MoveToRightEnv(2)] * 2, kind=kind, context="fork")  # type: ignore[arg-type]
    assert type(venv) is cls and len(venv) == 2
    assert venv.reset()[0].tolist() == [0, 0]
    venv.close()


def test_single_factory_env_id_and_env() -> None:
    venv = make_vector_env(lambda: MoveToRightEnv(2), num_envs=3, wait_num=2)
    assert len(venv) == 3 and venv.is_async
    venv.close()
    venv = make_vector_env("CartPole-v1", num_envs=2)
    assert venv.reset(seed=0)[0].shape == (2, 4)
    assert make_vector_env(venv) is venv
    venv.close()
    env = gym.make("CartPole-v1")
    venv = make_vector_env(env)
    assert len(venv) == 1 and venv.envs[0] is env
    venv.close()


def test_bad_sources() -> None:
    with pytest.raises(ValueError, match="needs num_envs"):
        make_vector_env("CartPole-v1")
    with pytest.raises(TypeError, match=r"expected env factories.*got int"):
        make_vector_env(3)
    with pytest.raises(ValueError, match="kind must be 'dummy', 'subproc' or 'shmem', got 'ray'"):
        make_vector_env([lambda: MoveToRightEnv(2)], kind="ray")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wait_num must be in \\[1, 2\\], got 5"):
        make_vector_env([lambda: MoveToRightEnv(2)] * 2, wait_num=5)
