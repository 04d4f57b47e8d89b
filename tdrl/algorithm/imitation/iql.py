"""Implicit Q-Learning (Kostrikov, Nair & Levine 2021, arXiv:2110.06169), offline.

IQL never evaluates the critics at actions outside the dataset ``D``: a state value ``V``
is fitted by *expectile* regression to the target critics at the dataset's actions, so it
approximates the value of the best actions the data supports; the critics bootstrap from
``V``; the policy is extracted by advantage-weighted regression. Per gradient step on a
batch ``{(s, a, r, s')}`` of ``D`` (the paper's Algorithm 1, with the policy step of its
reference implementation folded into the same loop)::

    u      = min_j Q'_j(s, a) - V(s)
    L_V    = mean(|tau - 1(u < 0)| u^2)                           (expectile tau, e.g. 0.7)
    V     <- V - lr_V grad L_V
    y      = r + gamma (1 - term) V(s')                           (the V just updated)
    L_Q    = mean(sum_j (Q_j(s, a) - y)^2)
    Q_j   <- Q_j - lr_Q grad L_Q
    w      = min(exp(beta (min_j Q'_j(s, a) - V(s))), max_weight) (no gradient; 100)
    L_pi   = -mean(w log pi(a | s))
    pi    <- pi - lr_pi grad L_pi
    Q'_j  <- (1 - tau_soft) Q'_j + tau_soft Q_j

``tau = 0.5`` makes ``V`` the mean of ``Q`` under the data (SARSA-like); ``tau -> 1`` the
maximum over the dataset's actions. ``beta`` (the inverse temperature) trades behaviour
cloning (``beta = 0``) against greedy improvement.

On the off-policy actor-critic base: the twin critics, their soft-updated targets, the
critic loss and the optimizers are the base's; IQL adds the value network and its stage,
computes the critics' one-step target inside their stage (so that it sees the value step
before it, as in the paper), and replaces the actor's loss. Stages, in order:
``loss_value``, ``loss_qvalue``, ``loss_actor``; ``forward(td)`` returns all three at the
current parameters. The policy is a Gaussian
:class:`~tdrl.algorithm.policy_gradient.ActorPolicy` that acts with its mean when
evaluating (``deterministic_eval``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.actor_critic import OffPolicyActorCritic
from tdrl.algorithm.checks import require_instance, require_unit
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import call_model
from tdrl.algorithm.policy_gradient import ActorPolicy
from tdrl.data.batch import Batch

__all__ = ["IQL", "IQLPolicy", "expectile_loss"]

IQLPolicy = ActorPolicy
"""IQL's policy: ``pi(a | s) = N(loc(s), scale)`` (an :class:`ActorPolicy`)."""


def expectile_loss(u: torch.Tensor, expectile: float) -> torch.Tensor:
    """The asymmetric squared loss ``|tau - 1(u < 0)| u^2`` (elementwise).

    >>> expectile_loss(torch.tensor([2.0, -2.0]), 0.7).tolist()
    [2.799999952316284, 1.2000000476837158]
    """
    return torch.abs(expectile - (u < 0).to(u.dtype)) * u.pow(2)


class IQL(OffPolicyActorCritic):
    """Implicit Q-learning: expectile value regression, twin critics bootstrapping from
    ``V``, advantage-weighted policy extraction.

    :param policy: an :class:`~tdrl.algorithm.policy_gradient.ActorPolicy` over a Box
        action space (e.g. a Gaussian over raw ``[-1, 1]`` actions).
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: ``(obs, act) -> Q [B, 1]``.
    :param critic_optim: optimizer factory (or Adam lr) for both critics.
    :param value: ``obs -> V [B, 1]``.
    :param value_optim: optimizer factory (or Adam lr) for the value network.
    :param critic2: the second critic (default: a re-initialized copy of ``critic``).
    :param tau: soft update rate of the target critics.
    :param gamma: discount factor.
    :param expectile: the expectile ``tau`` of the value regression, in ``(0, 1)``.
    :param beta: the inverse temperature of the advantage weights, ``>= 0``.
    :param max_weight: the clip of ``exp(beta A)``, ``> 0`` (the paper's 100).

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net import GaussianActor, QCritic, VCritic
    >>> box = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> actor = GaussianActor(3, 1, (8,), state_dependent_std=False, bounded_loc=True)
    >>> alg = IQL(policy=IQLPolicy(actor=actor, action_space=box, deterministic_eval=True),
    ...           critic=QCritic(3, 1, (8,)), value=VCritic(3, (8,)))
    >>> td = make_batch({"obs": torch.zeros(4, 3), "act": torch.zeros(4, 1),
    ...                  "rew": torch.ones(4), "terminated": torch.zeros(4),
    ...                  "obs_next": torch.zeros(4, 3)}, 4)
    >>> sorted(k for k in alg(td).keys() if k.startswith("loss"))
    ['loss_actor', 'loss_qvalue', 'loss_value']
    """

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        policy_optim: OptimizerFactory | float = 3e-4,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 3e-4,
        value: nn.Module,
        value_optim: OptimizerFactory | float = 3e-4,
        critic2: nn.Module | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        expectile: float = 0.7,
        beta: float = 3.0,
        max_weight: float = 100.0,
    ) -> None:
        require_instance("policy", policy, ActorPolicy, ValueError)
        if policy.action_type != "continuous":
            raise ValueError(
                f"policy: expected a policy over a Box action space, got "
                f"{type(policy.action_space).__name__}"
            )
        if not 0.0 < expectile < 1.0:
            raise ValueError(f"expectile: expected a value in (0, 1), got {expectile}")
        if not beta >= 0.0:
            raise ValueError(f"beta: expected a value >= 0, got {beta}")
        if not max_weight > 0.0:
            raise ValueError(f"max_weight: expected a value > 0, got {max_weight}")
        require_unit(tau=tau, gamma=gamma)
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=self.twin_critics(critic, critic2),
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
        )
        self.policy: ActorPolicy = policy
        self.value = value
        self.value_optim = self._create_optimizer(value, value_optim)
        self.expectile = float(expectile)
        self.beta = float(beta)
        self.max_weight = float(max_weight)
        self._add_stage(self.value_losses, ("loss_value", self.value_optim))
        self._add_stage(self.q_losses, ("loss_qvalue", self.critic_optim))
        self._add_stage(self.actor_losses, ("loss_actor", self.policy_optim))

    # -- pieces -------------------------------------------------------------------------
    def v(self, obs: Any) -> torch.Tensor:
        """``V(s)`` as ``[B]``."""
        out, _ = call_model(self.value, obs)
        return out.reshape(-1)  # type: ignore[no-any-return]

    def target_q(self, obs: Any, act: torch.Tensor) -> torch.Tensor:
        """``min_j Q'_j(s, a)`` of the target critics, ``[B]`` (no gradient)."""
        with torch.no_grad():
            return torch.stack(self.q_values(obs, act, target=True)).min(0).values

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """The bootstrap ``V(s')`` (no gradient)."""
        with torch.no_grad():
            return self.v(obs_next)

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Nothing to add: the critics' target is computed in their stage."""
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """Nothing to add (see :meth:`preprocess`)."""
        return td

    # -- stages -------------------------------------------------------------------------
    def value_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_value = mean(|tau - 1(u < 0)| u^2)``, ``u = min_j Q'_j(s, a) - V(s)``."""
        obs = self.obs_of(td)
        q = self.target_q(obs, self.act_of(td))
        v = self.v(obs)
        return {"loss_value": expectile_loss(q.to(v.dtype) - v, self.expectile).mean(),
                "v": v.detach().mean()}  # fmt: skip

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """The base's ``loss_qvalue`` against ``y = r + gamma (1 - term) V(s')``."""
        obs_next, rew, term = self.transition_of(td)
        v_next = self.next_value(obs_next).to(rew.dtype)
        td.set("returns", rew + self.gamma * (1.0 - term) * v_next)
        return self.critic_losses(td)

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(min(exp(beta A), max_weight) log pi(a | s))`` with the
        advantage ``A = min_j Q'_j(s, a) - V(s)`` held fixed."""
        obs, act = self.obs_of(td), self.act_of(td)
        with torch.no_grad():
            adv = self.target_q(obs, act) - self.v(obs)
            weight = torch.exp(self.beta * adv).clamp(max=self.max_weight)
        dist, _, _ = self.policy.dist(obs)
        logp = dist.log_prob(act).reshape(-1)
        return {"loss_actor": -(weight.to(logp.dtype) * logp).mean(),
                "adv_weight": weight.mean()}  # fmt: skip
