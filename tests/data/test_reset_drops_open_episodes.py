"""An env reset mid-episode ends that episode for the statistics: the next episode's
return and length count from its own first step (a warm-up's last partial episode used to
run on into the first training episode: length 300 on Pendulum, whose limit is 200)."""

from __future__ import annotations

import gymnasium as gym
import pytest

from tdrl.algorithm.modelfree.sac import SACPolicy
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.data.buffer import CachedReplayBuffer, ReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.utils.net import GaussianActor


def _collector(buffer: object, n: int = 1) -> Collector:
    envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1")] * n)
    policy = SACPolicy(actor=GaussianActor(3, 1, (8,)), action_space=envs.action_space[0])
    return Collector(policy, envs, buffer)


@pytest.mark.parametrize(
    "make",
    [
        lambda: VectorReplayBuffer(2000, 2),
        lambda: CachedReplayBuffer(ReplayBuffer(2000), 2, 300),
    ],
)
def test_the_first_episode_after_a_reset_counts_only_its_own_steps(make: object) -> None:
    buf = make()  # type: ignore[operator]
    c = _collector(buf, n=2)
    c.reset(seed=0)
    c.collect(n_step=200, random=True)  # 100 steps into each env's first episode
    c.reset(reset_buffer=False)  # what a trainer does before training
    stats = c.collect(n_episode=2)
    assert list(stats.lens) == [200, 200]  # Pendulum's time limit, not 300


def test_a_plain_buffer_keeps_its_rows() -> None:
    buf = ReplayBuffer(500)
    c = _collector(buf)
    c.reset(seed=0)
    c.collect(n_step=50, random=True)
    c.reset(reset_buffer=False)
    assert len(buf) == 50
    stats = c.collect(n_episode=1)
    assert list(stats.lens) == [200] and len(buf) == 250
