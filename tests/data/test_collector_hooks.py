"""Collector hooks and ``Collector[CollectStats](...)`` (issue 24)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tdrl.data import (
    Batch,
    Collector,
    CollectStats,
    EpisodeRolloutHookMCReturn,
    ReplayBuffer,
    StepHook,
    episode_mc_return_to_go,
)
from tdrl.env import DummyVectorEnv


class _Mark(StepHook):
    def __call__(self, action_batch: Batch, rollout_batch: Batch) -> None:
        assert "act" in action_batch
        rollout_batch.set_array_at_key(np.ones(len(rollout_batch)), "marked")


def _collector() -> Collector:
    env = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
    c = Collector[CollectStats](None, env, ReplayBuffer(200))
    c.reset(seed=0)
    return c


def test_step_hook_adds_a_column() -> None:
    c = _collector()
    c.set_on_step_hook(_Mark())
    assert c.collect(n_step=3, random=True).n_collected_steps == 3
    assert c.buffer[:].marked.tolist() == [1.0, 1.0, 1.0]
    assert isinstance(c.get_on_step_hook(), _Mark)


def test_episode_hook_writes_returns_to_go() -> None:
    c = _collector()
    c.set_on_episode_done_hook(EpisodeRolloutHookMCReturn(gamma=0.9))
    c.collect(n_episode=1, random=True)
    data = c.buffer[:]
    to_go = data.get(EpisodeRolloutHookMCReturn.MC_RETURN_TO_GO_KEY).numpy()
    assert np.allclose(to_go, episode_mc_return_to_go(data.rew.numpy(), 0.9))
    full = data.get(EpisodeRolloutHookMCReturn.FULL_EPISODE_MC_RETURN_KEY).numpy()
    assert np.allclose(full, to_go[0])


def test_episode_hook_with_data_refuses_n_step() -> None:
    c = _collector()
    c.set_on_episode_done_hook(EpisodeRolloutHookMCReturn())
    with pytest.raises(ValueError, match="n_episode"):
        c.collect(n_step=400, random=True)


def test_mc_return_to_go() -> None:
    assert episode_mc_return_to_go([1.0, 1.0, 1.0], gamma=0.5).tolist() == [1.75, 1.5, 1.0]
    with pytest.raises(ValueError):
        EpisodeRolloutHookMCReturn(gamma=1.5)
