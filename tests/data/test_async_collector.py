"""AsyncCollector: results arrive per env in any order; each sub-buffer stays chronological."""

from __future__ import annotations

import numpy as np
import pytest

from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import AsyncCollector
from tdrl.env import DummyVectorEnv, SubprocVectorEnv
from tdrl.env.testing import MoveToRightEnv
from tests.data.test_collector import RightPolicy

SIZES = [2, 3, 4]


def _sub_buffer_obs(buf: VectorReplayBuffer, i: int, size: int) -> list[int]:
    idx = buf.sample_indices(0)
    own = idx[(idx >= i * size) & (idx < (i + 1) * size)]
    return buf.obs[own].tolist()


def _check_walks(buf: VectorReplayBuffer, per_env: int) -> None:
    for i, size in enumerate(SIZES):
        obs = _sub_buffer_obs(buf, i, per_env)
        assert obs == [k % size for k in range(len(obs))], (i, obs)


@pytest.fixture
def slow_envs() -> SubprocVectorEnv:
    fns = [
        lambda s=s, i=i: MoveToRightEnv(size=s, sleep=0.002 * (i + 1)) for i, s in enumerate(SIZES)
    ]
    envs = SubprocVectorEnv(fns, wait_num=1, context="fork")
    yield envs
    envs.close()


def test_async_n_step_collects_at_least_and_keeps_each_env_chronological(slow_envs) -> None:
    buf = VectorReplayBuffer(300, 3)
    c = AsyncCollector(RightPolicy(), slow_envs, buf)
    c.reset()
    total = 0
    for _ in range(3):
        stats = c.collect(n_step=10)
        assert stats.n_collected_steps >= 10
        total += stats.n_collected_steps
    assert len(buf) == total
    _check_walks(buf, 100)
    assert set(np.unique(buf.info.env_id[buf.sample_indices(0)]).tolist()) == {0, 1, 2}


def test_async_n_episode_collects_at_least(slow_envs) -> None:
    buf = VectorReplayBuffer(300, 3)
    c = AsyncCollector(RightPolicy(), slow_envs, buf)
    c.reset()
    stats = c.collect(n_episode=5)
    assert stats.n_collected_episodes >= 5
    assert all(length in SIZES for length in stats.lens.tolist())
    _check_walks(buf, 100)


def test_async_collector_on_dummy_env_random_actions_is_seeded() -> None:
    def run() -> list[int]:
        envs = DummyVectorEnv([lambda: MoveToRightEnv(5)] * 2, wait_num=1)
        buf = VectorReplayBuffer(100, 2)
        c = AsyncCollector(None, envs, buf)
        c.reset(seed=1)
        c.collect(n_step=20, random=True)
        return buf.act[buf.sample_indices(0)].tolist()

    assert run() == run()


def test_async_collector_warns_on_sync_env() -> None:
    with pytest.warns(UserWarning, match="synchronous"):
        AsyncCollector(RightPolicy(), DummyVectorEnv([lambda: MoveToRightEnv(3)]))
