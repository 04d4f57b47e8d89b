"""Soft Actor-Critic (arXiv:1801.01290, 1812.05905) for continuous actions.

The actor is a tanh-squashed Gaussian: ``u ~ N(mu(s), sigma(s))``, ``a = tanh(u)``,
``log pi(a|s) = log N(u) - sum log(1 - a^2 + eps)`` (the density of TorchRL's
``TanhNormal``, computed in closed form). Per gradient step::

    a' ~ pi(s'),  y = r + gamma^n (1 - term) (min_j Q'_j(s', a') - alpha log pi(a'|s'))
    L_Q     = mean(w (Q_1(s, a) - y)^2) + mean(w (Q_2(s, a) - y)^2)         (critic step)
    a~ ~ pi(s),  L_pi = mean(alpha log pi(a~|s) - min_j Q_j(s, a~))          (actor step)
    L_alpha = -mean(log_alpha (H_target + log pi(a~|s)))                      (auto alpha)
    Q'_j <- (1 - tau) Q'_j + tau Q_j                                          (soft update)

``y`` is :func:`tdrl.algorithm.returns.compute_nstep_return`'s n-step target.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn
from torch.distributions import Independent, Normal

from tdrl.algorithm.base import Algorithm, OptimizerFactory, Policy, make_batch
from tdrl.data.batch import Batch
from tdrl.utils.net import QCritic

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
        out = self.actor(obs)
        loc, scale = out[0] if isinstance(out[0], tuple) else out
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


class AutoAlpha(nn.Module):
    """Learned entropy temperature ``alpha = exp(log_alpha)``.

    :param target_entropy: the entropy target; ``"auto"`` means ``-dim(A)``.
    :param log_alpha: initial ``log(alpha)``.
    :param optim: optimizer factory (or Adam learning rate) for ``log_alpha``.

    >>> AutoAlpha(-1.0, log_alpha=0.0).value
    1.0
    """

    def __init__(
        self,
        target_entropy: float | str = "auto",
        log_alpha: float = 0.0,
        optim: OptimizerFactory | float = 3e-4,
    ) -> None:
        super().__init__()
        self.target_entropy = target_entropy
        self.log_alpha = nn.Parameter(torch.tensor(float(log_alpha)))
        self.optim_spec = optim

    @property
    def value(self) -> float:
        """The current alpha."""
        return float(self.log_alpha.detach().exp())


class SAC(Algorithm):
    """Soft Actor-Critic with twin critics, soft target updates and optional auto-alpha.

    :param policy: a :class:`SACPolicy`.
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: ``(obs, act) -> Q`` (e.g. :class:`tdrl.utils.net.QCritic`).
    :param critic_optim: optimizer factory (or Adam lr) for both critics.
    :param critic2: the second critic (default: a re-initialized copy of ``critic``).
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param alpha: a fixed entropy temperature, or an :class:`AutoAlpha`.
    :param n_step: n-step return horizon.
    """

    critic1: nn.Module
    critic1_old: nn.Module
    critic2_old: nn.Module
    critic1_params: TensorDictParams
    target_critic1_params: TensorDictParams
    critic2: nn.Module
    critic2_params: TensorDictParams
    target_critic2_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: SACPolicy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 1e-3,
        critic2: nn.Module | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | AutoAlpha = 0.2,
        n_step: int = 1,
    ) -> None:
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau: expected a value in [0, 1], got {tau}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma: expected a value in [0, 1], got {gamma}")
        super().__init__(policy)
        self.policy: SACPolicy = policy
        if critic2 is None:
            critic2 = copy.deepcopy(critic)
            for m in critic2.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset):
                    reset()
        self.critics = nn.ModuleList([critic, critic2])
        # target critics stay out of the submodules (no duplicate state, eval mode)
        self.__dict__["critic1_old"] = self._add_target(critic, "critic1")
        self.__dict__["critic2_old"] = self._add_target(critic2, "critic2")
        self.tau = tau
        self.gamma = gamma
        self.n_step = n_step
        self.policy_optim = self._create_optimizer(policy.actor, policy_optim)
        self.critic_optim = self._create_optimizer(self.critics, critic_optim)
        self._soft = self._soft_updater(tau)
        self.auto_alpha: AutoAlpha | None = None
        self._alpha = 0.0
        if isinstance(alpha, AutoAlpha):
            self.auto_alpha = alpha
            if alpha.target_entropy == "auto":
                alpha.target_entropy = -float(np.prod(policy.action_space.shape))  # type: ignore[arg-type]
            self.alpha_optim = self._create_optimizer([alpha.log_alpha], alpha.optim_spec)
        else:
            self._alpha = float(alpha)

    @property
    def alpha(self) -> float:
        """The current entropy temperature."""
        return self.auto_alpha.value if self.auto_alpha is not None else self._alpha

    # -- targets ------------------------------------------------------------------------
    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        obs_next = self._obs_next(buffer, indices)
        act, log_prob, _, _ = self.policy.sample(obs_next)
        q = torch.min(*self._twin_q(self.critic1_old, self.critic2_old, obs_next, act))
        return q.reshape(-1) - self.alpha * log_prob

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the n-step soft ``returns``."""
        return self._nstep_returns(batch, buffer, indices, self.gamma, self.n_step)

    # -- losses -------------------------------------------------------------------------
    @staticmethod
    def _twin_q(
        c1: nn.Module, c2: nn.Module, obs: Any, act: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both critics at ``(obs, act)``; two plain ``QCritic`` modules share one input."""
        if type(c1) is QCritic and type(c2) is QCritic:
            x = QCritic.features(obs, act)
            return c1.net(x), c2.net(x)
        return c1(obs, act), c2(obs, act)

    # The public ``*_loss`` methods are wrapped by TorchRL's ``LossModule`` metaclass
    # (exploration-type and recurrent-mode contexts, unused here); the update calls the
    # private implementations directly.
    def critic_loss(self, batch: TensorDictBase) -> torch.Tensor:
        """Sum of both critics' (importance-weighted) squared TD errors; sets ``td_error``."""
        return self._critic_loss(batch)

    def _critic_loss(self, batch: TensorDictBase) -> torch.Tensor:
        obs, act = batch["obs"], batch["act"]
        target = batch["returns"].reshape(-1)
        q1, q2 = self._twin_q(self.critics[0], self.critics[1], obs, act)
        td1 = q1.reshape(-1) - target
        td2 = q2.reshape(-1) - target
        w = batch["weight"].reshape(-1) if "weight" in batch else None
        sq = td1.pow(2) + td2.pow(2)
        loss = (sq * w).mean() if w is not None else sq.mean()
        batch["td_error"] = ((td1 + td2) / 2.0).detach()
        return loss

    def actor_loss(self, batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean(alpha log pi - min Q), log pi)`` for fresh actions at ``batch["obs"]``."""
        return self._actor_loss(batch)

    def _actor_loss(self, batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        obs = batch["obs"]
        act, log_prob, _, _ = self.policy.sample(obs)
        q = torch.min(*self._twin_q(self.critics[0], self.critics[1], obs, act)).reshape(-1)
        return (self.alpha * log_prob - q).mean(), log_prob

    def alpha_loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        """Temperature loss ``-mean(log_alpha (target_entropy - entropy))``."""
        return self._alpha_loss(log_prob)

    def _alpha_loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        assert self.auto_alpha is not None
        deficit = float(self.auto_alpha.target_entropy) + log_prob.detach()  # target - (-log pi)
        return -(self.auto_alpha.log_alpha * deficit).mean()

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """All SAC losses at the current parameters (TorchRL style, one backward)."""
        loss_q = self.critic_loss(batch)
        loss_pi, log_prob = self.actor_loss(batch)
        out = {
            "loss_qvalue": loss_q,
            "loss_actor": loss_pi,
            "alpha": torch.tensor(self.alpha),
            "entropy": -log_prob.detach().mean(),
        }
        if self.auto_alpha is not None:
            out["loss_alpha"] = self.alpha_loss(log_prob)
        return TensorDict(out, [])

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> dict[str, float]:
        loss_q = self._critic_loss(batch)
        self.critic_optim.step(loss_q)
        loss_pi, log_prob = self._actor_loss(batch)
        self.policy_optim.step(loss_pi)
        stats = [loss_q.detach(), loss_pi.detach(), -log_prob.detach().mean()]
        if self.auto_alpha is not None:
            loss_alpha = self._alpha_loss(log_prob)
            self.alpha_optim.step(loss_alpha)
            stats.append(loss_alpha.detach())
        self._soft.step()
        vals = torch.stack(stats).tolist()
        out = {
            "critic_loss": vals[0],
            "actor_loss": vals[1],
            "entropy": vals[2],
            "alpha": self.alpha,
        }
        if self.auto_alpha is not None:
            out["alpha_loss"] = vals[3]
        return out
