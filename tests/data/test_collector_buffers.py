"""The collector works with every buffer kind: prioritized, cached, HER."""

from __future__ import annotations

import numpy as np

from tdrl.data import (
    CachedReplayBuffer,
    Collector,
    HERVectorReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
)
from tdrl.env import DummyVectorEnv
from tdrl.env.testing import GoalWalkEnv, MoveToRightEnv
from tests.data.test_collector import RightPolicy, make_envs


def test_collector_with_prioritized_buffer_gives_new_items_max_priority() -> None:
    buf = PrioritizedVectorReplayBuffer(40, 2, alpha=0.6, beta=0.4)
    c = Collector(RightPolicy(), make_envs([3, 4]), buf)
    c.reset()
    c.collect(n_step=10)
    assert len(buf) == 10
    batch, idx = buf.sample(8)
    assert "weight" in batch and np.allclose(batch["weight"].numpy(), 1.0)
    buf.update_weight(idx, np.linspace(0.1, 2.0, len(idx)))
    assert buf.obs[0:5].tolist() == [0, 1, 2, 0, 1]


def test_collector_with_cached_buffer_moves_finished_episodes_to_main() -> None:
    buf = CachedReplayBuffer(ReplayBuffer(50), cached_buffer_num=2, max_episode_length=10)
    c = Collector(RightPolicy(), make_envs([2, 3]), buf)
    c.reset()
    stats = c.collect(n_step=10)
    main = buf.main_buffer
    assert stats.n_collected_episodes == 3  # 5 steps each: env 0 two episodes, env 1 one
    assert len(main) == sum(stats.lens.tolist()) == 7
    assert main.obs[:7].tolist() == [0, 1, 0, 1, 2, 0, 1]


def test_collector_with_her_buffer_and_dict_goal_observations() -> None:
    env_fn = lambda: GoalWalkEnv(size=5, max_steps=6)  # noqa: E731
    reward = GoalWalkEnv(5).compute_reward
    buf = HERVectorReplayBuffer(
        60, 2, compute_reward_fn=lambda ag, dg: reward(ag, dg, {}), horizon=6, future_k=2.0
    )
    c = Collector(None, DummyVectorEnv([env_fn, env_fn]), buf)
    c.reset(seed=0)
    c.collect(n_step=40, random=True)
    batch, _ = buf.sample(16)
    assert set(batch["obs"].keys()) == {"observation", "achieved_goal", "desired_goal"}
    hit = (batch["obs_next"]["achieved_goal"] == batch["obs_next"]["desired_goal"]).all(-1)
    assert np.array_equal(batch["rew"].numpy(), hit.double().numpy() - 1.0)


def test_collector_with_plain_buffer_and_one_env() -> None:
    c = Collector(RightPolicy(), DummyVectorEnv([lambda: MoveToRightEnv(2)]), ReplayBuffer(5))
    c.reset()
    assert c.collect(n_episode=2).n_collected_steps == 4


def test_collector_accepts_a_gymnasium_vector_env_and_a_torchrl_env() -> None:
    import gymnasium as gym
    from torchrl.envs import GymEnv

    from tdrl.data import VectorReplayBuffer

    sources = [
        gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2),
        GymEnv("CartPole-v1", categorical_action_encoding=True),
    ]
    for source in sources:
        c = Collector(None, source, VectorReplayBuffer(100, 2))
        c.reset(seed=0)
        stats = c.collect(n_step=30, random=True)
        assert stats.n_collected_steps >= 30 and len(c.buffer) == stats.n_collected_steps
        c.env.close()
