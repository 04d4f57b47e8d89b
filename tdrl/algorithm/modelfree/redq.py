"""Randomized Ensembled Double Q-learning (REDQ, arXiv:2101.05982).

SAC with an ensemble of ``N`` critics, a high update-to-data ratio (many gradient steps
per env step: the trainer's ``update_per_step``) and, per target, a random subset of ``M``
target critics. On the off-policy actor-critic base (the ensemble, its soft targets, the
n-step critic loss) REDQ's gradient step is::

    a' ~ pi(s'),  K = M distinct indices of {1..N}  (drawn from torch's generator)
    y = r + gamma^n (1 - term) (agg_{j in K} Q'_j(s', a') - alpha log pi(a'|s'))
                                                         (agg: min, or mean)
    L_Q     = mean(w mean_j (Q_j(s, a) - y)^2)                        (every step)
    every actor_delay-th step:
        a~ ~ pi(s),  L_pi = mean(alpha log pi(a~|s) - mean_j Q_j(s, a~))
        L_alpha = -mean(log_alpha (H_target + log pi(a~|s)))          (auto alpha)
    Q'_j <- (1 - tau) Q'_j + tau Q_j                                  (every step)

The policy is SAC's tanh-squashed Gaussian (:class:`~tdrl.algorithm.modelfree.sac.SACPolicy`)
and the temperature SAC's (:class:`~tdrl.algorithm.modelfree.sac.AutoAlpha`).

The ensemble is either ``N`` separate critics ``(obs, act) -> [B, 1]`` (tdrl's form) or, as
in Tianshou, one *ensemble critic* ``(obs, act) -> [N, B, 1]`` whose layers are
:class:`~tdrl.utils.tianshou_net.common.EnsembleLinear` (Tianshou's REDQ example builds it
from ``Net(..., concat=True, linear_layer=...)`` and ``ContinuousCritic``); the math is the
same, the ensemble critic computes all ``N`` members in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.actor_critic import OffPolicyActorCritic, reinit_copy
from tdrl.algorithm.checks import require_at_least, require_instance
from tdrl.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.utils.tianshou_net.common import EnsembleLinear

__all__ = ["REDQ", "REDQPolicy"]

REDQPolicy = SACPolicy
"""REDQ acts like SAC: a tanh-squashed Gaussian (Tianshou's ``REDQPolicy``)."""


class REDQ(OffPolicyActorCritic):
    """REDQ: SAC over a critic ensemble with random-subset targets and a delayed actor.

    :param policy: a :class:`~tdrl.algorithm.modelfree.sac.SACPolicy`.
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: ``(obs, act) -> Q [B, 1]``: one critic (the ensemble is it plus
        ``ensemble_size - 1`` re-initialized copies) or the ``ensemble_size`` critics; or
        one ensemble critic ``(obs, act) -> Q [ensemble_size, B, 1]`` (Tianshou's form).
    :param critic_optim: optimizer factory (or Adam lr) for the whole ensemble.
    :param ensemble_size: ``N``, the number of critics.
    :param subset_size: ``M``, the number of target critics per target (``1..N``).
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param alpha: a fixed entropy temperature, or an :class:`AutoAlpha`
        (``"auto"`` target entropy: ``-dim(A)``).
    :param n_step: n-step return horizon.
    :param actor_delay: critic steps per actor (and alpha) step in :meth:`update`.
    :param target_mode: ``"min"`` or ``"mean"`` over the subset's target Q-values.
    :param generator: the torch generator the subsets are drawn from (default: torch's
        global one, seeded by ``torch.manual_seed``).
    :param ensemble_critic: whether ``critic`` is one ensemble critic; ``None`` (default):
        when it contains an ``EnsembleLinear`` layer (tdrl's or Tianshou's).

    ``loss(td)`` (TorchRL) returns every term at the current parameters; the actor delay
    is a schedule of :meth:`update` (a TorchRL loop steps the actor as often as it likes).

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import GaussianActor, QCritic
    >>> box = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> policy = SACPolicy(actor=GaussianActor(3, 1, (8,)), action_space=box)
    >>> alg = REDQ(policy=policy, critic=QCritic(3, 1, (8,)), ensemble_size=4, subset_size=2)
    >>> len(alg.critics), len(alg.critics_old), alg.draw_subset().shape
    (4, 4, torch.Size([2]))

    Tianshou's ensemble critic is kept whole (one network, one target):

    >>> from tdrl.utils.tianshou_net.common import EnsembleLinear, Net
    >>> from tdrl.utils.tianshou_net.continuous import ContinuousCritic
    >>> linear = lambda x, y: EnsembleLinear(4, x, y)
    >>> net = Net(state_shape=3, action_shape=1, hidden_sizes=[8], concat=True,
    ...           linear_layer=linear)
    >>> critic = ContinuousCritic(preprocess_net=net, linear_layer=linear, flatten_input=False)
    >>> alg = REDQ(policy=policy, critic=critic, ensemble_size=4, subset_size=2)
    >>> len(alg.critics), len(alg.q_values(torch.zeros(5, 3), torch.zeros(5, 1)))
    (1, 4)
    """

    def __init__(
        self,
        *,
        policy: SACPolicy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module | Sequence[nn.Module],
        critic_optim: OptimizerFactory | float = 1e-3,
        ensemble_size: int = 10,
        subset_size: int = 2,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | AutoAlpha = 0.2,
        n_step: int = 1,
        actor_delay: int = 20,
        target_mode: Literal["min", "mean"] = "min",
        generator: torch.Generator | None = None,
        ensemble_critic: bool | None = None,
    ) -> None:
        require_instance("policy", policy, SACPolicy, ValueError)
        if target_mode not in ("min", "mean"):
            raise ValueError(f"target_mode: expected 'min' or 'mean', got {target_mode!r}")
        require_at_least(1, ensemble_size=ensemble_size, actor_delay=actor_delay)
        if not 0 < subset_size <= ensemble_size:
            raise ValueError(
                f"subset_size: expected an int in [1, ensemble_size={ensemble_size}], "
                f"got {subset_size}"
            )
        if ensemble_critic is None:
            ensemble_critic = isinstance(critic, nn.Module) and any(
                _is_ensemble_layer(m) for m in critic.modules()
            )
        if ensemble_critic:
            critics = [_check_ensemble(critic, ensemble_size)]
        elif isinstance(critic, nn.Module):
            critics = [critic, *(reinit_copy(critic) for _ in range(ensemble_size - 1))]
        else:
            critics = list(critic)
            if len(critics) != ensemble_size:
                raise ValueError(
                    f"critic: expected one critic or ensemble_size={ensemble_size} critics, "
                    f"got {len(critics)}"
                )
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=critics,
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
        )
        self.policy: SACPolicy = policy
        self.ensemble_critic = bool(ensemble_critic)
        self.ensemble_size = ensemble_size
        self.subset_size = subset_size
        self.actor_delay = actor_delay
        self.target_mode = target_mode
        self.generator = generator
        dim = float(np.prod(policy.action_space.shape))  # type: ignore[arg-type]
        steps = self._init_temperature(alpha, auto_target_entropy=-dim)
        self._add_stage(self.critic_losses, ("loss_qvalue", self.critic_optim))
        # actor and alpha on every actor_delay-th critic step (the last of each run of k)
        self._add_stage(self.actor_losses, *steps, every=actor_delay, phase=actor_delay - 1)

    def draw_subset(self) -> torch.Tensor:
        """``M`` distinct critic indices ``[M]``, uniformly from torch's generator."""
        perm = torch.randperm(self.ensemble_size, generator=self.generator)
        return perm[: self.subset_size]

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``agg_{j in K} Q'_j(s', a') - alpha log pi(a'|s')`` with ``a' ~ pi(s')`` and a
        fresh random subset ``K`` (:meth:`draw_subset`)."""
        act, log_prob, _, _ = self.policy.sample(obs_next)
        qs = self.q_values(obs_next, act, target=True)
        subset = torch.stack([qs[j] for j in self.draw_subset().tolist()])
        q = subset.min(0).values if self.target_mode == "min" else subset.mean(0)
        return q - self.alpha_now() * log_prob

    def critic_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_qvalue = mean(w mean_j (Q_j(s, a) - y)^2)``: the base's ensemble loss
        averaged over the ``N`` critics; sets ``td_error = mean_j (Q_j - y)``."""
        out = super().critic_losses(td)
        return {"loss_qvalue": out["loss_qvalue"] / self.ensemble_size}

    def q_values(
        self, obs: Any, act: torch.Tensor, target: bool = False, detach: bool = False
    ) -> list[torch.Tensor]:
        """Each ensemble member's ``Q(obs, act)`` as ``[B]`` (see
        :meth:`OffPolicyActorCritic.q_values`); an ensemble critic's ``[N, B, 1]`` output is
        split into its ``N`` members."""
        if not self.ensemble_critic:
            return super().q_values(obs, act, target=target, detach=detach)
        critic: nn.Module = self.critics_old[0] if target else self.critics[0]
        if detach and not self._in_update:
            q = self._detached_q(critic, obs, act)
        else:
            q = critic(obs, act)
        return list(q.reshape(self.ensemble_size, -1).unbind(0))

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = mean(alpha log pi - mean_j Q_j)`` for fresh actions at ``obs``,
        and with auto-alpha ``loss_alpha = -mean(log_alpha (H_target + log pi))``."""
        obs = self.obs_of(td)
        act, log_prob, _, _ = self.policy.sample(obs)
        q = torch.stack(self.q_values(obs, act, detach=True)).mean(0)
        alpha = self.alpha_now()
        loss = (alpha * log_prob - q).mean()
        return {"loss_actor": loss, **self.temperature_terms(-log_prob, alpha)}


def _is_ensemble_layer(module: nn.Module) -> bool:
    """Whether ``module`` is an ``EnsembleLinear`` (tdrl's, or Tianshou's by name)."""
    return isinstance(module, EnsembleLinear) or type(module).__name__ == "EnsembleLinear"


def _check_ensemble(critic: Any, ensemble_size: int) -> nn.Module:
    """``critic`` (one ensemble network) if its ensemble layers have ``ensemble_size``
    members; a ``ValueError`` otherwise."""
    if not isinstance(critic, nn.Module):
        raise ValueError(f"critic: an ensemble critic is one module, got {type(critic).__name__}")
    for m in critic.modules():
        weight = getattr(m, "weight", None)
        size = weight.shape[0] if isinstance(weight, torch.Tensor) else ensemble_size
        if _is_ensemble_layer(m) and size != ensemble_size:
            raise ValueError(
                f"critic: expected ensemble layers of ensemble_size={ensemble_size} "
                f"members, got {size}"
            )
    return critic
