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
:class:`~tdrl.algorithm.actor_critic.DeterministicActorCritic` (imported here too) holds
all of this for any number of critics (the bootstrap takes the minimum over the target
critics, the actor loss uses the first critic), so TD3 (:mod:`tdrl.algorithm.modelfree.td3`)
only adds target smoothing and delayed actor steps.
"""

from __future__ import annotations

from torch import nn

from tdrl.algorithm.actor_critic import ContinuousDeterministicPolicy, DeterministicActorCritic
from tdrl.algorithm.optim import OptimizerFactory

__all__ = ["DDPG", "ContinuousDeterministicPolicy", "DeterministicActorCritic"]


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
