"""The on-policy actor-critic family base: rollouts, GAE, minibatch epochs.

Written once here for REINFORCE, A2C, PPO, NPG, TRPO and GAIL:

* :class:`ActorPolicy`: ``pi(a | s) = dist_fn(actor(s))`` (Tianshou's
  ProbabilisticActorPolicy), passing the hidden state and env info to recurrent actors;
* :class:`OnPolicyAlgorithm`: per update, on the whole rollout buffer (chronological per
  env), chunked no-grad passes for ``V(s)``, ``V(s')`` and ``log pi_old(a | s)``; GAE
  returns and advantages through the buffer's episode API (``lambda = 1``,
  no critic: Monte-Carlo returns); optional return scaling by the running standard
  deviation of returns (not centred, as OpenAI baselines and Tianshou); then ``repeat``
  epochs of shuffled minibatches (the last, short one merged into the one before, as
  Tianshou), each running the subclass's loss stage(s) with their optimizer steps;
  optionally the advantages are recomputed with the current critic before each epoch.

A subclass writes its loss stage(s) only; the minibatch holds ``obs, act, adv, returns,
v_s, logp_old``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal
from typing_extensions import TypedDict

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_at_least, require_unit
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import Policy, call_model, make_batch
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data.batch import Batch
from tdrl.utils.net import ActorCritic
from tdrl.utils.normalize import RunningNorm

__all__ = [
    "ActorPolicy",
    "OnPolicyAlgorithm",
    "OnPolicyParams",
    "ProbabilisticActorPolicy",
    "default_dist_fn",
]


class OnPolicyParams(TypedDict, total=False):
    """:class:`OnPolicyAlgorithm` keywords a subclass passes through unchanged
    (``**kwargs: Unpack[OnPolicyParams]``); see it for their meaning and defaults."""

    gae_lambda: float
    gamma: float
    return_scaling: bool


def default_dist_fn(action_space: gym.Space) -> Any:
    """Categorical over logits for ``Discrete``, diagonal Normal over ``(loc, scale)`` else.

    Argument validation is off (``validate_args=False``): it more than doubles the cost of
    building a distribution and taking a log-probability (~100 µs -> ~45 µs).

    >>> d = default_dist_fn(gym.spaces.Discrete(3))(torch.zeros(2, 3))
    >>> d.sample().shape
    torch.Size([2])
    """
    if isinstance(action_space, gym.spaces.Discrete):
        return lambda logits: Categorical(logits=logits, validate_args=False)
    if isinstance(action_space, gym.spaces.Box):
        return lambda ls: Independent(
            Normal(ls[0], ls[1], validate_args=False), 1, validate_args=False
        )
    raise ValueError(f"action_space: expected Discrete or Box, got {type(action_space).__name__}")


class ActorPolicy(Policy):
    """A stochastic policy ``pi(a | s) = dist_fn(actor(s))`` (Tianshou's ProbabilisticActorPolicy).

    :param actor: ``obs -> logits`` (discrete) or ``obs -> (loc, scale)`` (continuous).
    :param action_space: ``Discrete`` or ``Box``.
    :param dist_fn: ``actor output -> torch Distribution``; default :func:`default_dist_fn`.
    :param deterministic_eval: act with the distribution's mode outside training steps.
    :param action_scaling: scale bounded raw actions to the Box range (Box only; default on).
    :param action_bound_method: ``"clip"`` (default), ``"tanh"`` or ``None`` (Box only).

    The returned Batch holds ``act`` (and ``logits`` for discrete actors); the distribution
    is available as the attribute ``result.dist``.

    >>> p = ActorPolicy(actor=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, type(out.dist).__name__
    (torch.Size([3]), 'Categorical')
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        dist_fn: Any = None,
        deterministic_eval: bool = False,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: str | None = "clip",
    ) -> None:
        box = isinstance(action_space, gym.spaces.Box)
        super().__init__(
            action_space,
            observation_space,
            action_scaling=action_scaling and box,
            action_bound_method=action_bound_method if box else None,  # type: ignore[arg-type]
            deterministic_eval=deterministic_eval,
        )
        self.actor = actor
        self.dist_fn = dist_fn if dist_fn is not None else default_dist_fn(action_space)

    def dist(self, obs: Any, state: Any = None, info: Any = None) -> tuple[Distribution, Any, Any]:
        """``(distribution, actor output, new hidden state)`` for ``obs``; a recurrent
        actor (``forward(obs, state=None, info=None)``) gets ``state`` and ``info``."""
        params, hidden = call_model(self.actor, obs, state, info)
        return self.dist_fn(params), params, hidden

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """Sample an action (or take the mode when evaluating deterministically)."""
        info = batch.get("info", None)
        dist, params, hidden = self.dist(batch["obs"], state, info)
        act = dist.mode if self.deterministic else dist.sample()
        fields = {"act": act, "state": hidden}
        if isinstance(params, torch.Tensor):
            fields["logits"] = params
        out = make_batch(fields, act.shape[0])
        object.__setattr__(out, "dist", dist)
        return out


ProbabilisticActorPolicy = ActorPolicy


class OnPolicyAlgorithm(Algorithm):
    """Base of the on-policy actor-critic algorithms.

    :param policy: an :class:`ActorPolicy`.
    :param critic: ``obs -> V(s)`` (``[B]`` or ``[B, 1]``), or ``None`` (Monte-Carlo
        returns, no advantage baseline).
    :param gamma: discount factor.
    :param gae_lambda: GAE lambda.
    :param max_batchsize: chunk size of the no-grad value / log-prob passes.
    :param return_scaling: divide returns by their running standard deviation.
    :param recompute_advantage: recompute GAE with the current critic before each epoch
        after the first.
    """

    on_policy = True
    uses_logp_old: bool = True
    """Whether the loss reads ``logp_old`` (PPO, TRPO); A2C and REINFORCE do not."""

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        critic: nn.Module | None,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        max_batchsize: int = 1024,
        return_scaling: bool = False,
        recompute_advantage: bool = False,
    ) -> None:
        require_unit(gae_lambda=gae_lambda, gamma=gamma)
        require_at_least(1, max_batchsize=max_batchsize)
        super().__init__(policy)
        self.policy: ActorPolicy = policy
        self.critic = critic
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.max_batchsize = max_batchsize
        self.return_scaling = return_scaling
        self.recompute_advantage = recompute_advantage
        self.ret_rms = RunningNorm(())
        self._eps = 1e-8
        self._buffer: Any = None
        self._indices: Any = None

    def _add_joint_stage(
        self,
        losses: Any,
        optim: OptimizerFactory | float,
        max_grad_norm: float | None,
        vf_coef: float,
        ent_coef: float,
    ) -> None:
        """One optimizer for actor + critic (A2C, PPO), stepped by the stage ``losses`` on
        ``loss_objective + loss_critic + loss_entropy`` (see :meth:`joint_terms`)."""
        self.vf_coef = vf_coef
        self.ent_coef = ent_coef
        net = ActorCritic(self.policy.actor, cast(nn.Module, self.critic))
        self.optim = self._create_optimizer(net, optim, max_grad_norm)
        self._add_stage(losses, (("loss_objective", "loss_critic", "loss_entropy"), self.optim))

    def joint_terms(
        self, actor_loss: torch.Tensor, vf_loss: torch.Tensor, entropy: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """``loss_objective``, ``loss_critic = vf_coef L_v``, ``loss_entropy = -ent_coef H``
        and the unweighted ``vf_loss`` and ``entropy`` (detached)."""
        return {
            "loss_objective": actor_loss,
            "loss_critic": self.vf_coef * vf_loss,
            "loss_entropy": -self.ent_coef * entropy,
            "vf_loss": vf_loss.detach(),
            "entropy": entropy.detach(),
        }

    # -- preprocessing ------------------------------------------------------------------
    def _chunks(self, n: int) -> list[slice]:
        return [slice(i, min(i + self.max_batchsize, n)) for i in range(0, n, self.max_batchsize)]

    def values(self, obs: Any) -> torch.Tensor:
        """``V(obs) [B]`` by the critic in chunks of ``max_batchsize`` (no grad)."""
        assert self.critic is not None
        with torch.no_grad():
            return torch.cat([self.critic(obs[s]).reshape(-1) for s in self._chunks(len(obs))])

    @torch.no_grad()
    def _add_returns_and_advantages(
        self, batch: TensorDictBase, buffer: Any, indices: np.ndarray
    ) -> None:
        n = batch.shape[0]
        if self.critic is None:
            v_s = v_s_ = torch.zeros(n)
        else:
            v_s, v_s_ = self.values(batch["obs"]), self.values(batch["obs_next"])
        batch["v_s"] = v_s
        if self.return_scaling:
            std = self.ret_rms.std(self._eps)
            v_s, v_s_ = v_s * std, v_s_ * std
        lam = self.gae_lambda if self.critic is not None else 1.0
        returns, adv = compute_episodic_return(
            batch, buffer, indices, v_s_=v_s_, v_s=v_s, gamma=self.gamma, gae_lambda=lam
        )
        if self.return_scaling:
            batch["returns"] = returns / self.ret_rms.std(self._eps)
            self.ret_rms.update(returns)
        else:
            batch["returns"] = returns
        batch["adv"] = adv

    @staticmethod
    def log_prob(dist: Distribution, act: torch.Tensor) -> torch.Tensor:
        """``log pi(act)``: ``[B]`` for a joint distribution (Categorical, ``Independent``),
        ``[B, D]`` (one column per action dimension) for a per-dimension one such as a
        plain ``Normal``; Tianshou then takes one ratio per dimension."""
        lp = dist.log_prob(act)
        return lp.reshape(lp.shape[0], -1) if lp.dim() > 2 else lp

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add ``v_s``, ``returns``, ``adv`` (GAE) and ``logp_old`` (if :attr:`uses_logp_old`)."""
        self._add_returns_and_advantages(batch, buffer, indices)
        if not self.uses_logp_old:
            return batch
        with torch.no_grad():
            obs, act = batch["obs"], batch["act"]
            batch["logp_old"] = torch.cat(
                [self.log_prob(self.policy.dist(obs[s])[0], act[s]) for s in self._chunks(len(act))]
            )
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """For a TorchRL batch: one-step TD advantages ``r + gamma (1 - term) V(s') - V(s)``
        (returns ``r + gamma (1 - term) V(s')``) and ``logp_old`` from the policy's
        ``action_log_prob`` (only where :attr:`uses_logp_old`). A batch of trajectories
        ``[N, T]`` is flattened."""
        if td.batch_dims > 1:
            td = td.reshape(-1)
        if "adv" in td:
            return td
        obs_next, rew, term = self.transition_of(td)
        obs = self.obs_of(td)
        if self.critic is None:
            v_s = v_s_ = torch.zeros_like(rew)
        else:
            v_s, v_s_ = self.values(obs).to(rew.dtype), self.values(obs_next).to(rew.dtype)
        returns = rew + self.gamma * (1.0 - term) * v_s_
        td.set("v_s", v_s)
        td.set("returns", returns)
        td.set("adv", returns - v_s)
        if self.uses_logp_old and "logp_old" not in td:
            lp = self._get(td, self.tensor_keys.sample_log_prob, "sample log-prob")
            td.set("logp_old", lp.reshape(len(rew), -1))
        return td

    # -- minibatch epochs ---------------------------------------------------------------
    def _minibatches(self, n: int, batch_size: int | None) -> list[torch.Tensor]:
        perm = torch.randperm(n)
        if batch_size is None or batch_size <= 0 or batch_size >= n:
            return [perm]
        parts = list(perm.split(batch_size))
        if len(parts) > 1 and len(parts[-1]) < batch_size:  # merge_last, as in Tianshou
            last = parts.pop()
            parts[-1] = torch.cat([parts[-1], last])
        return parts

    def _update_with_batch(self, batch: Batch, batch_size: int | None, repeat: int) -> UpdateStats:
        keys = [k for k in ("obs", "act", "adv", "returns", "v_s", "logp_old") if k in batch]
        logged: dict[str, list[torch.Tensor]] = {}
        steps = 0
        for epoch in range(repeat):
            if self.recompute_advantage and epoch > 0:
                self._add_returns_and_advantages(batch, self._buffer, self._indices)
            cols = [batch[k] for k in keys]
            for idx in self._minibatches(batch.shape[0], batch_size):
                # one gather per column, one check-free TensorDict per minibatch
                mb = TensorDict._new_unsafe(
                    {k: v[idx] for k, v in zip(keys, cols)}, batch_size=torch.Size([len(idx)])
                )
                for k, v in self._run_stages(mb):
                    logged.setdefault(k, []).append(v)
                steps += 1
        # the epoch means stay on the device until read (``loss`` is their loss_* sum)
        stats = UpdateStats((k, torch.stack(v).float().mean()) for k, v in logged.items())
        stats["gradient_steps"] = float(steps)
        return stats

    def update(
        self, buffer: Any, batch_size: int | None, repeat: int = 1
    ) -> MutableMapping[str, float]:
        """See :meth:`Algorithm.update` (on-policy: the whole buffer, ``repeat`` epochs)."""
        if self.recompute_advantage:
            self._buffer, self._indices = buffer, buffer.sample_indices(0)
        try:
            return super().update(buffer, batch_size, repeat)
        finally:
            self._buffer = self._indices = None
