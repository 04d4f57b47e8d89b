"""``critic2_optim=`` (Tianshou 2.0's optimizer of the second critic) on SAC, TD3, discrete
SAC and TD3+BC: the second critic learns with its own settings, and with the same settings
the update is the one of a single shared optimizer."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from tdrl.algorithm import AdamOptimizerFactory, TorchOptimizerFactory
from tdrl.algorithm.actor_critic import ContinuousDeterministicPolicy
from tdrl.algorithm.compile import synthetic_buffer
from tdrl.algorithm.modelfree.sac import SAC, SACPolicy
from tdrl.algorithm.modelfree.td3 import TD3
from tdrl.utils.net import DeterministicActor, GaussianActor, QCritic

BOX = gym.spaces.Box(-1.0, 1.0, (2,))


def _sac(**kwargs: object) -> SAC:
    torch.manual_seed(0)
    policy = SACPolicy(actor=GaussianActor(3, 2, (16,)), action_space=BOX)
    return SAC(policy=policy, critic=QCritic(3, 2, (16,)), **kwargs)  # type: ignore[arg-type]


def _td3(**kwargs: object) -> TD3:
    torch.manual_seed(0)
    policy = ContinuousDeterministicPolicy(actor=DeterministicActor(3, 2, (16,)), action_space=BOX)
    return TD3(policy=policy, critic=QCritic(3, 2, (16,)), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [_sac, _td3])
def test_the_second_critic_gets_its_own_settings(make: object) -> None:
    alg = make(critic_optim=1e-3, critic2_optim=AdamOptimizerFactory(lr=0.0))  # type: ignore[operator]
    groups = alg.critic_optim.optim.param_groups
    assert [g["lr"] for g in groups] == [1e-3, 0.0]
    before = [p.detach().clone() for p in alg.critics[1].parameters()]
    first = [p.detach().clone() for p in alg.critics[0].parameters()]
    buf = synthetic_buffer(gym.spaces.Box(-1, 1, (3,)), BOX, 4, 32, seed=0)
    for _ in range(3):
        alg.update(buf, 16)
    for p, q in zip(alg.critics[1].parameters(), before):
        torch.testing.assert_close(p, q)  # lr 0: frozen in place
    assert any(not torch.equal(p, q) for p, q in zip(alg.critics[0].parameters(), first))


def test_same_settings_give_the_shared_optimizers_update() -> None:
    bufs = [synthetic_buffer(gym.spaces.Box(-1, 1, (3,)), BOX, 4, 32, seed=0) for _ in "ab"]
    a, b = _sac(critic_optim=1e-3), _sac(critic_optim=1e-3, critic2_optim=1e-3)
    for _ in range(3):
        torch.manual_seed(1)
        a.update(bufs[0], 16)
        torch.manual_seed(1)
        b.update(bufs[1], 16)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)


def test_a_different_optimizer_class_is_refused() -> None:
    with pytest.raises(ValueError, match="critic2_optim: expected the optimizer class"):
        _sac(critic_optim=1e-3, critic2_optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1))
