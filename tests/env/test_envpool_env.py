"""The EnvPool adapter: a fake pool with EnvPool's gymnasium API, and the real one if present."""

from __future__ import annotations

import gymnasium as gym
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


def test_envpool_gymnasium_vector_env_is_detected_before_the_gymnasium_path() -> None:
    """EnvPool 1.x classes live in module "abc" and subclass gymnasium's VectorEnv (with
    NEXT_STEP autoreset, which the gymnasium adapter rejects); an envpool base in the MRO
    must route them to the EnvPool adapter."""
    mixin = type("GymnasiumEnvPoolMixin", (), {"__module__": "envpool.python.gymnasium_envpool"})
    pool_cls = type("CartPoleGymnasiumEnvPool", (FakePool, mixin, gym.vector.VectorEnv), {})
    pool_cls.__module__ = "abc"
    venv = make_vector_env(pool_cls())
    assert isinstance(venv, EnvPoolVectorEnv) and len(venv) == 3


def test_real_envpool() -> None:
    envpool = pytest.importorskip("envpool")
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, seed=0)
    venv = make_vector_env(pool)  # a gymnasium VectorEnv subclass: must not take that path
    assert isinstance(venv, EnvPoolVectorEnv)
    obs, _ = venv.reset()
    obs, *_ = venv.step(np.array([1]), env_id=[1])
    assert obs.shape == (1, 4)


def test_real_envpool_collection_has_no_autoreset_junk() -> None:
    """EnvPool autoresets on the step after an episode ends (NEXT_STEP); the collector resets
    finished envs itself, so every stored CartPole step is a real one: reward 1, obs_next of
    step t is obs of step t + 1 inside an episode, and episodes start from a reset state."""
    envpool = pytest.importorskip("envpool")
    from tdrl.data import Collector, VectorReplayBuffer

    n_env = 4
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n_env, seed=0)
    buf = VectorReplayBuffer(40_000, n_env)
    collector = Collector(None, make_vector_env(pool), buf)
    collector.reset()
    stats = collector.collect(n_step=8000, random=True)
    assert stats.n_collected_steps == 8000 and stats.n_collected_episodes > 100
    data = buf[buf.sample_indices(0)]
    assert len(data) == 8000
    assert (data.rew == 1.0).all()
    assert int(data.done.sum()) == stats.n_collected_episodes  # every ended episode, once
    idx = buf.sample_indices(0)
    inner = idx[~buf.done[idx].numpy() & np.isin(buf.next(idx), idx) & (buf.next(idx) != idx)]
    np.testing.assert_array_equal(buf.obs_next[inner].numpy(), buf.obs[buf.next(inner)].numpy())
    starts = idx[buf.prev(idx) == idx]
    assert np.abs(buf.obs[starts].numpy()).max() <= 0.05  # CartPole resets in [-0.05, 0.05]
    assert stats.lens.max() <= 500
