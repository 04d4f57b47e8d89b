"""A model with a frozen parameter (``requires_grad=False``: a pretrained encoder, the
noise of Tianshou's ``NoisyLinear``) trains: the frozen part stays as it is and the rest
learns. ``backward(inputs=params)`` refused such a tensor before."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.algorithm.compile import synthetic_buffer
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy


def _dqn() -> tuple[DQN, torch.nn.Module]:
    torch.manual_seed(0)
    encoder = torch.nn.Linear(4, 16)
    encoder.requires_grad_(False)  # frozen
    net = torch.nn.Sequential(encoder, torch.nn.ReLU(), torch.nn.Linear(16, 2))
    policy = DQNPolicy(model=net, action_space=gym.spaces.Discrete(2))
    return DQN(policy=policy, optim=1e-2, gamma=0.9, n_step=1, target_update_freq=0), encoder


@pytest.mark.parametrize("compiled", [False, True])
def test_a_dqn_with_a_frozen_layer_trains(compiled: bool) -> None:
    alg, encoder = _dqn()
    if compiled:
        alg.compile(backend="aot_eager")
    frozen = encoder.weight.detach().clone()
    head = alg.policy.model[2].weight.detach().clone()
    buf = synthetic_buffer(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), 4, 32, seed=0)
    for _ in range(5):
        stats = alg.update(buf, 16)
    assert np.isfinite(stats["loss"])
    torch.testing.assert_close(encoder.weight, frozen)  # untouched
    assert not torch.equal(alg.policy.model[2].weight, head)  # learned


def test_a_fully_frozen_model_updates_nothing_and_does_not_fail() -> None:
    alg, _ = _dqn()
    alg.policy.model.requires_grad_(False)
    before = [p.detach().clone() for p in alg.policy.model.parameters()]
    buf = synthetic_buffer(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), 4, 32, seed=0)
    alg.update(buf, 16)
    for p, q in zip(alg.policy.model.parameters(), before):
        torch.testing.assert_close(p, q)
