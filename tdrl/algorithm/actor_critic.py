"""The off-policy actor-critic family base: an N-critic ensemble with soft targets.

Written once here for DDPG, TD3, SAC, REDQ, discrete SAC, TD3+BC, BCQ, CQL, IQL:

* an ensemble of ``N`` Q critics ``Q_1..Q_N`` (one optimizer for all of them) with target
  copies ``Q'_j`` moved by a soft update ``Q'_j <- (1 - tau) Q'_j + tau Q_j`` after every
  gradient step;
* per-group optimizers: the actor, the critics, and whatever a subclass adds (SAC's
  temperature), each stepped by its own stage (:class:`~tdrl.algorithm.optim.Stage`);
* the critic loss ``L_Q = mean(w sum_j (Q_j(s, a) - y)^2)`` against an n-step target
  ``y = G_n + gamma^n (1 - term) V'(s_{t+n})`` whose bootstrap ``V'`` a subclass defines
  (:meth:`OffPolicyActorCritic.next_value`), with ``td_error = mean_j (Q_j - y)`` for
  prioritized replay;
* :meth:`OffPolicyActorCritic.q_values` evaluates the ensemble (online or target); for the
  actor's loss outside tdrl's own update it uses detached critic weights, so the actor
  term never reaches the critics' parameters under one joint optimizer.

:class:`DeterministicActorCritic` is the deterministic-actor branch (DDPG, TD3, TD3+BC): a
target actor, the bootstrap ``min_j Q'_j(s', pi'(s'))`` and the actor loss
``-mean(Q_1(s, pi(s)))``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn
from torch.func import functional_call
from typing_extensions import Required, TypedDict

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_at_least, require_unit
from tdrl.algorithm.exploration import BaseNoise
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.optim import GradStep, OptimizerFactory
from tdrl.algorithm.policy import Policy, call_model, make_batch
from tdrl.data.batch import Batch
from tdrl.utils.net import QCritic, call_module

__all__ = [
    "AutoAlpha",
    "ContinuousDeterministicPolicy",
    "DeterministicActorCritic",
    "OffPolicyActorCritic",
    "SoftActorCritic",
    "SoftActorCriticParams",
    "reinit_copy",
]


def reinit_copy(module: nn.Module) -> nn.Module:
    """A deep copy of ``module`` with every ``reset_parameters()`` re-run (fresh weights).

    >>> a = torch.nn.Linear(3, 3)
    >>> bool((reinit_copy(a).weight != a.weight).any())
    True
    """
    out = copy.deepcopy(module)
    for m in out.modules():
        reset = getattr(m, "reset_parameters", None)
        if callable(reset):
            reset()
    return out


class AutoAlpha(nn.Module):
    """Learned entropy temperature ``alpha = exp(log_alpha)`` (SAC, REDQ, discrete SAC).

    :param target_entropy: the entropy target; ``"auto"`` lets the algorithm choose
        (``-dim(A)`` for continuous SAC/REDQ, ``0.98 log |A|`` for discrete SAC).
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


class ContinuousDeterministicPolicy(Policy):
    """A deterministic actor ``a = actor(s)`` with additive exploration noise (DDPG, TD3).

    :param actor: ``obs -> action [B, act_dim]`` in ``[-1, 1]`` (e.g.
        :class:`tdrl.utils.net.DeterministicActor`); recurrent actors with Tianshou's
        ``forward(obs, state=None, info=None)`` get the hidden state and env info.
    :param action_space: a ``Box`` space.
    :param exploration_noise: noise added by :meth:`exploration_noise` inside a training
        step (e.g. :class:`~tdrl.algorithm.exploration.GaussianNoise` with ``sigma=0.1``, or
        :class:`~tdrl.algorithm.exploration.OUNoise`); ``None``: no noise.
    :param action_scaling: scale ``[-1, 1]`` to the Box range in :meth:`map_action`.
    :param action_bound_method: ``"clip"`` (default), ``"tanh"`` or ``None``.

    >>> from tdrl.utils.net import DeterministicActor
    >>> from tdrl.algorithm.exploration import GaussianNoise
    >>> box = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> p = ContinuousDeterministicPolicy(actor=DeterministicActor(3, 1, (8,)), action_space=box,
    ...                                   exploration_noise=GaussianNoise(sigma=0.1))
    >>> p(make_batch({"obs": torch.zeros(4, 3)}, 4))["act"].shape
    torch.Size([4, 1])
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        exploration_noise: BaseNoise | None = None,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: str | None = "clip",
    ) -> None:
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(
                f"action_space: {type(self).__name__} needs a Box action space, got {action_space}"
            )
        super().__init__(
            action_space,
            observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,  # type: ignore[arg-type]
        )
        self.actor = actor
        self.noise = exploration_noise

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """``act = actor(obs)`` (and the actor's new hidden state)."""
        act, hidden = call_model(self.actor, batch["obs"], state, batch.get("info", None))
        return make_batch({"act": act, "state": hidden}, act.shape[0])

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Add the noise inside a training step (collection for training), else nothing."""
        if self.noise is None or not self.is_within_training_step:
            return act
        noise = self.noise(tuple(act.shape))
        if isinstance(act, torch.Tensor):
            return act + torch.as_tensor(noise, dtype=act.dtype, device=act.device)
        return act + noise.astype(np.asarray(act).dtype, copy=False)


class OffPolicyActorCritic(Algorithm):
    """Base of the off-policy actor-critic algorithms.

    :param policy: the acting policy; ``actor`` is the module its optimizer trains
        (default ``policy.actor``).
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critics: the Q critics ``(obs, act) -> Q [B, 1]`` of the ensemble.
    :param critic_optim: optimizer factory (or Adam lr) for all critics together.
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param n_step: n-step return horizon (tdrl's buffer path; a TorchRL batch gets
        one-step targets).
    :param actor: the module the actor optimizer trains (default ``policy.actor``).
    :param actor_target: give the actor a soft-updated target copy ``actor_old``.
    :param critic2_optim: Tianshou 2.0's optimizer of the second critic (``None``: the
        critics share ``critic_optim``); the critics after the first get its settings.

    Subclasses implement :meth:`next_value` and register their stages with
    :meth:`_add_stage` (the critic stage is :meth:`critic_losses`).
    """

    # the functional parameters TorchRL's convert_to_functional creates (see _add_target)
    actor_old: nn.Module
    actor: nn.Module
    actor_params: TensorDictParams
    target_actor_params: TensorDictParams
    critic1: nn.Module
    critic1_params: TensorDictParams
    target_critic1_params: TensorDictParams
    critic2: nn.Module
    critic2_params: TensorDictParams
    target_critic2_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: Policy,
        policy_optim: OptimizerFactory | float,
        critics: Sequence[nn.Module],
        critic_optim: OptimizerFactory | float,
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step: int = 1,
        actor: nn.Module | None = None,
        actor_target: bool = False,
        critic2_optim: OptimizerFactory | float | None = None,
    ) -> None:
        require_unit(tau=tau, gamma=gamma)
        require_at_least(1, n_step=n_step)
        if not critics:
            raise ValueError("critics: expected at least one critic, got none")
        super().__init__(policy)
        self.critics = nn.ModuleList(critics)
        # target critics stay out of the submodules (no duplicate state, eval mode)
        self.__dict__["critics_old"] = [
            self._add_target(c, f"critic{j + 1}") for j, c in enumerate(critics)
        ]
        self.tau = tau
        self.gamma = gamma
        self.n_step = n_step
        actor = actor if actor is not None else policy.actor  # type: ignore[attr-defined]
        if actor_target:  # DDPG/TD3: the actor has a target copy too (same soft update)
            self.__dict__["actor_old"] = self._add_target(actor, "actor")
        self.policy_optim = self._create_optimizer(actor, policy_optim)
        self.critic_optim = self._critics_optimizer(critic_optim, critic2_optim)
        self._soft_updater(tau)

    def _critics_optimizer(
        self, critic_optim: OptimizerFactory | float, critic2_optim: OptimizerFactory | float | None
    ) -> GradStep:
        """One optimizer for the critics. With ``critic2_optim`` (Tianshou 2.0's separate
        optimizer of the second critic) the critics after the first are a second parameter
        group with its settings: the same updates as two optimizers of one class, since
        each critic's loss term reaches only its own parameters."""
        if critic2_optim is None or len(self.critics) < 2:
            return self._create_optimizer(self.critics, critic_optim)
        first: list[torch.Tensor] = list(self.critics[0].parameters())
        rest: list[torch.Tensor] = [p for c in self.critics[1:] for p in c.parameters()]
        opt, sched = OptimizerFactory.coerce(critic_optim).create(first)
        opt2, sched2 = OptimizerFactory.coerce(critic2_optim).create(rest)
        if type(opt2) is not type(opt) or (sched is None) != (sched2 is None):
            raise ValueError(
                "critic2_optim: expected the optimizer class (and scheduling) of critic_optim "
                f"({type(opt).__name__}), got {type(opt2).__name__}"
            )
        opt.add_param_group({**opt2.defaults, "params": rest})
        if sched is not None:
            self.lr_schedulers.append(sched)
        gs = GradStep(opt, first + rest)
        self._grad_steps.append(gs)
        return gs

    @staticmethod
    def twin_critics(critic: nn.Module, critic2: nn.Module | None) -> list[nn.Module]:
        """``[critic, critic2]``; without ``critic2`` a re-initialized copy of ``critic``."""
        return [critic, critic2 if critic2 is not None else reinit_copy(critic)]

    @property
    def critic1_old(self) -> nn.Module:
        """The first target critic."""
        return self.critics_old[0]  # type: ignore[no-any-return]

    @property
    def critic2_old(self) -> nn.Module:
        """The second target critic."""
        return self.critics_old[1]  # type: ignore[no-any-return]

    # -- entropy temperature (SAC, REDQ, discrete SAC) -----------------------------------
    def _init_temperature(
        self, alpha: float | AutoAlpha, auto_target_entropy: float
    ) -> list[tuple[str, Any]]:
        """Set up a fixed or learned temperature; return the actor stage's optimizer steps
        (``loss_actor``, plus ``loss_alpha`` with its own optimizer when learned)."""
        self.auto_alpha: AutoAlpha | None = None
        self._alpha = 0.0
        steps: list[tuple[str, Any]] = [("loss_actor", self.policy_optim)]
        if isinstance(alpha, AutoAlpha):
            self.auto_alpha = alpha
            if alpha.target_entropy == "auto":
                alpha.target_entropy = auto_target_entropy
            self.alpha_optim = self._create_optimizer([alpha.log_alpha], alpha.optim_spec)
            steps.append(("loss_alpha", self.alpha_optim))
        else:
            self._alpha = float(alpha)
        return steps

    @property
    def alpha(self) -> float:
        """The current entropy temperature."""
        return self.auto_alpha.value if self.auto_alpha is not None else self._alpha

    def alpha_now(self) -> torch.Tensor | float:
        """The temperature the losses use: with a learned alpha a detached 0-dim tensor
        (read on the device: no host sync, and no recompile of a compiled update when it
        changes), else the fixed float. Same numbers as :attr:`alpha`."""
        if self.auto_alpha is None:
            return self._alpha
        return self.auto_alpha.log_alpha.detach().exp()

    def temperature_terms(
        self, entropy: torch.Tensor, alpha: torch.Tensor | float
    ) -> dict[str, torch.Tensor]:
        """``entropy`` and ``alpha`` statistics, and with a learned temperature
        ``loss_alpha = -mean(log_alpha (H_target - H))`` for per-sample entropies ``H``."""
        h = entropy.detach()
        out = {"entropy": h.mean(), "alpha": torch.as_tensor(alpha, device=h.device)}
        if self.auto_alpha is not None:
            deficit = float(self.auto_alpha.target_entropy) - h
            out["loss_alpha"] = -(self.auto_alpha.log_alpha * deficit).mean()
        return out

    # -- critics ------------------------------------------------------------------------
    def q_values(
        self, obs: Any, act: torch.Tensor, target: bool = False, detach: bool = False
    ) -> list[torch.Tensor]:
        """Each critic's ``Q(obs, act)`` as ``[B]``.

        :param target: use the target critics.
        :param detach: compute with detached critic weights (gradients still flow into
            ``act``); a no-op inside tdrl's own update, whose optimizers backpropagate only
            into their own parameters anyway.
        """
        critics: list[Any] = self.critics_old if target else list(self.critics)
        if detach and not self._in_update:
            return [self._detached_q(c, obs, act) for c in critics]
        if all(type(c) is QCritic for c in critics):
            x = QCritic.features(obs, act)  # one shared input for the whole ensemble
            return [call_module(c.net, x).reshape(-1) for c in critics]
        return [c(obs, act).reshape(-1) for c in critics]

    @staticmethod
    def _detached_q(critic: nn.Module, obs: Any, act: torch.Tensor) -> torch.Tensor:
        params = {k: v.detach() for k, v in critic.named_parameters()}
        out: torch.Tensor = functional_call(critic, params, (obs, act))
        return out.reshape(-1)

    # -- targets ------------------------------------------------------------------------
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """The bootstrap value ``V'(s') [B]`` (no grad); each algorithm defines it."""
        raise NotImplementedError

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the n-step ``returns``."""
        return self._nstep_returns(batch, buffer, indices, self.gamma, self.n_step)

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """One-step ``returns`` for a TorchRL batch (:meth:`Algorithm.one_step_returns`)."""
        return self.one_step_returns(td)

    # -- the critic stage ---------------------------------------------------------------
    def critic_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_qvalue = mean(w sum_j (Q_j(s, a) - y)^2)``; sets ``td_error``."""
        target = td["returns"].reshape(-1)
        tds = [q - target for q in self.q_values(self.obs_of(td), self.act_of(td))]
        sq = tds[0].pow(2)
        for t in tds[1:]:
            sq = sq + t.pow(2)
        w = self.weights(td)
        td.set("td_error", (sum(tds[1:], tds[0]) / len(tds)).detach())
        return {"loss_qvalue": weighted_mean(sq, w)}


class SoftActorCriticParams(TypedDict, total=False):
    """:class:`SoftActorCritic`'s keywords besides ``policy``, for a subclass that passes
    them through unchanged (``**kwargs: Unpack[SoftActorCriticParams]``)."""

    policy_optim: OptimizerFactory | float
    critic: Required[nn.Module]
    critic_optim: OptimizerFactory | float
    critic2: nn.Module | None
    critic2_optim: OptimizerFactory | float | None
    tau: float
    gamma: float
    alpha: float | AutoAlpha
    n_step: int


class SoftActorCritic(OffPolicyActorCritic):
    """Base of SAC and discrete SAC: twin critics and an entropy temperature ``alpha``.

    :param policy: the stochastic policy (its ``actor`` is trained).
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critic: the first critic (``(obs, act) -> Q [B, 1]``, or ``obs -> Q [B, |A|]``
        for discrete SAC).
    :param critic_optim: optimizer factory (or Adam lr) for both critics.
    :param critic2: the second critic (default: a re-initialized copy of ``critic``).
    :param tau: soft target update rate.
    :param gamma: discount factor.
    :param alpha: a fixed entropy temperature, or an :class:`AutoAlpha` (its ``"auto"``
        target entropy is :meth:`auto_target_entropy`).
    :param n_step: n-step return horizon.
    :param critic2_optim: the second critic's optimizer settings (Tianshou 2.0's; default:
        ``critic_optim``'s).

    Stages: :meth:`critic_losses` (``loss_qvalue``), then :meth:`actor_losses`
    (``loss_actor``, and ``loss_alpha`` with a learned temperature). Subclasses define
    :meth:`next_value` and :meth:`actor_losses`.
    """

    def __init__(
        self,
        *,
        policy: Policy,
        policy_optim: OptimizerFactory | float = 1e-3,
        critic: nn.Module,
        critic_optim: OptimizerFactory | float = 1e-3,
        critic2: nn.Module | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | AutoAlpha = 0.2,
        n_step: int = 1,
        critic2_optim: OptimizerFactory | float | None = None,
    ) -> None:
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=self.twin_critics(critic, critic2),
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
            critic2_optim=critic2_optim,
        )
        steps = self._init_temperature(alpha, auto_target_entropy=self.auto_target_entropy())
        self._add_stage(self.critic_losses, ("loss_qvalue", self.critic_optim))
        self._add_stage(self.actor_losses, *steps)

    def auto_target_entropy(self) -> float:
        """The ``"auto"`` target entropy: ``-dim(A)`` (a continuous action space)."""
        return -float(np.prod(self.policy.action_space.shape))  # type: ignore[arg-type]

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor`` (and ``loss_alpha``, :meth:`temperature_terms`); each
        algorithm defines it."""
        raise NotImplementedError


class DeterministicActorCritic(OffPolicyActorCritic):
    """Base of DDPG and TD3: a deterministic actor with a soft-updated target copy.

    :param policy: a :class:`~tdrl.algorithm.actor_critic.ContinuousDeterministicPolicy`.
    :param policy_optim: optimizer factory (or Adam lr) for the actor.
    :param critics: the Q critics ``(obs, act) -> Q [B, 1]``.
    :param critic_optim: optimizer factory (or Adam lr) for all critics together.
    :param tau: soft target update rate (critics and actor).
    :param gamma: discount factor.
    :param n_step: n-step return horizon.
    :param actor_every: the actor stage and the soft target update run on every
        ``actor_every``-th gradient step (the first included; TD3's delayed actor).
    :param critic2_optim: the optimizer settings of the critics after the first
        (Tianshou 2.0's ``critic2_optim``; default: ``critic_optim``'s).

    Stages: :meth:`critic_losses` (``loss_qvalue``, the base's) then :meth:`actor_losses`
    (``loss_actor``). The bootstrap is ``min_j Q'_j(s', target_action(s'))``.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DeterministicActor, QCritic
    >>> policy = ContinuousDeterministicPolicy(
    ...     actor=DeterministicActor(3, 1, (8,)), action_space=gym.spaces.Box(-2.0, 2.0, (1,)))
    >>> alg = DeterministicActorCritic(policy=policy, policy_optim=1e-3,
    ...                                critics=[QCritic(3, 1, (8,))], critic_optim=1e-3)
    >>> alg.next_value(torch.zeros(4, 3)).shape
    torch.Size([4])
    """

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory | float,
        critics: Sequence[nn.Module],
        critic_optim: OptimizerFactory | float,
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step: int = 1,
        actor_every: int = 1,
        critic2_optim: OptimizerFactory | float | None = None,
    ) -> None:
        if not isinstance(policy, ContinuousDeterministicPolicy):
            raise ValueError(
                f"policy: expected a ContinuousDeterministicPolicy, got {type(policy).__name__}"
            )
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critics=critics,
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step=n_step,
            actor_target=True,
            critic2_optim=critic2_optim,
        )
        self.policy: ContinuousDeterministicPolicy = policy
        self._add_stage(self.critic_losses, ("loss_qvalue", self.critic_optim))
        # the actor (and, with it, the soft target update) every actor_every-th step
        self._add_stage(
            self.actor_losses,
            ("loss_actor", self.policy_optim),
            every=actor_every,
            gates_targets=actor_every > 1,
        )

    def target_action(self, obs_next: Any) -> torch.Tensor:
        """The action the bootstrap evaluates: the target actor's ``pi'(s')``."""
        act, _ = call_model(self.actor_old, obs_next)
        return act  # type: ignore[no-any-return]

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``min_j Q'_j(s', a')`` with ``a' = target_action(s')`` (one critic: ``Q'``)."""
        qs = self.q_values(obs_next, self.target_action(obs_next), target=True)
        return qs[0] if len(qs) == 1 else torch.stack(qs).min(0).values

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(Q_1(s, pi(s)))``, through the first critic with its weights
        held fixed (the gradient reaches the actor only)."""
        obs = self.obs_of(td)
        act, _ = call_model(self.policy.actor, obs)
        q = self.q_values(obs, act, detach=True)[0]
        return {"loss_actor": -q.mean()}
