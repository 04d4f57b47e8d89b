"""The EnvPool adapter: a fake pool with EnvPool's gymnasium API, and the real one if present."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from tdrl.env import make_vector_env
from tdrl.env.envpool_env import EnvPoolVectorEnv


class FakePool:
    """Counters with EnvPool's call signatures: obs = steps since reset, done at 2."""

    config = {"num_envs": 3}  # noqa: RUF012
    observation_space = spaces.Box(0, 10, shape=(1,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = np.zeros(3, dtype=np.float32)

    def reset(self, env_id):
        self.t[env_id] = 0
        return self.t[env_id, None].copy(), {"env_id": env_id, "lives": np.zeros(len(env_id))}

    def step(self, action, env_id):
        self.t[env_id] += 1
        done = self.t[env_id] >= 2
        info = {"env_id": env_id, "lives": np.ones(len(env_id))}
        return self.t[env_id, None].copy(), done.astype(np.float32), done, ~done & False, info


def test_fake_pool_contract() -> None:
    venv = EnvPoolVectorEnv(FakePool())
    obs, info = venv.reset()
    assert obs.shape == (3, 1) and [d["env_id"] for d in info] == [0, 1, 2]
    assert info[0]["lives"] == 0
    obs, *_, info = venv.step(np.array([1, 1]), env_id=[2, 0])
    assert obs[:, 0].tolist() == [1, 1] and [d["env_id"] for d in info] == [2, 0]
    obs, rew, term, _, info = venv.step(np.array([1]), env_id=[0])
    assert term.tolist() == [True] and rew.tolist() == [1.0] and info[0]["lives"] == 1
    with pytest.raises(NotImplementedError, match="seeded at creation"):
        venv.seed(0)


def test_real_envpool() -> None:
    envpool = pytest.importorskip("envpool")
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, seed=0)
    venv = make_vector_env(pool)
    obs, _ = venv.reset()
    obs, *_ = venv.step(np.array([1]), env_id=[1])
    assert obs.shape == (1, 4)
