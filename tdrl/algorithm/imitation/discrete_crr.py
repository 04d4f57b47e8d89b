"""Discrete critic-regularized regression, CRR (arXiv:2006.15134), with a CQL term.

Behaviour cloning that keeps only the good actions: the actor imitates the data's actions,
each weighted by how much better the critic finds it than the actor's own average,
``f(A(s, a))``. The critic ``Q(s) -> [B, |A|]`` learns a one-step TD target under the
(target) actor's policy, with the CQL(H) regularizer of Tianshou's DiscreteCRR. A gradient
step, one optimizer for actor and critic (they may share layers)::

    y        = r + gamma (1 - term) sum_a' pi'(a'|s') Q'(s', a')      (target actor pi', critic Q')
    L_Q      = mean(w * (Q(s, a) - y)^2) / 2                          (w: PER weight, else 1)
    A(s, a)  = Q(s, a) - sum_b pi(b|s) Q(s, b)                        (no gradient: a weight)
    f(A)     = 1{A > 0}                  ("binary")
             = min(exp(A / beta), ratio_upper_bound)  ("exp")
             = 1                          ("all": plain behaviour cloning)
    L_pi     = -mean(f(A(s, a)) log pi(a|s))
    L_CQL    = min_q_weight * mean(logsumexp_b Q(s, b) - Q(s, a))
    pi' <- pi, Q' <- Q every target_update_freq steps (first before step 0; 0: no targets,
    the online networks give y)

The target is computed inside the update, after a due target sync (as Tianshou does); a
TorchRL batch gets the same one-step target from :meth:`Algorithm.one_step_returns`.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn
from torch.distributions import Categorical

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_at_least, require_unit
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import call_model
from tdrl.algorithm.policy_gradient import ActorPolicy

__all__ = ["DiscreteCRR", "DiscreteCRRPolicy"]

ImprovementMode = Literal["exp", "binary", "all"]


class DiscreteCRRPolicy(ActorPolicy):
    """Categorical policy ``pi(.|s) = softmax(actor(s))`` (Tianshou's DiscreteActorPolicy).

    :param actor: ``obs -> logits [B, |A|]``.
    :param action_space: a ``Discrete`` space.
    :param deterministic_eval: act with the most probable action outside training steps
        (Tianshou's default, ``False``, samples when testing too).

    >>> from tdrl.algorithm.policy import make_batch
    >>> p = DiscreteCRRPolicy(actor=torch.nn.Linear(4, 3), action_space=gym.spaces.Discrete(3))
    >>> out = p(make_batch({"obs": torch.zeros(2, 4)}, 2))
    >>> out["act"].shape, out["logits"].shape
    (torch.Size([2]), torch.Size([2, 3]))
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        deterministic_eval: bool = False,
        observation_space: gym.Space | None = None,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(
                f"action_space: DiscreteCRRPolicy needs a Discrete action space, got {action_space}"
            )
        super().__init__(
            actor=actor,
            action_space=action_space,
            deterministic_eval=deterministic_eval,
            observation_space=observation_space,
        )


class DiscreteCRR(Algorithm):
    """Discrete CRR: advantage-weighted behaviour cloning with a CQL-regularized critic.

    :param policy: a :class:`DiscreteCRRPolicy`.
    :param critic: ``obs -> Q [B, |A|]``; it may share layers with the actor.
    :param optim: optimizer factory (or Adam learning rate) for actor and critic together.
    :param gamma: discount factor.
    :param policy_improvement_mode: the weight ``f``: ``"exp"``, ``"binary"`` or ``"all"``.
    :param ratio_upper_bound: the bound of ``exp(A / beta)`` (``"exp"``), ``> 0``.
    :param beta: the temperature of ``exp(A / beta)`` (``"exp"``), ``> 0``.
    :param min_q_weight: weight of the CQL term, ``>= 0``.
    :param target_update_freq: copy actor and critic into their targets every this many
        gradient steps (``0``: no target networks).
    :param max_grad_norm: clip the gradient norm (``None``: no clipping).

    >>> from tdrl.data.batch import Batch
    >>> space = gym.spaces.Discrete(2)
    >>> alg = DiscreteCRR(policy=DiscreteCRRPolicy(actor=torch.nn.Linear(4, 2), action_space=space),
    ...                   critic=torch.nn.Linear(4, 2), target_update_freq=10)
    >>> td = Batch(obs=torch.zeros(3, 4), act=torch.zeros(3, dtype=torch.long),
    ...            rew=torch.ones(3), terminated=torch.zeros(3, dtype=torch.bool),
    ...            obs_next=torch.zeros(3, 4))
    >>> sorted(alg(td).keys())
    ['loss_actor', 'loss_cql', 'loss_qvalue']
    """

    policy: DiscreteCRRPolicy
    actor: nn.Module
    actor_params: TensorDictParams
    target_actor_params: TensorDictParams
    critic: nn.Module
    critic_params: TensorDictParams
    target_critic_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: DiscreteCRRPolicy,
        critic: nn.Module,
        optim: OptimizerFactory | float = 1e-3,
        gamma: float = 0.99,
        policy_improvement_mode: ImprovementMode = "exp",
        ratio_upper_bound: float = 20.0,
        beta: float = 1.0,
        min_q_weight: float = 10.0,
        target_update_freq: int = 0,
        max_grad_norm: float | None = None,
    ) -> None:
        if not isinstance(policy, ActorPolicy) or not isinstance(
            policy.action_space, gym.spaces.Discrete
        ):
            raise TypeError(
                f"policy: expected a DiscreteCRRPolicy (a categorical ActorPolicy), "
                f"got {type(policy).__name__}"
            )
        require_unit(gamma=gamma)
        if policy_improvement_mode not in ("exp", "binary", "all"):
            raise ValueError(
                f"policy_improvement_mode: expected 'exp', 'binary' or 'all', "
                f"got {policy_improvement_mode!r}"
            )
        for name, value in (("ratio_upper_bound", ratio_upper_bound), ("beta", beta)):
            if not value > 0:
                raise ValueError(f"{name}: expected a value > 0, got {value}")
        if not min_q_weight >= 0:
            raise ValueError(f"min_q_weight: expected a value >= 0, got {min_q_weight}")
        require_at_least(0, target_update_freq=target_update_freq)
        super().__init__(policy)
        self.policy = policy
        self.critic = critic
        self.gamma = gamma
        self.policy_improvement_mode = policy_improvement_mode
        self.ratio_upper_bound = float(ratio_upper_bound)
        self.beta = float(beta)
        self.min_q_weight = float(min_q_weight)
        self.target_update_freq = target_update_freq
        # targets stay out of the submodules (no duplicate state, eval mode)
        self.__dict__["actor_old"] = policy.actor
        self.__dict__["critic_old"] = critic
        if target_update_freq > 0:
            self.__dict__["actor_old"] = self._add_target(policy.actor, "actor")
            self.__dict__["critic_old"] = self._add_target(critic, "critic")
            upd = self._hard_updater(target_update_freq)
            upd.counter = upd.value_network_update_interval  # sync before the first step
        self.optim = self._create_optimizer(
            nn.ModuleList([policy.actor, critic]), optim, max_grad_norm
        )
        terms = ("loss_actor", "loss_qvalue", "loss_cql")
        self._add_stage(self.crr_losses, (terms, self.optim))

    # -- targets ------------------------------------------------------------------------
    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``sum_a pi'(a|s') Q'(s', a)`` ``[B]`` (target networks, or the online ones)."""
        logits = call_model(self.actor_old, obs_next)[0]
        q = call_model(self.critic_old, obs_next)[0]
        probs = Categorical(logits=logits, validate_args=False).probs
        return (q * probs).sum(-1)  # type: ignore[no-any-return]

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """One-step ``returns`` for a TorchRL batch (:meth:`Algorithm.one_step_returns`)."""
        return self.one_step_returns(td)

    # -- loss ---------------------------------------------------------------------------
    def improvement_weight(self, advantage: torch.Tensor) -> torch.Tensor:
        """``f(A)`` of the policy improvement mode (no gradient).

        >>> alg = DiscreteCRR(policy=DiscreteCRRPolicy(actor=torch.nn.Linear(1, 2),
        ...                   action_space=gym.spaces.Discrete(2)), critic=torch.nn.Linear(1, 2),
        ...                   ratio_upper_bound=2.0)
        >>> alg.improvement_weight(torch.tensor([-1.0, 0.5, 3.0])).tolist()
        [0.3678794503211975, 1.6487212181091309, 2.0]
        """
        a = advantage.detach()
        if self.policy_improvement_mode == "binary":
            return (a > 0).to(a.dtype)
        if self.policy_improvement_mode == "exp":
            return (a / self.beta).exp().clamp(0.0, self.ratio_upper_bound)
        return torch.ones_like(a)

    def crr_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """The actor's weighted log-likelihood, the critic's TD loss and the CQL term;
        computes the one-step target first if the batch has none; sets ``td_error``."""
        td = self.one_step_returns(td)
        obs = self.obs_of(td)
        act = self.act_of(td).long().reshape(-1)
        q = call_model(self.critic, obs)[0]
        q_a = q.gather(1, act.unsqueeze(1)).squeeze(1)
        target = td["returns"].reshape(-1).to(q_a.dtype)
        sq = (q_a - target).pow(2)
        weight = self.weights(td)
        td.set("td_error", (target - q_a).detach())
        dist = self.policy.dist(obs)[0]
        advantage = q_a - (q * dist.probs).sum(-1)  # type: ignore[attr-defined]
        log_prob = dist.log_prob(act)
        return {
            "loss_actor": -(log_prob * self.improvement_weight(advantage)).mean(),
            "loss_qvalue": 0.5 * weighted_mean(sq, weight),
            "loss_cql": self.min_q_weight * (q.logsumexp(1) - q_a).mean(),
        }
