"""Soft Actor-Critic (arXiv:1801.01290, 1812.05905) for continuous actions.

The actor is a tanh-squashed Gaussian: ``u ~ N(mu(s), sigma(s))``, ``a = tanh(u)``,
``log pi(a|s) = log N(u) - sum log(1 - a^2 + eps)`` (the density of TorchRL's
``TanhNormal``, computed in closed form). On the off-policy actor-critic base (twin
critics, their n-step critic loss and soft targets), SAC adds::

    a' ~ pi(s'),  y = r + gamma^n (1 - term) (min_j Q'_j(s', a') - alpha log pi(a'|s'))
    L_Q     = mean(w sum_j (Q_j(s, a) - y)^2)                                (critic step)
    a~ ~ pi(s),  L_pi = mean(alpha log pi(a~|s) - min_j Q_j(s, a~))          (actor step)
    L_alpha = -mean(log_alpha (H_target + log pi(a~|s)))                      (auto alpha)
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn
from torch.distributions import Independent, Normal
from typing_extensions import Unpack

from tdrl.algorithm.actor_critic import AutoAlpha, SoftActorCritic, SoftActorCriticParams
from tdrl.algorithm.policy import Policy, call_model, make_batch
from tdrl.data.batch import Batch

__all__ = ["SAC", "AutoAlpha", "SACPolicy"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_EPS = float(np.finfo(np.float32).eps)


class SACPolicy(Policy):
    """Tanh-squashed Gaussian policy; actions lie in ``[-1, 1]`` and are scaled to the Box.

    :param actor: ``obs -> (loc, scale)`` (e.g. :class:`tdrl.utils.net.GaussianActor`).
    :param action_space: a ``Box`` space.
    :param deterministic_eval: act with ``tanh(loc)`` outside training steps.
    :param action_scaling: scale ``[-1, 1]`` to the Box range in :meth:`map_action`.

    The result holds ``act`` (squashed) and ``log_prob`` (``[B]``); ``result.dist`` is the
    pre-squash Normal.

    >>> from tdrl.utils.net import GaussianActor
    >>> p = SACPolicy(actor=GaussianActor(3, 1, (8,)), action_space=gym.spaces.Box(-2, 2, (1,)))
    >>> out = p(make_batch({"obs": torch.zeros(4, 3)}, 4))
    >>> out["act"].shape, out["log_prob"].shape
    (torch.Size([4, 1]), torch.Size([4]))
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        deterministic_eval: bool = True,
        action_scaling: bool = True,
        observation_space: gym.Space | None = None,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"action_space: expected Box, got {type(action_space).__name__}")
        super().__init__(
            action_space,
            observation_space,
            action_scaling=action_scaling,
            action_bound_method=None,
            deterministic_eval=deterministic_eval,
        )
        self.actor = actor

    def sample(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reparameterized ``(act, log_prob, loc, scale)``; ``tanh(loc)`` when deterministic."""
        out, _ = call_model(self.actor, obs)
        loc, scale = out
        if self.deterministic:
            noise = torch.zeros_like(loc)
        else:
            noise = torch.randn_like(loc)
        u = loc + scale * noise
        act = torch.tanh(u)
        log_prob = (-0.5 * noise.pow(2) - scale.log() - _LOG_SQRT_2PI).sum(-1)
        log_prob = log_prob - torch.log(1.0 - act.pow(2) + _EPS).sum(-1)
        return act, log_prob, loc, scale

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """Squashed action and its log-probability."""
        act, log_prob, loc, scale = self.sample(batch["obs"])
        out = make_batch({"act": act, "log_prob": log_prob, "state": state}, act.shape[0])
        dist = Independent(Normal(loc, scale, validate_args=False), 1, validate_args=False)
        object.__setattr__(out, "dist", dist)
        return out


class SAC(SoftActorCritic):
    """Soft Actor-Critic with twin critics, soft target updates and optional auto-alpha.

    :param policy: a :class:`SACPolicy`.

    The other parameters are :class:`~tdrl.algorithm.actor_critic.SoftActorCritic`'s
    (``critic``: ``(obs, act) -> Q``, e.g. :class:`tdrl.utils.net.QCritic`; ``"auto"``
    target entropy: ``-dim(A)``).
    """

    def __init__(self, *, policy: SACPolicy, **kwargs: Unpack[SoftActorCriticParams]) -> None:
        super().__init__(policy=policy, **kwargs)
        self.policy: SACPolicy = policy

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``min_j Q'_j(s', a') - alpha log pi(a'|s')`` with ``a' ~ pi(s')``."""
        act, log_prob, _, _ = self.policy.sample(obs_next)
        q = torch.min(*self.q_values(obs_next, act, target=True))
        return q - self.alpha_now() * log_prob

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = mean(alpha log pi - min_j Q_j)`` for fresh actions at ``obs``,
        and with auto-alpha ``loss_alpha = -mean(log_alpha (H_target + log pi))``."""
        obs = self.obs_of(td)
        act, log_prob, _, _ = self.policy.sample(obs)
        q = torch.min(*self.q_values(obs, act, detach=True))
        alpha = self.alpha_now()
        loss = (alpha * log_prob - q).mean()
        return {"loss_actor": loss, **self.temperature_terms(-log_prob, alpha)}
