"""``RandomActionPolicy`` and ``RandomActor``: uniformly random actions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm import RandomActionPolicy, RandomActor
from tdrl.data import Batch, Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.env.testing import MoveToRightEnv


def test_discrete_actions_cover_the_space_uniformly() -> None:
    policy = RandomActionPolicy(gym.spaces.Discrete(3))
    acts = policy(Batch(obs=np.zeros((3000, 2)))).act
    assert acts.shape == (3000,) and acts.dtype == torch.int64
    freq = torch.bincount(acts, minlength=3).float() / 3000
    assert torch.allclose(freq, torch.full((3,), 1 / 3), atol=0.04)
    singles = {policy.compute_action(np.zeros(2)) for _ in range(50)}
    assert singles == {0, 1, 2} and all(type(a) is int for a in singles)


def test_box_actions_stay_in_the_env_range_unscaled() -> None:
    space = gym.spaces.Box(np.array([-5.0, 2.0], np.float32), np.array([-3.0, 9.0], np.float32))
    policy = RandomActionPolicy(space)
    acts = policy(Batch(obs=np.zeros((500, 4)))).act
    assert acts.shape == (500, 2)
    assert (acts[:, 0] >= -5).all() and (acts[:, 0] <= -3).all()
    assert acts[:, 1].max() > 7.0  # not clipped to [-1, 1]
    one = policy.compute_action(np.zeros(4))
    assert space.contains(one) and one.dtype == np.float32
    assert np.array_equal(policy.map_action(acts), acts.numpy())


def test_actor_output_matches_a_discrete_actor() -> None:
    actor = RandomActor(gym.spaces.Discrete(4))
    probs, state = actor(np.zeros((6, 3)), state="h")
    assert state == "h" and torch.allclose(probs, torch.full((6, 4), 0.25))
    box_actor = RandomActor(gym.spaces.Box(-1.0, 1.0, (2,)))
    assert box_actor(torch.zeros(5, 3))[0].shape == (5, 2)
    assert list(actor.parameters()) == []


def test_state_passes_through_and_dict_observations_work() -> None:
    policy = RandomActionPolicy(gym.spaces.Discrete(2))
    obs = TensorDict({"a": torch.zeros(4, 2), "b": torch.ones(4)}, [4])
    out = policy(Batch(obs=obs), state=None)
    assert out.act.shape == (4,)


def test_log_prob_is_uniform() -> None:
    disc = RandomActionPolicy(gym.spaces.Discrete(4))
    lp = disc.log_prob_of(Batch(), torch.tensor([0, 3]))
    assert lp is not None and torch.allclose(lp, torch.full((2,), -np.log(4.0)))
    box = RandomActionPolicy(gym.spaces.Box(0.0, 2.0, (3,)))
    lp = box.log_prob_of(Batch(), torch.ones(5, 3))
    assert lp is not None and torch.allclose(lp, torch.full((5,), -3 * np.log(2.0)))


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.MultiBinary(2),
        gym.spaces.Discrete(3, start=1),
        gym.spaces.Box(-np.inf, np.inf, (2,)),
    ],
    ids=["multibinary", "discrete-start", "unbounded"],
)
def test_unsupported_spaces_are_refused(space: gym.Space) -> None:
    with pytest.raises(ValueError, match="action_space"):
        RandomActionPolicy(space)


def test_collects_as_a_baseline() -> None:
    envs = DummyVectorEnv([lambda: MoveToRightEnv(size=3)] * 2)
    policy = RandomActionPolicy(envs.action_space[0])
    collector = Collector(policy, envs, VectorReplayBuffer(100, 2))
    stats = collector.collect(n_step=20, reset_before_collect=True)
    assert stats.n_collected_steps == 20
    assert set(collector.buffer.act[: len(collector.buffer)].tolist()) == {0, 1}
