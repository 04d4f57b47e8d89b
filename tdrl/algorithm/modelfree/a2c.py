"""Advantage actor-critic, synchronous (A2C; the synchronous variant of arXiv:1602.01783).

The rollout handling (chunked no-grad value passes, GAE returns and advantages through the
buffer's episode API, return scaling, shuffled minibatch epochs with Tianshou's merge-last
rule) is :class:`~tdrl.algorithm.policy_gradient.OnPolicyAlgorithm`'s. Per update::

    V, V'  = V(s_t), V(s_{t+1})                      (no grad, before any step)
    A_t    = sum_k (gamma lambda)^k delta_{t+k},    delta_t = r_t + gamma V'_t - V_t
    R_t    = A_t + V_t                               (V' masked where terminated; chains cut
                                                      at done and at unfinished episodes)
    repeat epochs, for each minibatch B:
        L_pi = -mean_{t in B} log pi(a_t | s_t) A_t  (per action dimension for a
                                                      per-dimension distribution)
        L_v  = mean_{t in B} (R_t - V(s_t))^2
        L    = L_pi + vf_coef L_v - ent_coef H[pi]
        one optimizer step on actor + critic (gradient norm clipped)

No advantage normalization, no ratio, no old log-probabilities: each minibatch step is
the plain policy gradient at the current parameters.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
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

__all__ = ["A2C", "ActorPolicy", "ProbabilisticActorPolicy", "default_dist_fn"]


class A2C(OnPolicyAlgorithm):
    """Synchronous advantage actor-critic with GAE and an entropy bonus.

    :param policy: an :class:`ActorPolicy`.
    :param critic: ``obs -> V(s)`` (``[B]`` or ``[B, 1]``); it may share layers with the
        actor (the optimizer holds shared parameters once).
    :param optim: optimizer factory (or Adam learning rate) for actor + critic together.
    :param vf_coef: weight of the value loss (``>= 0``).
    :param ent_coef: weight of the entropy bonus (``>= 0``).
    :param max_grad_norm: clip the gradient norm (``None``: off).

    ``gamma``, ``gae_lambda``, ``max_batchsize`` and ``return_scaling`` are
    :class:`OnPolicyAlgorithm`'s.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DiscreteActor, VCritic
    >>> policy = ActorPolicy(actor=DiscreteActor(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    >>> alg = A2C(policy=policy, critic=VCritic(4, (8,)), vf_coef=0.5, ent_coef=0.01)
    >>> sorted(k for k, _ in alg.named_children())
    ['critic', 'policy', 'ret_rms']
    """

    critic: nn.Module

    uses_logp_old = False  # the objective is -log pi(a|s) A: no ratio to an old policy

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory | float = 7e-4,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = None,
        max_batchsize: int = 1024,
        **kwargs: Unpack[OnPolicyParams],
    ) -> None:
        for name, value in (("vf_coef", vf_coef), ("ent_coef", ent_coef)):
            if not value >= 0:
                raise ValueError(f"{name}: expected a value >= 0, got {value}")
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"max_grad_norm: expected a value > 0 or None, got {max_grad_norm}")
        if critic is None:
            raise ValueError("critic: expected a module obs -> V(s), got None")
        super().__init__(policy=policy, critic=critic, max_batchsize=max_batchsize, **kwargs)
        self._add_joint_stage(self.a2c_losses, optim, max_grad_norm, vf_coef, ent_coef)

    def a2c_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """A2C's terms on a minibatch with ``obs, act, adv, returns``.

        ``loss_objective + loss_critic + loss_entropy`` is the total loss (coefficients
        applied); the unweighted ``vf_loss`` and ``entropy`` are logged.
        """
        obs = self.obs_of(td)
        dist = self.policy.dist(obs)[0]
        logp = self.log_prob(dist, self.act_of(td))
        n = logp.shape[0]
        adv = td["adv"].reshape(n, 1).to(logp.dtype)
        actor_loss = -(logp.reshape(n, -1) * adv).mean()
        value = self.critic(obs).reshape(-1)
        vf_loss = F.mse_loss(td["returns"].reshape(-1).to(value.dtype), value)
        return self.joint_terms(actor_loss, vf_loss, dist.entropy().mean())
