"""Conservative Q-learning (CQL, Kumar et al. 2020, arXiv:2006.04779) on SAC.

Offline RL: SAC's critics (:mod:`tdrl.algorithm.modelfree.sac`) get a penalty that pushes
Q down on actions the policy or a uniform proposal would pick and up on the dataset's own
actions, so the policy cannot exploit over-estimated out-of-distribution actions. This is
CQL(H): the soft maximum ``log sum exp Q`` over actions, estimated by importance sampling
from ``R`` uniform actions, ``R`` policy actions at ``s`` and ``R`` policy actions at
``s'`` (all scored at ``s``). Per gradient step on a batch ``(s, a, r, s', term)``::

    a~ ~ pi(s)
    L_pi = mean(alpha log pi(a~|s) - min_j Q_j(s, a~))                         (actor step)
    L_alpha = -mean(log_alpha (H_target + log pi(a~|s)))                    (auto alpha)
    a' ~ pi(s'),  y = r + gamma (1 - term) (min_j Q'_j(s', a') - alpha log pi(a'|s'))
    for k = 1..R:  u_k ~ U[min_action, max_action]^d,  c_k ~ pi(s),  n_k ~ pi(s')
    X_j(s) = {Q_j(s, u_k) - log U(u_k)} + {Q_j(s, c_k) - log pi(c_k|s)}
             + {Q_j(s, n_k) - log pi(n_k|s')}               (3R values per state)
    calibrated (Cal-QL, arXiv:2303.05479): X_j(s) <- max(X_j(s), G(s))   (G: MC return)
    C_j = w (T mean_s log sum exp(X_j(s) / T) - mean Q_j(s, a))
    Lagrangian: alpha' = clip(exp(log_alpha'), alpha_min, alpha_max),
        C_j <- alpha' (C_j - gap),  L_alpha' = -(1/2) sum_j alpha' (C_j - gap)   (alpha' step)
    L_Q = mean(sum_j (Q_j(s, a) - y)^2) + sum_j C_j        (critic step, each critic's
                                                            gradient norm clipped on its own)
    Q'_j <- (1 - tau) Q'_j + tau Q_j

(``w`` = ``cql_weight``, ``T`` = ``temperature``, ``gap`` = ``lagrange_threshold``.) The
steps run in that order, as in Tianshou: the target uses the actor and alpha after their
step. ``G(s)``, the discounted Monte-Carlo return of the dataset's episode from ``s``, is
computed once per buffer (:meth:`CQL.process_buffer`, which the offline trainer calls).

Unlike Tianshou 2.0.1 (see ``docs/differences.md``), the log-sum-exp runs over all ``3R``
values of a state (Tianshou's reshape to ``[B, R, 1]`` is not assigned, so it takes the
log-sum-exp of the 3 values of each (state, repeat) pair instead: the same with ``R = 1``),
the uniform actions are drawn from ``[min_action, max_action]`` with their density
``(max_action - min_action)^-d`` (Tianshou draws from ``[-min_action, max_action]``, a
single point for the default ``min_action = -1``, and uses the density of ``[-1, 1]``), and
the target is cut only where an episode terminated (Tianshou: at every ``done``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.actor_critic import AutoAlpha
from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.modelfree.sac import SAC, SACPolicy
from tdrl.algorithm.optim import GradStep, OptimizerFactory
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch

__all__ = ["CQL", "AutoAlpha", "SACPolicy"]

CALIBRATION_KEY = "calibration_returns"
"""The batch key of the Monte-Carlo returns the calibrated penalty bounds Q from below."""


class _PerModuleClip(GradStep):
    """A :class:`GradStep` that clips the gradient norm of each module on its own (each of
    Tianshou's critics has its own clipped optimizer; Adam itself is per parameter)."""

    def __init__(
        self, base: GradStep, groups: list[list[torch.Tensor]], max_grad_norm: float
    ) -> None:
        super().__init__(base.optim, base.params, max_grad_norm)
        self.groups = groups

    @torch.no_grad()
    def _clip(self) -> None:
        for group in self.groups:
            nn.utils.clip_grad_norm_(group, max_norm=self.max_grad_norm)  # type: ignore[arg-type]


def _check_cql_args(
    cql_weight: float,
    temperature: float,
    min_action: float,
    max_action: float,
    num_repeat_actions: int,
    alpha_min: float,
    alpha_max: float,
    max_grad_norm: float | None,
) -> None:
    """Raise ``ValueError`` naming the first bad argument of :class:`CQL`."""
    if not cql_weight >= 0:
        raise ValueError(f"cql_weight: expected a value >= 0, got {cql_weight}")
    if not temperature > 0:
        raise ValueError(f"temperature: expected a value > 0, got {temperature}")
    if not min_action < max_action:
        raise ValueError(
            f"max_action: expected a value > min_action = {min_action}, got {max_action}"
        )
    require_at_least(1, num_repeat_actions=num_repeat_actions)
    if not 0 <= alpha_min <= alpha_max:
        raise ValueError(
            f"alpha_max: expected 0 <= alpha_min <= alpha_max, got alpha_min={alpha_min}, "
            f"alpha_max={alpha_max}"
        )
    if max_grad_norm is not None and not max_grad_norm > 0:
        raise ValueError(f"max_grad_norm: expected a value > 0 or None, got {max_grad_norm}")


class CQL(SAC):
    """CQL(H) on SAC, with automatic alpha and the Lagrangian variant (automatic alpha').

    :param policy: a :class:`~tdrl.algorithm.modelfree.sac.SACPolicy`.
    :param cql_alpha_lr: optimizer factory (or Adam lr) for ``log alpha'`` (Lagrangian).
    :param cql_weight: ``w``, the weight of the conservative penalty, ``>= 0``.
    :param temperature: ``T`` of the log-sum-exp, ``> 0``.
    :param with_lagrange: tune ``alpha'`` so that the penalty stays near
        ``lagrange_threshold``.
    :param lagrange_threshold: the target action gap of the Lagrangian variant.
    :param min_action: / :param max_action: the range of the uniform proposal actions (the
        raw action range: ``[-1, 1]`` for a tanh-squashed policy).
    :param num_repeat_actions: ``R``, actions per state from each proposal, ``>= 1``.
    :param alpha_min: / :param alpha_max: the clip range of ``alpha'``.
    :param max_grad_norm: clip each critic's gradient norm to this (``None``: off).
    :param calibrated: bound the proposals' Q from below by the dataset's Monte-Carlo
        returns (Cal-QL); needs ``calibration_returns`` in the batch, which tdrl's update
        adds (a TorchRL batch without it gets the uncalibrated penalty).

    ``policy_optim``, ``critic`` (``(obs, act) -> Q [B, 1]``), ``critic_optim``, ``critic2``,
    ``tau``, ``gamma`` and ``alpha`` are
    :class:`~tdrl.algorithm.actor_critic.SoftActorCritic`'s (there is no ``n_step``).

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import GaussianActor, QCritic
    >>> box = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> policy = SACPolicy(actor=GaussianActor(3, 1, (8,)), action_space=box)
    >>> alg = CQL(policy=policy, critic=QCritic(3, 1, (8,)), alpha=AutoAlpha())
    >>> [[k for k, _ in s.steps] for s in alg._stages]
    [[('loss_actor',), ('loss_alpha',)], [('loss_cql_alpha',), ('loss_qvalue', 'loss_cql')]]
    """

    def __init__(
        self,
        *,
        policy: SACPolicy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 1e-3,
        critic2: nn.Module | None = None,
        cql_alpha_lr: OptimizerFactory | float = 1e-4,
        cql_weight: float = 1.0,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | AutoAlpha = 0.2,
        temperature: float = 1.0,
        with_lagrange: bool = True,
        lagrange_threshold: float = 10.0,
        min_action: float = -1.0,
        max_action: float = 1.0,
        num_repeat_actions: int = 10,
        alpha_min: float = 0.0,
        alpha_max: float = 1e6,
        max_grad_norm: float | None = 1.0,
        calibrated: bool = True,
    ) -> None:
        _check_cql_args(
            cql_weight, temperature, min_action, max_action, num_repeat_actions, alpha_min,
            alpha_max, max_grad_norm,
        )  # fmt: skip
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critic=critic,
            critic_optim=critic_optim,
            critic2=critic2,
            tau=tau,
            gamma=gamma,
            alpha=alpha,
        )
        self.cql_weight = cql_weight
        self.temperature = temperature
        self.with_lagrange = with_lagrange
        self.lagrange_threshold = lagrange_threshold
        self.min_action = min_action
        self.max_action = max_action
        self.num_repeat_actions = num_repeat_actions
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.calibrated = calibrated
        if max_grad_norm is not None:  # one Adam for both critics, each clipped on its own
            groups: list[list[torch.Tensor]] = [list(c.parameters()) for c in self.critics]
            per = _PerModuleClip(self.critic_optim, groups, max_grad_norm)
            self._grad_steps[self._grad_steps.index(self.critic_optim)] = per
            self.critic_optim = per
        critic_steps: list[tuple[str | tuple[str, ...], GradStep]] = []
        if with_lagrange:
            device = next(self.critics.parameters()).device
            self.cql_log_alpha = nn.Parameter(torch.zeros((), device=device))
            self.cql_alpha_optim = self._create_optimizer([self.cql_log_alpha], cql_alpha_lr)
            critic_steps.append(("loss_cql_alpha", self.cql_alpha_optim))
        critic_steps.append((("loss_qvalue", "loss_cql"), self.critic_optim))
        # Tianshou's order: the actor (and alpha) first, then the critics on the new actor
        actor_steps: list[tuple[str | tuple[str, ...], GradStep]] = [
            ("loss_actor", self.policy_optim)
        ]
        if self.auto_alpha is not None:
            actor_steps.append(("loss_alpha", self.alpha_optim))
        self._stages.clear()
        self._add_stage(self.actor_losses, *actor_steps)
        self._add_stage(self.critic_losses, *critic_steps)

    @property
    def cql_alpha(self) -> float:
        """The current ``alpha'`` (``cql_weight``'s Lagrange multiplier; 1 without it)."""
        if not self.with_lagrange:
            return 1.0
        return float(self.cql_log_alpha.detach().exp().clamp(self.alpha_min, self.alpha_max))

    # -- data: Monte-Carlo returns for the calibrated penalty ---------------------------
    def process_buffer(self, buffer: Any) -> Any:
        """Compute the dataset's discounted Monte-Carlo returns once (``calibrated``)."""
        if self.calibrated:
            self._calibration_returns(buffer)
        return buffer

    def _calibration_returns(self, buffer: Any) -> torch.Tensor:
        """``G(s)`` for every buffer index (cached per buffer and size)."""
        key = (id(buffer), len(buffer))
        cached = self.__dict__.get("_calibration")
        if cached is None or cached[0] != key:
            idx = buffer.sample_indices(0)
            ret, _ = compute_episodic_return(
                buffer[idx], buffer, idx, gamma=self.gamma, gae_lambda=1.0
            )
            full = torch.zeros(buffer.maxsize, dtype=torch.float32)
            full[torch.as_tensor(idx)] = ret.to(torch.float32)
            cached = (key, full)
            self.__dict__["_calibration"] = cached
        return cached[1]  # type: ignore[no-any-return]

    def preprocess(self, batch: Batch, buffer: Any, indices: Any) -> Batch:
        """Add ``calibration_returns`` (``calibrated``); the one-step target is computed in
        :meth:`critic_losses`, after the actor step."""
        if self.calibrated:
            ret = self._calibration_returns(buffer)[torch.as_tensor(indices)]
            batch[CALIBRATION_KEY] = ret.to(next(self.critics.parameters()).device)
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """Nothing: the one-step target is computed in :meth:`critic_losses`."""
        return td

    # -- the critic stage ---------------------------------------------------------------
    def critic_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """SAC's TD loss ``loss_qvalue`` plus the conservative penalty ``loss_cql`` (and, with
        the Lagrangian, ``loss_cql_alpha`` for ``log alpha'``)."""
        out = super().critic_losses(self.one_step_returns(td))
        out.update(self.conservative_losses(td))
        return out

    def conservative_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_cql = sum_j C_j`` (see the module docstring), ``cql_penalty`` (the mean
        unweighted-by-alpha' ``C_j``) and, with the Lagrangian, ``loss_cql_alpha`` and
        ``cql_alpha``. The proposals are drawn without gradient: the terms train the
        critics (and ``log alpha'``) only."""
        obs, act = self.obs_of(td), self.act_of(td)
        obs_next = self._get(td, self.next_obs_key, "next observation")
        b, r, d = obs.shape[0], self.num_repeat_actions, act.shape[-1]
        uniform = torch.empty(b * r, d, dtype=act.dtype, device=act.device)
        uniform.uniform_(self.min_action, self.max_action)
        s = obs.repeat_interleave(r, 0)  # each state's R copies side by side
        with torch.no_grad():
            a_cur, logp_cur, _, _ = self.policy.sample(s)
            a_next, logp_next, _, _ = self.policy.sample(obs_next.repeat_interleave(r, 0))
        log_uniform = -d * math.log(self.max_action - self.min_action)
        density = torch.cat([torch.full_like(logp_cur, log_uniform), logp_cur, logp_next])
        qs = self.q_values(torch.cat([s, s, s]), torch.cat([uniform, a_cur, a_next]))
        q_data = self.q_values(obs, act)
        lower = td.get(CALIBRATION_KEY, None) if self.calibrated else None
        t = self.temperature
        penalties = []
        for q, qd in zip(qs, q_data, strict=True):
            x = (q - density).reshape(3, b, r)
            if lower is not None:
                x = torch.maximum(x, lower.reshape(1, b, 1).to(x.dtype))
            x = x.permute(1, 0, 2).reshape(b, 3 * r)  # the 3R values of each state
            lse = torch.logsumexp(x / t, dim=1).mean() * t
            penalties.append(self.cql_weight * (lse - qd.mean()))
        total = torch.stack(penalties).sum()
        out = {"cql_penalty": total.detach() / len(penalties)}
        if not self.with_lagrange:
            out["loss_cql"] = total
            return out
        cql_alpha = self.cql_log_alpha.exp().clamp(self.alpha_min, self.alpha_max)
        gap = total - len(penalties) * self.lagrange_threshold
        out["loss_cql"] = cql_alpha.detach() * gap
        out["loss_cql_alpha"] = -0.5 * cql_alpha * gap.detach()
        out["cql_alpha"] = cql_alpha.detach()
        return out
