"""Twin Delayed DDPG (TD3, arXiv:1802.09477) for continuous actions.

DDPG (:mod:`tdrl.algorithm.modelfree.ddpg`) with three changes: twin critics whose
minimum is bootstrapped, target policy smoothing, and delayed actor updates. Per gradient
step ``i = 0, 1, 2, ...``::

    eps  = clip(policy_noise * N(0, I), -noise_clip, noise_clip)    (noise_clip = 0: no clip)
    a'   = pi'(s_{t+n}) + eps
    y    = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - term) min_j Q'_j(s_{t+n}, a')
    L_Q  = mean(w sum_j (Q_j(s, a) - y)^2)                          (critic step, every i)
    if i % update_actor_freq == 0:                                  (i = 0 included)
        L_pi = -mean(Q_1(s, pi(s)))                                 (actor step)
        Q'_j <- (1 - tau) Q'_j + tau Q_j,  pi' <- (1 - tau) pi' + tau pi

As in the paper and in Tianshou, the targets move only together with the actor, and the
smoothed target action ``a'`` is not clipped to the action range (Tianshou's choice: the
critics are trained on stored actions that carry unclipped exploration noise as well).

The delay lives in the update path only: the actor stage is registered with
``every=update_actor_freq`` and gates the soft update, so the critic stage runs alone off
turn (logging the last actor loss, as Tianshou does). ``forward(td)``, what TorchRL calls, returns
``loss_qvalue`` and ``loss_actor`` at the current parameters every time; a plain TorchRL
loop delays by stepping its actor optimizer and ``SoftUpdate`` every k-th iteration.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from typing_extensions import Required, TypedDict

from tdrl.algorithm.actor_critic import ContinuousDeterministicPolicy, DeterministicActorCritic
from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.optim import OptimizerFactory

__all__ = ["TD3", "ContinuousDeterministicPolicy", "TD3Params"]


class TD3Params(TypedDict, total=False):
    """:class:`TD3`'s keywords besides ``policy``, for a subclass that passes them through
    unchanged (``**kwargs: Unpack[TD3Params]``); see it for their meaning and defaults."""

    policy_optim: OptimizerFactory | float
    critic: Required[nn.Module]
    critic_optim: OptimizerFactory | float
    critic2: nn.Module | None
    critic2_optim: OptimizerFactory | float | None
    tau: float
    gamma: float
    policy_noise: float
    noise_clip: float
    update_actor_freq: int
    n_step: int


class TD3(DeterministicActorCritic):
    """TD3: twin critics, target policy smoothing and delayed actor (and target) updates.

    :param policy: a :class:`~tdrl.algorithm.actor_critic.ContinuousDeterministicPolicy`.
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: ``(obs, act) -> Q [B, 1]`` (e.g. :class:`tdrl.utils.net.QCritic`).
    :param critic_optim: optimizer factory (or Adam lr) for both critics.
    :param critic2: the second critic (default: a re-initialized copy of ``critic``).
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param policy_noise: standard deviation of the target smoothing noise (raw action units,
        ``[-1, 1]``), ``>= 0``.
    :param noise_clip: clip the smoothing noise to ``[-noise_clip, noise_clip]``; ``0``: no
        clipping (Tianshou's convention), ``>= 0``.
    :param update_actor_freq: one actor step (and soft target update) every this many critic
        steps, ``>= 1``.
    :param n_step: n-step return horizon.
    :param critic2_optim: the second critic's optimizer settings (Tianshou 2.0's; default:
        ``critic_optim``'s).

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DeterministicActor, QCritic
    >>> policy = ContinuousDeterministicPolicy(
    ...     actor=DeterministicActor(3, 1, (16,)), action_space=gym.spaces.Box(-2.0, 2.0, (1,)))
    >>> alg = TD3(policy=policy, critic=QCritic(3, 1, (16,)), update_actor_freq=2)
    >>> len(alg.critics), sorted(alg._targets)
    (2, ['actor', 'critic1', 'critic2'])
    """

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 1e-3,
        critic2: nn.Module | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        policy_noise: float = 0.2,
        noise_clip: float = 0.5,
        update_actor_freq: int = 2,
        n_step: int = 1,
        critic2_optim: OptimizerFactory | float | None = None,
    ) -> None:
        for name, value in (("policy_noise", policy_noise), ("noise_clip", noise_clip)):
            if not value >= 0.0:
                raise ValueError(f"{name}: expected a value >= 0, got {value}")
        require_at_least(1, update_actor_freq=update_actor_freq)
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=self.twin_critics(critic, critic2),
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
            actor_every=update_actor_freq,
            critic2_optim=critic2_optim,
        )
        self.policy_noise = float(policy_noise)
        self.noise_clip = float(noise_clip)
        self.update_actor_freq = int(update_actor_freq)

    def target_action(self, obs_next: Any) -> torch.Tensor:
        """Target policy smoothing: ``pi'(s') + clip(policy_noise * N(0, I), -c, c)``.

        The noise comes from torch's global generator (``torch.randn`` of the action's
        shape, as Tianshou draws it).
        """
        act = super().target_action(obs_next)
        noise = torch.randn(act.shape, dtype=act.dtype, device=act.device) * self.policy_noise
        if self.noise_clip > 0.0:
            noise = noise.clamp(-self.noise_clip, self.noise_clip)
        return act + noise
