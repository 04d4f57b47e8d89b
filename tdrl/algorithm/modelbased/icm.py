"""The Intrinsic Curiosity Module (Pathak et al., arXiv:1705.05363) as a wrapper.

:class:`ICM` wraps any algorithm with a discrete action space (off- or on-policy) and adds
a curiosity bonus to its reward and a self-supervised loss on its own optimizer::

    phi1, phi2 = phi(s), phi(s')                                  (feature net)
    phi2^     = f([phi1, onehot(a)])                              (forward model)
    a^        = g([phi1, phi2])                                   (inverse model, logits)
    e         = 1/2 ||phi2^ - phi2||^2                            (per transition)
    r        <- r + reward_scale * e                              (before the wrapped
                                                                   algorithm's targets)
    L_ICM     = lr_scale ((1 - beta) CE(a^, a) + beta mean(e))   (after its update)

Per update (tdrl's path): sample, add the bonus to the batch's ``rew`` (no gradient),
the wrapped algorithm's ``preprocess`` (its targets), its update on the batch (its
minibatch epochs, for an on-policy one), then one ICM step on the whole batch, then the
extrinsic reward is restored. This is Tianshou's ``ICMOffPolicyWrapper`` /
``ICMOnPolicyWrapper``. As there, the bonus reaches the targets that read the batch's
reward: GAE of the on-policy algorithms, and the one-step targets of a TorchRL batch;
the n-step targets of the off-policy algorithms read rewards from the buffer, so with DQN
the bonus is computed and logged but does not change its target (Tianshou's behaviour).
``bonus_in_targets=True`` (tdrl's option, off by default) adds it there too: the
discounted bonuses along each sampled transition's n-step chain (cut where the return is
cut), ``sum_k gamma^k reward_scale e(t + k)``, are added to the wrapped algorithm's
``returns``.

TorchRL: ``loss(td)`` adds the bonus to the batch's reward (on a shallow copy), returns
the wrapped algorithm's ``loss_*`` terms at that reward and the ICM terms
``loss_icm_inverse`` and ``loss_icm_forward`` (which reach only the ICM's parameters).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_unit
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.returns import compute_nstep_return
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data.batch import Batch
from tdrl.utils.net import MLP, curiosity_terms

__all__ = ["ICM", "IntrinsicCuriosityModule"]


class _BonusView:
    """A buffer seen with the bonus as its reward (for :meth:`ICM.nstep_bonus`)."""

    def __init__(self, buffer: Any, rew: np.ndarray) -> None:
        self._buffer, self.rew = buffer, rew
        self.done, self.terminated = buffer.done, buffer.terminated
        self.maxsize = getattr(buffer, "maxsize", rew.shape[0])

    def next(self, index: np.ndarray) -> Any:
        return self._buffer.next(index)

    def unfinished_index(self) -> Any:
        return self._buffer.unfinished_index()


class IntrinsicCuriosityModule(nn.Module):
    """Feature net ``phi``, forward model ``f`` and inverse model ``g`` of ICM.

    :param feature_net: ``obs -> [B, feature_dim]`` features.
    :param feature_dim: width of the features.
    :param action_dim: number of discrete actions.
    :param hidden_sizes: hidden layers of the forward and inverse models (ReLU MLPs).

    >>> icm = IntrinsicCuriosityModule(feature_net=torch.nn.Linear(4, 8), feature_dim=8,
    ...                                action_dim=2, hidden_sizes=(16,))
    >>> err, logits = icm(torch.zeros(3, 4), torch.tensor([0, 1, 1]), torch.ones(3, 4))
    >>> err.shape, logits.shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        feature_net: nn.Module,
        feature_dim: int,
        action_dim: int,
        hidden_sizes: Sequence[int] = (),
    ) -> None:
        super().__init__()
        if feature_dim < 1 or action_dim < 1:
            raise ValueError(
                f"feature_dim, action_dim: expected ints >= 1, got {feature_dim}, {action_dim}"
            )
        self.feature_net = feature_net
        self.forward_model = MLP(feature_dim + action_dim, feature_dim, hidden_sizes)
        self.inverse_model = MLP(2 * feature_dim, action_dim, hidden_sizes)
        self.feature_dim = feature_dim
        self.action_dim = action_dim

    def forward(
        self, obs: torch.Tensor, act: torch.Tensor, obs_next: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(forward error e [B], inverse-model logits [B, action_dim])``."""
        param = next(self.parameters())
        s1 = torch.as_tensor(obs, dtype=param.dtype, device=param.device)
        s2 = torch.as_tensor(obs_next, dtype=param.dtype, device=param.device)
        phi1, phi2 = self.feature_net(s1), self.feature_net(s2)
        return curiosity_terms(
            phi1, phi2, act, self.action_dim, self.forward_model, self.inverse_model
        )


class ICM(Algorithm):
    """Wrap ``wrapped`` with the intrinsic curiosity module (see the module docstring).

    :param wrapped: the algorithm to wrap (discrete actions); Tianshou's keyword
        ``wrapped_algorithm=`` is accepted too.
    :param model: an :class:`IntrinsicCuriosityModule`, or any module ``(obs, act,
        obs_next) -> (forward error [B], inverse logits [B, n_actions])`` (e.g.
        :class:`tdrl.utils.tianshou_net.discrete.IntrinsicCuriosityModule`).
    :param optim: optimizer factory (or Adam learning rate) for ``model``.
    :param lr_scale: multiplier of the ICM loss.
    :param reward_scale: multiplier of the forward error in the bonus.
    :param forward_loss_weight: ``beta`` in ``[0, 1]``, the forward loss's share.
    :param bonus_in_targets: also add the bonus to an off-policy algorithm's n-step
        ``returns`` (which read the buffer's rewards); off: Tianshou's behaviour.

    ``policy`` is the wrapped algorithm's; ``state_dict`` holds both algorithms' states.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    >>> pol = DQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    >>> dqn = DQN(policy=pol)
    >>> icm = ICM(wrapped=dqn, model=IntrinsicCuriosityModule(
    ...     feature_net=torch.nn.Linear(4, 8), feature_dim=8, action_dim=2))
    >>> icm.policy is dqn.policy, icm.on_policy
    (True, False)
    >>> ICM(wrapped_algorithm=dqn, model=icm.model).wrapped is dqn  # Tianshou's keyword
    True
    >>> ICM(wrapped=dqn, model=icm.model, forward_loss_weight=2.0)
    Traceback (most recent call last):
    ...
    ValueError: forward_loss_weight: expected a value in [0, 1], got 2.0
    """

    PARAMETER_ALIASES: ClassVar[dict[str, str]] = {
        **Algorithm.PARAMETER_ALIASES,
        "wrapped_algorithm": "wrapped",
    }
    """Tianshou 2.0's ``ICMOffPolicyWrapper(wrapped_algorithm=...)`` is ``wrapped=``."""

    def __init__(
        self,
        *,
        wrapped: Algorithm,
        model: nn.Module,
        optim: OptimizerFactory | float = 1e-3,
        lr_scale: float = 1.0,
        reward_scale: float = 0.01,
        forward_loss_weight: float = 0.2,
        bonus_in_targets: bool = False,
    ) -> None:
        require_unit(forward_loss_weight=forward_loss_weight)
        if lr_scale < 0 or reward_scale < 0:
            raise ValueError(
                f"lr_scale, reward_scale: expected values >= 0, got {lr_scale}, {reward_scale}"
            )
        if not isinstance(wrapped, Algorithm):
            raise TypeError(f"wrapped: expected a tdrl Algorithm, got {type(wrapped).__name__}")
        super().__init__(wrapped.policy)
        self.wrapped = wrapped
        self.on_policy = wrapped.on_policy
        self.model = model
        self.lr_scale = lr_scale
        self.reward_scale = reward_scale
        self.forward_loss_weight = forward_loss_weight
        self.bonus_in_targets = bonus_in_targets
        self.icm_optim = self._create_optimizer(model, optim)
        self._add_stage(self.icm_losses, (("loss_icm_inverse", "loss_icm_forward"), self.icm_optim))

    # -- the bonus and the loss ---------------------------------------------------------
    def _act(self, td: TensorDictBase) -> torch.Tensor:
        act = self.wrapped.act_of(td)
        return act.reshape(act.shape[0], -1).argmax(-1) if act.dim() > 1 else act

    def intrinsic_reward(self, td: TensorDictBase) -> torch.Tensor:
        """``reward_scale * e`` ``[B]`` of a batch (no gradient)."""
        obs_next = self.wrapped._get(td, self.wrapped.next_obs_key, "next observation")
        with torch.no_grad():
            err, _ = self.model(self.wrapped.obs_of(td), self._act(td), obs_next)
        return self.reward_scale * err

    def icm_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_icm_inverse = lr_scale (1 - beta) CE``, ``loss_icm_forward = lr_scale beta
        mean(e)``; ``icm_inverse_loss`` / ``icm_forward_loss`` (unscaled) are logged."""
        obs_next = self.wrapped._get(td, self.wrapped.next_obs_key, "next observation")
        act = self._act(td)
        err, logits = self.model(self.wrapped.obs_of(td), act, obs_next)
        inverse = F.cross_entropy(logits, act.to(logits.device).long())
        forward = err.mean()
        beta, scale = self.forward_loss_weight, self.lr_scale
        return {
            "loss_icm_inverse": scale * (1.0 - beta) * inverse,
            "loss_icm_forward": scale * beta * forward,
            "icm_inverse_loss": inverse.detach(),
            "icm_forward_loss": forward.detach(),
        }

    # -- tdrl's path --------------------------------------------------------------------
    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the bonus to ``rew`` (the extrinsic reward kept under ``rew_extrinsic``), then
        the wrapped algorithm's preprocess."""
        rew = batch["rew"]
        bonus = self.intrinsic_reward(batch).to(device=rew.device)
        batch["rew_extrinsic"] = rew
        batch["rew"] = (rew + bonus.to(rew.dtype)) if rew.is_floating_point() else rew + bonus
        batch = self.wrapped.preprocess(batch, buffer, indices)
        if self.bonus_in_targets and not self.on_policy and "returns" in batch:
            ret = batch["returns"]
            extra = self.nstep_bonus(buffer, indices).to(device=ret.device, dtype=ret.dtype)
            batch["returns"] = ret + extra.reshape(-1, *([1] * (ret.dim() - 1)))
        return batch

    def nstep_bonus(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        """``sum_k gamma^k reward_scale e(t + k)`` ``[B]`` along each index's n-step chain
        (the wrapped algorithm's ``n_step`` and ``gamma``), cut where
        :func:`~tdrl.algorithm.returns.compute_nstep_return` cuts the return; the bonus is
        computed on the chains' transitions only."""
        n_step = int(getattr(self.wrapped, "n_step", 1))
        gamma = float(getattr(self.wrapped, "gamma", 0.99))
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        chain = [idx]
        for _ in range(1, n_step):
            chain.append(np.asarray(buffer.next(chain[-1]), dtype=np.int64))
        rows = np.unique(np.concatenate(chain))
        done = np.asarray(buffer.done)
        bonus = np.zeros(done.shape[0])
        bonus[rows] = self.intrinsic_reward(buffer[rows]).double().cpu().numpy()
        view = _BonusView(buffer, bonus)
        zero = lambda _buf, i: torch.zeros(len(i), dtype=torch.float64)  # noqa: E731
        out = compute_nstep_return({}, view, idx, zero, gamma=gamma, n_step=n_step)
        return out["returns"].reshape(-1)  # type: ignore[no-any-return]

    def postprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> None:
        """The wrapped algorithm's postprocess, then restore the extrinsic reward."""
        self.wrapped.postprocess(batch, buffer, indices)
        batch["rew"] = batch["rew_extrinsic"]
        del batch["rew_extrinsic"]

    def _update_with_batch(self, batch: Batch, batch_size: int | None, repeat: int) -> UpdateStats:
        """The wrapped algorithm's update on the batch, then one ICM step on all of it
        (``loss`` sums both's terms)."""
        stats = self.wrapped._update_with_batch(batch, batch_size, repeat)
        if not isinstance(stats, UpdateStats):
            stats = UpdateStats((k, v) for k, v in stats.items() if k != "loss")
        return stats.merge(UpdateStats(self._run_stages(batch)))

    def update(
        self, buffer: Any, batch_size: int | None, repeat: int = 1
    ) -> MutableMapping[str, float]:
        """See :meth:`Algorithm.update`; the wrapped algorithm's schedulers and counters
        advance as if it had been updated itself."""
        w = self.wrapped
        if self.on_policy and getattr(w, "recompute_advantage", False) and buffer is not None:
            w._buffer, w._indices = buffer, buffer.sample_indices(0)  # type: ignore[attr-defined]
        w._in_update = True
        try:
            stats = super().update(buffer, batch_size, repeat)
        finally:
            w._in_update = False
            if hasattr(w, "_buffer"):
                w._buffer = w._indices = None  # type: ignore[attr-defined]
        if stats:
            for sched in w.lr_schedulers:
                sched.step()
            w.n_updates += 1
        return stats

    def load_state_dict(  # type: ignore[override]
        self, state_dict: Any, strict: bool = True, assign: bool = False
    ) -> Any:
        """Inverse of :meth:`state_dict`: the wrapped algorithm loads its own entries
        (``wrapped.*``, its optimizers and counters included), the wrapper the rest."""
        sd = dict(state_dict)
        inner = {k[len("wrapped.") :]: sd.pop(k) for k in list(sd) if k.startswith("wrapped.")}
        self.wrapped.load_state_dict(inner, strict=strict, assign=assign)
        res = super().load_state_dict(sd, strict=False, assign=assign)
        missing = [k for k in res.missing_keys if not k.startswith("wrapped.")]
        if strict and (missing or res.unexpected_keys):
            raise RuntimeError(
                f"ICM.load_state_dict: missing keys {missing}, unexpected keys "
                f"{res.unexpected_keys}"
            )
        return res

    # -- TorchRL's path -----------------------------------------------------------------
    def set_keys(self, **kwargs: Any) -> None:
        """Set the keys of the wrapper and of the wrapped algorithm (and its policy)."""
        self.wrapped.set_keys(**kwargs)
        super().set_keys(**kwargs)

    def forward(self, td: TensorDictBase) -> TensorDict:
        """The wrapped algorithm's terms with the bonus in the reward, plus the ICM terms."""
        if td.batch_dims > 1:
            td = td.reshape(-1)
        td = td.copy()  # shallow: the caller's reward stays extrinsic
        key = self.wrapped.reward_key
        rew = self.wrapped._get(td, key, "reward")
        bonus = self.intrinsic_reward(td).to(device=rew.device, dtype=rew.dtype)
        td.set(key, rew + bonus.reshape(rew.shape))
        out = self.wrapped(td)
        out.update(self.icm_losses(td))
        return out
