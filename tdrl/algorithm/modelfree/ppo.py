"""Proximal Policy Optimization with the clipped objective (arXiv:1707.06347).

The rollout handling (GAE, ``logp_old``, return scaling, minibatch epochs, advantage
recompute) is :class:`~tdrl.algorithm.policy_gradient.OnPolicyAlgorithm`'s. Per minibatch
PPO adds only its loss, one optimizer step on actor + critic::

    A'   = (A - mean A) / (std A + eps)                            (advantage normalization)
    rho  = exp(log pi(a | s) - logp_old)                           (per action dim for a
                                                                    per-dimension distribution)
    L_pi = -mean(min(rho A', clip(rho, 1 - eps, 1 + eps) A'))      (optional dual clip)
    L_v  = mean((R - V(s))^2)                                      (optionally value-clipped)
    L    = L_pi + vf_coef L_v - ent_coef H[pi]                     (gradient norm clipped)
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy_gradient import (
    ActorPolicy,
    OnPolicyAlgorithm,
    OnPolicyParams,
    ProbabilisticActorPolicy,
    default_dist_fn,
)

__all__ = ["PPO", "ActorPolicy", "PPOParams", "ProbabilisticActorPolicy", "default_dist_fn"]


class PPOParams(OnPolicyParams, total=False):
    """:class:`PPO`'s keywords besides ``policy``, ``critic`` and ``max_batchsize``, for a
    subclass that passes them through unchanged (``**kwargs: Unpack[PPOParams]``)."""

    optim: OptimizerFactory | float
    eps_clip: float
    dual_clip: float | None
    value_clip: bool
    advantage_normalization: bool
    recompute_advantage: bool
    vf_coef: float
    ent_coef: float
    max_grad_norm: float | None


class PPO(OnPolicyAlgorithm):
    """PPO-clip with GAE, value clipping, advantage normalization and entropy bonus.

    :param policy: an :class:`ActorPolicy`.
    :param critic: ``obs -> V(s)`` (``[B]`` or ``[B, 1]``).
    :param optim: optimizer factory (or Adam learning rate) for actor + critic together.
    :param eps_clip: ratio clip range epsilon.
    :param dual_clip: dual-clip constant ``c > 1`` (arXiv:1912.09729), ``None``: off.
    :param value_clip: clip the value update to ``eps_clip`` around the old value.
    :param advantage_normalization: normalize advantages per minibatch.
    :param vf_coef: weight of the value loss.
    :param ent_coef: weight of the entropy bonus.
    :param max_grad_norm: clip the gradient norm (``None``: off).

    ``gamma``, ``gae_lambda``, ``max_batchsize``, ``return_scaling`` and
    ``recompute_advantage`` are :class:`OnPolicyAlgorithm`'s.
    """

    critic: nn.Module

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory | float = 3e-4,
        eps_clip: float = 0.2,
        dual_clip: float | None = None,
        value_clip: bool = False,
        advantage_normalization: bool = True,
        recompute_advantage: bool = False,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = None,
        max_batchsize: int = 1024,
        **kwargs: Unpack[OnPolicyParams],
    ) -> None:
        if dual_clip is not None and dual_clip <= 1.0:
            raise ValueError(f"dual_clip: expected a value > 1 or None, got {dual_clip}")
        super().__init__(
            policy=policy,
            critic=critic,
            max_batchsize=max_batchsize,
            recompute_advantage=recompute_advantage,
            **kwargs,
        )
        self.eps_clip = eps_clip
        self.dual_clip = dual_clip
        self.value_clip = value_clip
        self.advantage_normalization = advantage_normalization
        self._add_joint_stage(self.ppo_losses, optim, max_grad_norm, vf_coef, ent_coef)

    def ppo_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """PPO's terms on a minibatch with ``obs, act, adv, returns, v_s, logp_old``.

        ``loss_objective + loss_critic + loss_entropy`` is the total loss (coefficients
        applied); ``vf_loss``, ``entropy``, ``clip_fraction`` and ``approx_kl`` are logged.
        """
        obs = self.obs_of(td)
        adv, returns, v_s = td["adv"], td["returns"], td["v_s"]
        dist = self.policy.dist(obs)[0]
        if self.advantage_normalization:
            adv = (adv - adv.mean()) / (adv.std() + self._eps)
        logp = self.log_prob(dist, self.act_of(td))
        n = logp.shape[0]
        log_ratio = logp.reshape(n, -1) - td["logp_old"].reshape(n, -1)  # [B, 1] or [B, D]
        ratio = log_ratio.exp()
        adv_ = adv.reshape(-1, 1)
        surr1 = ratio * adv_
        surr2 = ratio.clamp(1.0 - self.eps_clip, 1.0 + self.eps_clip) * adv_
        clipped = torch.min(surr1, surr2)
        if self.dual_clip is not None:
            clipped = torch.where(adv_ < 0, torch.max(clipped, self.dual_clip * adv_), clipped)
        value = self.critic(obs).reshape(-1)
        if self.value_clip:
            v_clip = v_s + (value - v_s).clamp(-self.eps_clip, self.eps_clip)
            vf_loss = torch.max((returns - value).pow(2), (returns - v_clip).pow(2)).mean()
        else:
            vf_loss = (returns - value).pow(2).mean()
        entropy = dist.entropy().mean()
        with torch.no_grad():
            clip_frac = ((ratio - 1.0).abs() > self.eps_clip).float().mean()
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
        terms = self.joint_terms(-clipped.mean(), vf_loss, entropy)
        terms["clip_fraction"] = clip_frac
        terms["approx_kl"] = approx_kl
        return terms
