"""Prioritized experience replay (arXiv:1511.05952): a TorchRL ``Sampler`` and the buffers.

:class:`PrioritizedSampler` keeps priorities in tdrl's own vectorized
:class:`~tdrl.data.buffer.segtree.SumMinTree` (TorchRL's C++ tree does not load with the
torch this project targets). It plugs into any ``torchrl.data.ReplayBuffer`` (and counts as
a ``torchrl.data.PrioritizedSampler`` there: ``TensorDictReplayBuffer(priority_key=...)``'s
``update_tensordict_priority`` updates it) and backs
:class:`PrioritizedReplayBuffer` / :class:`PrioritizedVectorReplayBuffer`, which keep
Tianshou's API: new transitions get the running maximum priority, ``update_weight(indices,
new_weight)`` stores ``(|new_weight| + eps) ** alpha``, ``set_beta`` changes the
importance exponent, and every indexed batch carries ``weight``.

Importance weights (tdrl's documented deviation: the minimum uses the same alpha-powered
priorities as the numerator): ``w_i = (p_i / min_j p_j) ** -beta`` with ``p = priority **
alpha`` and the minimum over all stored transitions; with ``weight_norm`` the weights are
divided by the batch maximum, which equals ``(p_i / min_{j in batch} p_j) ** -beta``.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any

import numpy as np
import torch
from torchrl.data.replay_buffers.samplers import PrioritizedSampler as TorchRLPrioritizedSampler
from torchrl.data.replay_buffers.samplers import Sampler
from torchrl.data.replay_buffers.storages import Storage

from tdrl.data.batch import Batch
from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.segtree import SumMinTree, as_index_array
from tdrl.data.buffer.vector import VectorReplayBuffer

__all__ = ["PrioritizedReplayBuffer", "PrioritizedSampler", "PrioritizedVectorReplayBuffer"]

_EPS = float(np.finfo(np.float32).eps)


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_alpha_beta(alpha: float, beta: float) -> None:
    if not (_is_real(alpha) and np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha: expected a finite number > 0, got {alpha!r}")
    if not (_is_real(beta) and np.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta: expected a finite number >= 0, got {beta!r}")


def _as_float_array(value: Any, n: int, what: str) -> np.ndarray:
    """Flatten ``value`` (scalar, array or tensor) to ``n`` finite float64 numbers."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    arr = arr.reshape(-1)
    if arr.shape[0] != n:
        raise ValueError(f"{what}: expected {n} values (one per index), got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what}: expected finite numbers, got {arr[~np.isfinite(arr)][:5]}")
    return arr


class PrioritizedSampler(Sampler):
    """Proportional prioritized sampling over a sum/min tree (TorchRL ``Sampler``).

    Args:
        max_capacity: number of slots (the storage's ``max_size``).
        alpha: prioritization exponent (> 0).
        beta: importance-sampling exponent (>= 0).
        eps: added to every priority so that none is 0.
        weight_norm: divide the returned weights by the batch maximum.

    Written slots get ``max_priority ** alpha`` (via ``mark_update``, which TorchRL writers
    call, or :meth:`init_priority`); :meth:`sample` returns ``(index, {"priority_weight":
    w})``. Randomness comes from ``self._rng`` (the replay buffer's generator).

    Example:
        >>> import torch
        >>> from torchrl.data import ReplayBuffer as TorchRLReplayBuffer, LazyTensorStorage
        >>> rb = TorchRLReplayBuffer(storage=LazyTensorStorage(8),
        ...                          sampler=PrioritizedSampler(8, alpha=1.0, beta=1.0),
        ...                          generator=torch.Generator().manual_seed(0))
        >>> rb.extend(torch.arange(4.0)).tolist()
        [0, 1, 2, 3]
        >>> rb.update_priority(torch.tensor([0, 1, 2]), torch.tensor([0.0, 0.0, 0.0]))
        >>> data, info = rb.sample(6, return_info=True)
        >>> data.tolist()
        [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
        >>> info["priority_weight"][0].item() < 1e-6
        True
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        eps: float = _EPS,
        weight_norm: bool = False,
    ) -> None:
        _check_alpha_beta(alpha, beta)
        if not (np.isfinite(eps) and eps >= 0):
            raise ValueError(f"eps: expected a finite number >= 0, got {eps!r}")
        self._alpha = float(alpha)
        self._beta = float(beta)
        self._eps = float(eps)
        self.weight_norm = bool(weight_norm)
        self._tree = SumMinTree(max_capacity)
        self._max_prio = 1.0

    # --------------------------------------------------------------- config
    @property
    def alpha(self) -> float:
        """Prioritization exponent."""
        return self._alpha

    @property
    def beta(self) -> float:
        """Importance-sampling exponent."""
        return self._beta

    def set_beta(self, beta: float) -> None:
        """Change the importance-sampling exponent (>= 0)."""
        _check_alpha_beta(self._alpha, beta)
        self._beta = float(beta)

    @property
    def max_priority(self) -> float:
        """Running maximum of the raw priorities (new data gets ``max_priority ** alpha``)."""
        return self._max_prio

    @property
    def tree(self) -> SumMinTree:
        """The underlying sum/min tree (alpha-powered priorities)."""
        return self._tree

    @property
    def default_priority(self) -> float:
        """TorchRL protocol: the raw priority of rows written without one (the running
        maximum), which TorchRL's buffers feed back through :meth:`update_priority`."""
        return self._max_prio

    reduction = "max"
    """TorchRL protocol: how ``TensorDictReplayBuffer`` reduces a row's several priorities
    (e.g. a per-action ``td_error``) to one."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(capacity={self._tree.capacity}, alpha={self._alpha}, "
            f"beta={self._beta}, max_priority={self._max_prio:.4g})"
        )

    # -------------------------------------------------------------- writing
    def init_priority(self, index: Any) -> None:
        """Give the slots at ``index`` the maximum priority seen so far."""
        idx = as_index_array(index, self._tree.capacity)
        if idx.size:
            self._tree.set_unchecked(idx, self._max_prio**self._alpha)

    def mark_update(self, index: Any, *, storage: Storage | None = None) -> None:
        """TorchRL hook called by writers for the written slots: see :meth:`init_priority`."""
        self.init_priority(index)

    def update_priority(self, index: Any, priority: Any, *, storage: Storage | None = None) -> None:
        """Set raw priorities (finite, >= 0) of the slots at ``index``.

        The tree stores ``(priority + eps) ** alpha``; the running maximum is updated.
        Bad input raises before anything changes.
        """
        idx = as_index_array(index, self._tree.capacity)
        prio = _as_float_array(priority, idx.shape[0], "priority")
        if prio.size and prio.min() < 0:
            raise ValueError(f"priority: expected numbers >= 0, got {prio[prio < 0][:5]}")
        self._set_raw(idx, prio + self._eps)

    def _set_raw(self, idx: np.ndarray, w: np.ndarray) -> None:
        if idx.size == 0:
            return
        self._tree.set_unchecked(idx, w**self._alpha)
        self._max_prio = max(self._max_prio, float(w.max()))

    # ------------------------------------------------------------- sampling
    def sample_index(self, batch_size: int, generator: torch.Generator | None) -> np.ndarray:
        """Draw ``batch_size`` slot indices with probability proportional to priority."""
        u = torch.rand(int(batch_size), generator=generator, dtype=torch.float64).numpy()
        try:
            return self._tree.sample(u)
        except ValueError as err:
            raise ValueError(
                "cannot sample: expected stored transitions, got an empty buffer"
            ) from err

    def weight(self, index: Any, normalize: bool | None = None) -> np.ndarray:
        """Importance weights of the slots at ``index`` (float64).

        Slots never written count as having the maximum priority.
        """
        idx = as_index_array(index, self._tree.capacity)
        return self._weight(idx, self.weight_norm if normalize is None else normalize)

    def _weight(self, idx: np.ndarray, normalize: bool) -> np.ndarray:
        p = self._tree._sum[0].take(idx)  # the leaves (a padded tree has more, never indexed)
        if idx.size == 0:
            return p
        if not p.all():
            p = np.where(p > 0, p, self._max_prio**self._alpha)
        lo = p.min() if normalize else self._tree.min()
        if not math.isfinite(lo):  # (a Python-level check: cheaper than np.isfinite)
            lo = p.min()
        p /= lo
        return np.power(p, -self._beta, out=p)

    def sample(self, storage: Storage, batch_size: int) -> tuple[torch.Tensor, dict]:
        """TorchRL API: ``(index, {"priority_weight": weights})``."""
        if self._tree.capacity < storage.max_size:
            raise ValueError(
                f"max_capacity: expected >= the storage size {storage.max_size}, "
                f"got {self._tree.capacity}"
            )
        idx = self.sample_index(batch_size, self._rng)
        w = self.weight(idx)
        return torch.from_numpy(idx), {"priority_weight": torch.from_numpy(w)}

    # ---------------------------------------------------------- persistence
    def _empty(self) -> None:
        self._tree.clear()
        self._max_prio = 1.0

    def state_dict(self) -> dict[str, Any]:
        """Exponents, running maximum and the tree leaves."""
        return {
            "alpha": self._alpha,
            "beta": self._beta,
            "eps": self._eps,
            "weight_norm": self.weight_norm,
            "max_prio": self._max_prio,
            "tree": self._tree.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Inverse of :meth:`state_dict`."""
        tree = state_dict["tree"]
        if int(tree["capacity"]) != self._tree.capacity:
            self._tree = SumMinTree(int(tree["capacity"]))
        self._tree.load_state_dict(tree)
        self._alpha = float(state_dict["alpha"])
        self._beta = float(state_dict["beta"])
        self._eps = float(state_dict["eps"])
        self.weight_norm = bool(state_dict.get("weight_norm", self.weight_norm))
        self._max_prio = float(state_dict["max_prio"])

    def dumps(self, path: Any) -> None:
        """Write the state under directory ``path`` (``meta.json`` + ``tree.npz``)."""
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        state = self.state_dict()
        tree = state.pop("tree")
        np.savez(os.path.join(path, "tree.npz"), **tree)
        with open(os.path.join(path, "meta.json"), "w") as f:
            json.dump(state, f)

    def loads(self, path: Any) -> None:
        """Inverse of :meth:`dumps`."""
        path = os.fspath(path)
        with open(os.path.join(path, "meta.json")) as f:
            state = json.load(f)
        with np.load(os.path.join(path, "tree.npz")) as z:
            state["tree"] = {k: z[k] for k in z.files}
        self.load_state_dict(state)


# TorchRL's buffers dispatch prioritized updates on ``isinstance(sampler,
# torchrl.data.PrioritizedSampler)`` (``TensorDictReplayBuffer.update_tensordict_priority``,
# the priority of rows already stored, TorchRL's trainer hooks); TorchRL's own class cannot
# run here (its C++ sum tree does not load), so tdrl's sampler is registered as a virtual
# subclass: it follows the same protocol (``update_priority(index, priority, storage=)``,
# ``mark_update``, ``default_priority``, ``reduction``, ``sample`` returning
# ``priority_weight``).
TorchRLPrioritizedSampler.register(PrioritizedSampler)


class _PrioritizedMixin:
    """Tianshou's prioritized-buffer API on top of a tdrl ``ReplayBuffer``."""

    _sampler: Any
    _rng: torch.Generator
    maxsize: int

    def _init_prio(self, alpha: float, beta: float, weight_norm: bool) -> None:
        sampler = PrioritizedSampler(self.maxsize, alpha, beta, weight_norm=weight_norm)
        self.set_sampler(sampler)  # type: ignore[attr-defined]
        sampler._rng = self._rng
        self._weight_norm = bool(weight_norm)

    @property
    def prio_sampler(self) -> PrioritizedSampler:
        """The buffer's :class:`PrioritizedSampler`."""
        return self._sampler

    @property
    def weight(self) -> Any:
        """The priority tree (Tianshou's ``weight``): ``buf.weight[idx]`` are the
        ``priority ** alpha`` values sampling uses."""
        return self._sampler._tree

    @property
    def options(self) -> dict[str, Any]:
        """Constructor options, including ``alpha`` and ``beta``."""
        opts = dict(super().options)  # type: ignore[misc]
        opts.update(alpha=self._sampler.alpha, beta=self._sampler.beta)
        return opts

    def _constructor_kwargs(self) -> dict[str, Any]:
        kw = dict(super()._constructor_kwargs())  # type: ignore[misc]
        kw.update(alpha=self._sampler.alpha, beta=self._sampler.beta, weight_norm=self._weight_norm)
        return kw

    def init_weight(self, index: Any) -> None:
        """Give the transitions at ``index`` the maximum priority seen so far."""
        self._sampler.init_priority(index)

    def add(
        self, batch: Any, buffer_ids: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Add like ``ReplayBuffer.add``; the new transitions get the maximum priority."""
        out = super().add(batch, buffer_ids)  # type: ignore[misc]
        if len(out[0]):
            self._sampler._tree.set_unchecked(out[0], self._sampler._max_prio**self._sampler.alpha)
        return out

    def update(self, buffer: Any) -> np.ndarray:
        """Append ``buffer``'s data like ``ReplayBuffer.update``; new data gets max priority."""
        indices = super().update(buffer)  # type: ignore[misc]
        self.init_weight(indices)
        return indices

    def reset(self, keep_statistics: bool = False) -> None:
        """Forget all data and priorities (the running maximum priority is kept)."""
        super().reset(keep_statistics)  # type: ignore[misc]
        keep = self._sampler.max_priority
        self._sampler._empty()
        self._sampler._max_prio = keep

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """``n > 0``: ``n`` draws proportional to priority; otherwise as ``ReplayBuffer``."""
        if batch_size is not None and batch_size > 0:
            return self._sampler.sample_index(batch_size, self._rng)
        return super().sample_indices(batch_size)  # type: ignore[misc]

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:
        """``(self[indices], indices)`` with ``indices = sample_indices(batch_size)``."""
        if batch_size is not None and batch_size > 0 and len(self):  # type: ignore[arg-type]
            idx = self._sampler.sample_index(batch_size, self._rng)
            return self._gather(idx), idx  # drawn indices are valid: no index checks
        return super().sample(batch_size)  # type: ignore[misc]

    def get_weight(self, index: Any) -> np.ndarray:
        """Un-normalised importance weights ``(p_i / min_j p_j) ** -beta`` at ``index``."""
        return self._sampler.weight(index, normalize=False)

    def update_weight(self, index: Any, new_weight: Any) -> None:
        """Set priorities ``|new_weight| + eps`` at ``index`` (e.g. signed TD errors).

        ``index`` must point at stored transitions and ``new_weight`` hold one finite
        number per index; otherwise a ``ValueError``/``IndexError`` is raised and nothing
        changes.
        """
        sampler = self._sampler
        idx = as_index_array(index, self.maxsize, "index")
        # every stored slot holds a positive priority when eps > 0
        if not (sampler._eps > 0 and sampler.tree.leaves.take(idx).all()):
            stored = sampler.tree.is_set(idx)
            if not stored.all():
                raise IndexError(
                    f"index: expected indices of stored transitions, got empty slots "
                    f"{idx[~stored][:5].tolist()}"
                )
        w = _as_float_array(new_weight, idx.shape[0], "new_weight")
        w = np.abs(w)  # a new array: the caller's one is never modified
        w += sampler._eps
        sampler._set_raw(idx, w)

    def set_beta(self, beta: float) -> None:
        """Change the importance-sampling exponent (>= 0)."""
        self._sampler.set_beta(beta)

    def dropnull(self) -> None:
        """Drop NaN rows like ``ReplayBuffer.dropnull``; the kept rows get the max priority."""
        super().dropnull()  # type: ignore[misc]
        keep = self._sampler.max_priority
        self._sampler._empty()
        self._sampler._max_prio = keep
        self.init_weight(super().sample_indices(0))  # type: ignore[misc]

    def save_group(self, grp: Any, compression: str | None = None) -> None:
        """Save like ``ReplayBuffer.save_group``, plus the priorities (subgroup ``prio``)."""
        super().save_group(grp, compression)  # type: ignore[misc]
        state = self._sampler.state_dict()
        prio = grp.create_group("prio")
        prio.create_dataset("values", data=state["tree"]["values"], compression=compression)
        prio.create_dataset("is_set", data=state["tree"]["is_set"], compression=compression)
        for name in ("alpha", "beta", "eps", "max_prio"):
            prio.attrs[name] = state[name]

    @classmethod
    def load_group(cls, grp: Any, device: str | None = None) -> Any:
        """Rebuild a buffer saved by :meth:`save_group`, priorities included."""
        buf = super().load_group(grp, device)  # type: ignore[misc]
        sampler = buf._sampler
        if "prio" in grp:
            prio = grp["prio"]
            state = {name: prio.attrs[name] for name in ("alpha", "beta", "eps", "max_prio")}
            state["weight_norm"] = sampler.weight_norm
            state["tree"] = {
                "capacity": sampler.tree.capacity,
                "values": prio["values"][()],
                "is_set": prio["is_set"][()],
            }
            sampler.load_state_dict(state)
        else:  # a plain buffer's file: every stored transition gets the max priority
            buf.init_weight(ReplayBuffer.sample_indices(buf, 0))
        return buf

    def _gather(self, idx: np.ndarray, extra: dict[str, Any] | None = None) -> Batch:
        w = self._sampler._weight(idx, self._weight_norm)
        weight = {"weight": torch.from_numpy(w.astype(np.float32))}
        if extra:
            weight.update(extra)
        return super()._gather(idx, weight)  # type: ignore[misc]


class PrioritizedReplayBuffer(_PrioritizedMixin, ReplayBuffer):
    """Prioritized experience replay with Tianshou's API.

    Args:
        size: capacity.
        alpha: prioritization exponent (> 0).
        beta: importance-sampling exponent (>= 0).
        weight_norm: normalise each batch's ``weight`` by its maximum.
        kwargs: the other ``ReplayBuffer`` options (``seed``, ``stack_num``, ...).

    Example:
        >>> buf = PrioritizedReplayBuffer(8, alpha=1.0, beta=1.0, seed=0)
        >>> for i in range(4):
        ...     _ = buf.add({"obs": i, "act": 0, "rew": 0.0, "terminated": False,
        ...                  "truncated": False})
        >>> buf.update_weight([0, 1, 2, 3], [1.0, 1.0, 1.0, -5.0])  # |TD error|
        >>> batch, idx = buf.sample(2000)
        >>> 0.58 < float((idx == 3).mean()) < 0.67  # 5 / (1 + 1 + 1 + 5)
        True
        >>> [round(w, 4) for w in buf[[0, 3]].weight.tolist()]
        [1.0, 0.2]
    """

    def __init__(
        self, size: int, alpha: float, beta: float, weight_norm: bool = True, **kwargs: Any
    ) -> None:
        _check_alpha_beta(alpha, beta)
        super().__init__(size, **kwargs)
        self._init_prio(alpha, beta, weight_norm)


class PrioritizedVectorReplayBuffer(_PrioritizedMixin, VectorReplayBuffer):
    """Prioritized replay over ``buffer_num`` sub-buffers sharing one priority tree.

    Example:
        >>> buf = PrioritizedVectorReplayBuffer(8, 2, alpha=0.6, beta=0.4, seed=0)
        >>> ptr, *_ = buf.add({"obs": [1, 2], "act": [0, 0], "rew": [0.0, 0.0],
        ...                    "terminated": [False, True], "truncated": [False, False]})
        >>> ptr.tolist(), sorted(set(buf.sample_indices(20).tolist()))
        ([0, 4], [0, 4])
    """

    def __init__(
        self,
        total_size: int,
        buffer_num: int,
        alpha: float,
        beta: float,
        weight_norm: bool = True,
        **kwargs: Any,
    ) -> None:
        _check_alpha_beta(alpha, beta)
        super().__init__(total_size, buffer_num, **kwargs)
        self._init_prio(alpha, beta, weight_norm)
