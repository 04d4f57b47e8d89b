"""Proximal Policy Optimization with the clipped objective (arXiv:1707.06347).

Per update, on the whole rollout buffer (chronological per env)::

    V(s), V(s')  <- critic                                  (no grad)
    A, R         <- GAE(r, V(s), V(s'), gamma, lambda)      (episode-aware, see returns.py)
    logp_old     <- log pi_old(a | s)                        (no grad)
    repeat epochs:
        (optionally recompute A, R with the current critic)
        for each shuffled minibatch:
            A'   = (A - mean A) / (std A + eps)              (advantage normalization)
            rho  = exp(log pi(a | s) - logp_old)
            L_pi = -mean(min(rho A', clip(rho, 1 - eps, 1 + eps) A'))   (optional dual clip)
            L_v  = mean((R - V(s))^2)                        (optionally value-clipped)
            L    = L_pi + vf_coef L_v - ent_coef H[pi]
            one optimizer step on actor + critic (gradient norm clipped)

With ``return_scaling`` the critic learns returns divided by their running standard
deviation (not centred), as in OpenAI baselines and Tianshou.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from tdrl.algorithm.base import Algorithm, OptimizerFactory, Policy, make_batch
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch
from tdrl.utils.net import ActorCritic
from tdrl.utils.normalize import RunningNorm

__all__ = ["PPO", "ActorPolicy", "ProbabilisticActorPolicy", "default_dist_fn"]


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


def _actor_out(out: Any) -> tuple[Any, Any]:
    """Split an actor output into (distribution input, hidden state).

    Accepts ``logits``, ``(loc, scale)``, and Tianshou-style ``(logits, state)`` /
    ``((loc, scale), state)``.
    """
    if isinstance(out, tuple) and len(out) == 2 and (isinstance(out[0], tuple) or out[1] is None):
        return out[0], out[1]
    return out, None


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

    def dist(self, obs: Any, state: Any = None) -> tuple[Distribution, Any, Any]:
        """``(distribution, actor output, hidden state)`` for ``obs``."""
        params, hidden = _actor_out(self.actor(obs))
        return self.dist_fn(params), params, hidden

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """Sample an action (or take the mode when evaluating deterministically)."""
        dist, params, hidden = self.dist(batch["obs"], state)
        act = dist.mode if self.deterministic else dist.sample()
        fields = {"act": act, "state": hidden}
        if isinstance(params, torch.Tensor):
            fields["logits"] = params
        out = make_batch(fields, act.shape[0])
        object.__setattr__(out, "dist", dist)
        return out


ProbabilisticActorPolicy = ActorPolicy


class PPO(Algorithm):
    """PPO-clip with GAE, value clipping, advantage normalization and entropy bonus.

    :param policy: an :class:`ActorPolicy`.
    :param critic: ``obs -> V(s)`` (``[B]`` or ``[B, 1]``).
    :param optim: optimizer factory (or Adam learning rate) for actor + critic together.
    :param eps_clip: ratio clip range epsilon.
    :param dual_clip: dual-clip constant ``c > 1`` (arXiv:1912.09729), ``None``: off.
    :param value_clip: clip the value update to ``eps_clip`` around the old value.
    :param advantage_normalization: normalize advantages per minibatch.
    :param recompute_advantage: recompute GAE with the current critic before each epoch
        after the first.
    :param vf_coef: weight of the value loss.
    :param ent_coef: weight of the entropy bonus.
    :param max_grad_norm: clip the gradient norm (``None``: off).
    :param gae_lambda: GAE lambda.
    :param gamma: discount factor.
    :param max_batchsize: chunk size for the no-grad value / log-prob passes.
    :param return_scaling: divide returns by their running standard deviation.
    """

    on_policy = True

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
        gae_lambda: float = 0.95,
        gamma: float = 0.99,
        max_batchsize: int = 1024,
        return_scaling: bool = False,
    ) -> None:
        if dual_clip is not None and dual_clip <= 1.0:
            raise ValueError(f"dual_clip: expected a value > 1 or None, got {dual_clip}")
        if not 0.0 <= gae_lambda <= 1.0:
            raise ValueError(f"gae_lambda: expected a value in [0, 1], got {gae_lambda}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma: expected a value in [0, 1], got {gamma}")
        super().__init__(policy)
        self.policy: ActorPolicy = policy
        self.critic = critic
        self.eps_clip = eps_clip
        self.dual_clip = dual_clip
        self.value_clip = value_clip
        self.advantage_normalization = advantage_normalization
        self.recompute_advantage = recompute_advantage
        self.vf_coef = vf_coef
        self.ent_coef = ent_coef
        self.gae_lambda = gae_lambda
        self.gamma = gamma
        self.max_batchsize = max_batchsize
        self.return_scaling = return_scaling
        self.ret_rms = RunningNorm(())
        self._eps = 1e-8
        self.optim = self._create_optimizer(ActorCritic(policy.actor, critic), optim, max_grad_norm)

    # -- preprocessing ------------------------------------------------------------------
    def _chunks(self, n: int) -> list[slice]:
        return [slice(i, min(i + self.max_batchsize, n)) for i in range(0, n, self.max_batchsize)]

    @torch.no_grad()
    def _add_returns_and_advantages(
        self, batch: TensorDictBase, buffer: Any, indices: np.ndarray
    ) -> None:
        obs, obs_next = batch["obs"], batch["obs_next"]
        sl = self._chunks(batch.shape[0])
        v_s = torch.cat([self.critic(obs[s]).reshape(-1) for s in sl])
        v_s_ = torch.cat([self.critic(obs_next[s]).reshape(-1) for s in sl])
        batch["v_s"] = v_s
        if self.return_scaling:
            std = self.ret_rms.std(self._eps)
            v_s, v_s_ = v_s * std, v_s_ * std
        returns, adv = compute_episodic_return(
            batch,
            buffer,
            indices,
            v_s_=v_s_,
            v_s=v_s,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
        )
        if self.return_scaling:
            batch["returns"] = returns / self.ret_rms.std(self._eps)
            self.ret_rms.update(returns)
        else:
            batch["returns"] = returns
        batch["adv"] = adv

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add ``v_s``, ``returns``, ``adv`` (GAE) and ``logp_old``."""
        self._add_returns_and_advantages(batch, buffer, indices)
        with torch.no_grad():
            obs, act = batch["obs"], batch["act"]
            batch["logp_old"] = torch.cat(
                [self.policy.dist(obs[s])[0].log_prob(act[s]) for s in self._chunks(len(act))]
            ).reshape(-1)
        return batch

    # -- loss ---------------------------------------------------------------------------
    def _losses(
        self,
        obs: Any,
        act: torch.Tensor,
        adv: torch.Tensor,
        returns: torch.Tensor,
        v_s: torch.Tensor,
        logp_old: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(clip_loss, vf_loss, entropy, ratio, log_ratio)`` on plain minibatch tensors."""
        dist = self.policy.dist(obs)[0]
        if self.advantage_normalization:
            adv = (adv - adv.mean()) / (adv.std() + self._eps)
        log_ratio = dist.log_prob(act).reshape(-1) - logp_old
        ratio = log_ratio.exp()
        surr1 = ratio * adv
        surr2 = ratio.clamp(1.0 - self.eps_clip, 1.0 + self.eps_clip) * adv
        clipped = torch.min(surr1, surr2)
        if self.dual_clip is not None:
            clipped = torch.where(adv < 0, torch.max(clipped, self.dual_clip * adv), clipped)
        clip_loss = -clipped.mean()
        value = self.critic(obs).reshape(-1)
        if self.value_clip:
            v_clip = v_s + (value - v_s).clamp(-self.eps_clip, self.eps_clip)
            vf_loss = torch.max((returns - value).pow(2), (returns - v_clip).pow(2)).mean()
        else:
            vf_loss = (returns - value).pow(2).mean()
        entropy = dist.entropy().mean()
        return clip_loss, vf_loss, entropy, ratio, log_ratio

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """PPO losses on a minibatch with ``obs, act, adv, returns, v_s, logp_old``.

        ``loss_objective + loss_critic + loss_entropy`` is the total loss (coefficients
        applied); ``vf_loss``, ``entropy``, ``clip_fraction`` and ``approx_kl`` are logged.
        """
        clip_loss, vf_loss, entropy, ratio, log_ratio = self._losses(
            batch["obs"],
            batch["act"],
            batch["adv"],
            batch["returns"],
            batch["v_s"],
            batch["logp_old"],
        )
        with torch.no_grad():
            clip_frac = ((ratio - 1.0).abs() > self.eps_clip).float().mean()
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
        return TensorDict(
            {
                "loss_objective": clip_loss,
                "loss_critic": self.vf_coef * vf_loss,
                "loss_entropy": -self.ent_coef * entropy,
                "vf_loss": vf_loss.detach(),
                "entropy": entropy.detach(),
                "clip_fraction": clip_frac,
                "approx_kl": approx_kl,
            },
            [],
        )

    def _minibatches(self, n: int, batch_size: int | None) -> list[torch.Tensor]:
        perm = torch.randperm(n)
        if batch_size is None or batch_size <= 0 or batch_size >= n:
            return [perm]
        parts = list(perm.split(batch_size))
        if len(parts) > 1 and len(parts[-1]) < batch_size:  # merge_last, as in Tianshou
            last = parts.pop()
            parts[-1] = torch.cat([parts[-1], last])
        return parts

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> dict[str, float]:
        keys = ["obs", "act", "adv", "returns", "v_s", "logp_old"]
        sums = {"loss": 0.0, "clip_loss": 0.0, "vf_loss": 0.0, "ent_loss": 0.0}
        steps = 0
        for epoch in range(repeat):
            if self.recompute_advantage and epoch > 0:
                self._add_returns_and_advantages(batch, self._buffer, self._indices)
            cols = [batch[k] for k in keys]
            for idx in self._minibatches(batch.shape[0], batch_size):
                # one gather per column on plain tensors: no TensorDict in the inner loop
                clip_loss, vf_loss, entropy, _, _ = self._losses(*(v[idx] for v in cols))
                loss = clip_loss + self.vf_coef * vf_loss - self.ent_coef * entropy
                self.optim.step(loss)
                steps += 1
                vals = torch.stack(
                    [loss.detach(), clip_loss.detach(), vf_loss.detach(), entropy.detach()]
                ).tolist()
                for k, v in zip(sums, vals):
                    sums[k] += v
        stats = {k: v / max(steps, 1) for k, v in sums.items()}
        stats["gradient_steps"] = float(steps)
        return stats

    def update(self, buffer: Any, batch_size: int | None, repeat: int = 1) -> dict[str, float]:
        """See :meth:`Algorithm.update` (on-policy: the whole buffer, ``repeat`` epochs)."""
        if self.recompute_advantage:
            self._buffer, self._indices = buffer, buffer.sample_indices(0)
        try:
            return super().update(buffer, batch_size, repeat)
        finally:
            self._buffer = self._indices = None
