"""Deep Deterministic Policy Gradient (arXiv:1509.02971) for continuous actions.

A deterministic actor ``pi(s)`` in ``[-1, 1]`` explores with additive action noise
(Gaussian or Ornstein-Uhlenbeck, :mod:`tdrl.algorithm.exploration`; see
:class:`~tdrl.algorithm.actor_critic.ContinuousDeterministicPolicy`). On the off-policy
actor-critic base (a one-critic ensemble, its n-step critic loss, soft targets), DDPG adds a
target actor ``pi'`` and, per gradient step::

    y    = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - term) Q'(s_{t+n}, pi'(s_{t+n}))
    L_Q  = mean(w (Q(s, a) - y)^2)                       (critic step; w: PER weight)
    L_pi = -mean(Q(s, pi(s)))                            (actor step, critic weights fixed)
    Q'  <- (1 - tau) Q'  + tau Q                         (after both steps)
    pi' <- (1 - tau) pi' + tau pi

The actor step sees the critic its critic step just moved, as in Tianshou.
:class:`DeterministicActorCritic` holds all of this for any number of critics (the bootstrap
takes the minimum over the target critics, the actor loss uses the first critic), so TD3
(:mod:`tdrl.algorithm.modelfree.td3`) only adds target smoothing and delayed actor steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn

from tdrl.algorithm.actor_critic import ContinuousDeterministicPolicy, OffPolicyActorCritic
from tdrl.algorithm.base import OptimizerFactory, call_model

__all__ = ["DDPG", "ContinuousDeterministicPolicy", "DeterministicActorCritic"]


class DeterministicActorCritic(OffPolicyActorCritic):
    """Base of DDPG and TD3: a deterministic actor with a soft-updated target copy.

    :param policy: a :class:`~tdrl.algorithm.actor_critic.ContinuousDeterministicPolicy`.
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critics: the Q critics ``(obs, act) -> Q [B, 1]``.
    :param critic_optim: optimizer factory (or Adam lr) for all critics together.
    :param tau: soft target update rate (critics and actor).
    :param gamma: discount factor.
    :param n_step: n-step return horizon.
    :param actor_every: the actor stage and the soft target update run on every
        ``actor_every``-th gradient step (the first included; TD3's delayed actor).

    Stages: :meth:`critic_losses` (``loss_qvalue``, the base's) then :meth:`actor_losses`
    (``loss_actor``). The bootstrap is ``min_j Q'_j(s', target_action(s'))``.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DeterministicActor, QCritic
    >>> policy = ContinuousDeterministicPolicy(
    ...     actor=DeterministicActor(3, 1, (8,)), action_space=gym.spaces.Box(-2.0, 2.0, (1,)))
    >>> alg = DeterministicActorCritic(policy=policy, policy_optim=1e-3,
    ...                                critics=[QCritic(3, 1, (8,))], critic_optim=1e-3)
    >>> alg.next_value(torch.zeros(4, 3)).shape
    torch.Size([4])
    """

    actor_old: nn.Module
    actor: nn.Module
    actor_params: TensorDictParams
    target_actor_params: TensorDictParams
    critic1: nn.Module
    critic1_params: TensorDictParams
    target_critic1_params: TensorDictParams
    critic2: nn.Module
    critic2_params: TensorDictParams
    target_critic2_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory | float,
        critics: Sequence[nn.Module],
        critic_optim: OptimizerFactory | float,
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step: int = 1,
        actor_every: int = 1,
    ) -> None:
        if not isinstance(policy, ContinuousDeterministicPolicy):
            raise ValueError(
                f"policy: expected a ContinuousDeterministicPolicy, got {type(policy).__name__}"
            )
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=critics,
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
            actor_target=True,
        )
        self.policy: ContinuousDeterministicPolicy = policy
        self._add_stage(self.critic_losses, ("loss_qvalue", self.critic_optim))
        # the actor (and, with it, the soft target update) every actor_every-th step
        self._add_stage(
            self.actor_losses,
            ("loss_actor", self.policy_optim),
            every=actor_every,
            gates_targets=actor_every > 1,
        )

    def target_action(self, obs_next: Any) -> torch.Tensor:
        """The action the bootstrap evaluates: the target actor's ``pi'(s')``."""
        act, _ = call_model(self.actor_old, obs_next)
        return act  # type: ignore[no-any-return]

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``min_j Q'_j(s', a')`` with ``a' = target_action(s')`` (one critic: ``Q'``)."""
        qs = self.q_values(obs_next, self.target_action(obs_next), target=True)
        return qs[0] if len(qs) == 1 else torch.stack(qs).min(0).values

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(Q_1(s, pi(s)))``, through the first critic with its weights
        held fixed (the gradient reaches the actor only)."""
        obs = self.obs_of(td)
        act, _ = call_model(self.policy.actor, obs)
        q = self.q_values(obs, act, detach=True)[0]
        return {"loss_actor": -q.mean()}


class DDPG(DeterministicActorCritic):
    """Deep Deterministic Policy Gradient: one critic, soft targets for critic and actor.

    :param policy: a :class:`~tdrl.algorithm.actor_critic.ContinuousDeterministicPolicy`
        (its ``exploration_noise`` explores: Gaussian or Ornstein-Uhlenbeck).
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: ``(obs, act) -> Q [B, 1]`` (e.g. :class:`tdrl.utils.net.QCritic`).
    :param critic_optim: optimizer factory (or Adam lr) for the critic.
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param n_step: n-step return horizon (tdrl's buffer path; a TorchRL batch gets
        one-step targets).

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.exploration import GaussianNoise
    >>> from tdrl.utils.net import DeterministicActor, QCritic
    >>> policy = ContinuousDeterministicPolicy(
    ...     actor=DeterministicActor(3, 1, (16,)), action_space=gym.spaces.Box(-2.0, 2.0, (1,)),
    ...     exploration_noise=GaussianNoise(sigma=0.1))
    >>> alg = DDPG(policy=policy, critic=QCritic(3, 1, (16,)), n_step=3)
    >>> sorted(alg._targets), len(alg.critics)
    (['actor', 'critic1'], 1)
    """

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 1e-3,
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step: int = 1,
    ) -> None:
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=[critic],
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
        )

    @property
    def critic(self) -> nn.Module:
        """The critic ``Q``."""
        return self.critics[0]

    @property
    def critic_old(self) -> nn.Module:
        """The target critic ``Q'``."""
        return self.critics_old[0]  # type: ignore[no-any-return]
