"""Hindsight Experience Replay (arXiv:1707.01495), "future" strategy, online sampling.

Observations are dicts with ``observation``, ``achieved_goal`` and ``desired_goal``.
Every ``sample_indices`` call (so every ``sample``) picks ``int(E * (1 - 1/future_k))`` of
the ``E`` distinct episodes among the sampled transitions and, for each, a future step
``f`` of the episode (uniform between its latest sampled step and its end); the episode's
rows from its earliest sampled step to its end get ``desired_goal`` (in ``obs`` and
``obs_next``) replaced by the ``achieved_goal`` reached at ``f`` and ``rew`` recomputed by
``compute_reward_fn(achieved_goal_next, new_goal)``.

As in Tianshou, the relabelled values are written into the storage for the current batch,
so that ``buf[indices]``, ``buf.rew`` and n-step returns computed through the buffer all see
the same relabelled episode; the originals are cached and written back before the next
``add``, ``sample``/``sample_indices``, ``update``, ``reset``, save, ``set_batch``,
``dropnull``, ``state_dict``/``dumps`` or pickling. Goals never come from another episode
or another sub-buffer (``next`` stops at episode ends and ring edges).
"""

from __future__ import annotations

import functools
import numbers
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tdrl.data.buffer import persist
from tdrl.data.buffer.base import ReplayBuffer
from tdrl.data.buffer.vector import VectorReplayBuffer

__all__ = ["HERReplayBuffer", "HERVectorReplayBuffer"]

_GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class _HERMixin:
    """Tianshou's HER relabelling on top of a tdrl ``ReplayBuffer``."""

    _storage: Any
    _rng: torch.Generator
    _save_obs_next: bool

    def _init_her(
        self,
        compute_reward_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
        horizon: int,
        future_k: float,
    ) -> None:
        self.compute_reward_fn = compute_reward_fn
        self.horizon = int(horizon)
        self.future_k = float(future_k)
        self.future_p = 1.0 - 1.0 / self.future_k
        self._her_cache: tuple[np.ndarray, dict[tuple[str, ...], np.ndarray]] | None = None

    @staticmethod
    def _check_her_args(
        compute_reward_fn: Any, horizon: Any, future_k: Any, kwargs: dict[str, Any]
    ) -> None:
        if not callable(compute_reward_fn):
            raise TypeError(
                f"compute_reward_fn: expected a callable, got {type(compute_reward_fn).__name__}"
            )
        if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
            raise ValueError(f"horizon: expected an int >= 1, got {horizon!r}")
        if not isinstance(future_k, numbers.Real) or np.isnan(float(future_k)) or future_k < 1:
            raise ValueError(
                f"future_k: expected a number >= 1 (inf: relabel all), got {future_k!r}"
            )
        if int(kwargs.get("stack_num", 1)) != 1 or kwargs.get("save_only_last_obs", False):
            raise ValueError(
                "stack_num/save_only_last_obs: HER buffers expected stack_num=1 and "
                f"save_only_last_obs=False, got {kwargs.get('stack_num', 1)} and "
                f"{kwargs.get('save_only_last_obs', False)}"
            )

    def _constructor_kwargs(self) -> dict[str, Any]:
        kw = dict(super()._constructor_kwargs())  # type: ignore[misc]
        kw.update(horizon=self.horizon, future_k=self.future_k)
        return kw  # compute_reward_fn is stored pickled, next to the JSON config

    # ------------------------------------------------------------- storage
    def _read(self, key: tuple[str, ...], rows: np.ndarray) -> np.ndarray:
        st = self._storage
        col = st.np_columns.get(key)
        if col is not None:
            return col[rows]
        return st.columns[key][torch.as_tensor(rows)].cpu().numpy()

    def _restore_cache(self) -> None:
        """Write the original goals and rewards back (no-op when nothing is relabelled)."""
        cache = self._her_cache
        if cache is None:
            return
        rows, saved = cache
        self._her_cache = None
        for key, val in saved.items():
            self._storage._write(key, rows, val)

    # ----------------------------------------------------- restore triggers
    def add(
        self, batch: Any, buffer_ids: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Add like ``ReplayBuffer.add``; ``obs`` (and ``obs_next``) must hold the goal keys."""
        self._restore_cache()
        getter = batch.get if hasattr(batch, "get") else None
        for name in ("obs", "obs_next"):
            group = getter(name, None) if getter is not None else None
            if group is None and name == "obs_next":
                continue  # optional (e.g. ignore_obs_next)
            names = set(group.keys()) if group is not None and hasattr(group, "keys") else set()
            missing = [k for k in _GOAL_KEYS if k not in names]
            if missing:
                raise ValueError(
                    f"{name}: expected a dict with keys {list(_GOAL_KEYS)}, got "
                    f"{sorted(names) if names else type(group).__name__} (missing {missing})"
                )
        return super().add(batch, buffer_ids)  # type: ignore[misc]

    def update(self, buffer: Any) -> np.ndarray:
        """Append ``buffer``'s data like ``ReplayBuffer.update`` (originals restored first)."""
        self._restore_cache()
        if isinstance(buffer, _HERMixin):
            buffer._restore_cache()
        return super().update(buffer)  # type: ignore[misc]

    def reset(self, keep_statistics: bool = False) -> None:
        """Restore the originals, then reset like ``ReplayBuffer.reset``."""
        self._restore_cache()
        super().reset(keep_statistics)  # type: ignore[misc]

    def save_group(self, grp: Any, compression: str | None = None) -> None:
        """Restore the originals, then save like ``ReplayBuffer.save_group``.

        ``compute_reward_fn`` is stored pickled (it must be picklable, e.g. a module-level
        function), as Tianshou does.
        """
        self._restore_cache()
        try:
            fn_bytes = pickle.dumps(self.compute_reward_fn)
        except Exception as err:
            raise TypeError(
                "compute_reward_fn: expected a picklable callable to save the buffer, got "
                f"{self.compute_reward_fn!r}"
            ) from err
        super().save_group(grp, compression)  # type: ignore[misc]
        grp.attrs["her_compute_reward_fn"] = np.void(fn_bytes)

    @classmethod
    def load_group(cls, grp: Any, device: str | None = None) -> Any:
        """Rebuild a buffer saved by :meth:`save_group` (``compute_reward_fn`` unpickled)."""
        fn = pickle.loads(grp.attrs["her_compute_reward_fn"].tobytes())
        factory: Any = functools.partial(cls, compute_reward_fn=fn)  # type: ignore[call-arg]
        return persist.load_group(factory, grp, device)

    def set_batch(self, batch: Any) -> None:
        """Drop the relabelling cache (the columns are replaced), then ``set_batch``."""
        self._her_cache = None
        super().set_batch(batch)  # type: ignore[misc]

    def dropnull(self) -> None:
        """Restore the originals, then ``dropnull``."""
        self._restore_cache()
        super().dropnull()  # type: ignore[misc]

    def state_dict(self) -> dict[str, Any]:
        """Restore the originals, then the TorchRL ``state_dict``."""
        self._restore_cache()
        return super().state_dict()  # type: ignore[misc]

    def dumps(self, path: Any) -> None:
        """Restore the originals, then the TorchRL ``dumps``."""
        self._restore_cache()
        super().dumps(path)  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        self._restore_cache()
        return super().__getstate__()  # type: ignore[misc]

    def __getitem__(self, index: Any) -> Any:
        """Like ``ReplayBuffer.__getitem__``; ``buf[:]`` is the stored (un-relabelled) data."""
        if isinstance(index, slice) and index == slice(None):
            self._restore_cache()
            return self._gather(ReplayBuffer.sample_indices(self, 0))  # type: ignore[arg-type, attr-defined]
        return super().__getitem__(index)  # type: ignore[misc]

    # ------------------------------------------------------------ sampling
    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Sample like ``ReplayBuffer.sample_indices``, then relabel (see the module doc)."""
        self._restore_cache()
        indices = super().sample_indices(batch_size)  # type: ignore[misc]
        self.rewrite_transitions(indices)
        return indices

    def _ring_geometry(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        size = int(self._storage.ring_size)
        base = (idx // size) * size
        return base, idx - base, size

    def rewrite_transitions(self, indices: np.ndarray) -> None:
        """Relabel the episodes of ``indices`` in the storage (undone by the next mutation)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._restore_cache()
        if idx.size == 0:
            return
        st = self._storage
        traj = np.empty((self.horizon, idx.size), dtype=np.int64)
        traj[0] = idx
        for k in range(1, self.horizon):
            traj[k] = st.next(traj[k - 1])
        terminal = traj[-1]
        base, local, size = self._ring_geometry(idx)
        dist = (terminal - base - local) % size  # steps from each sample to its episode end
        u = torch.rand(idx.size, generator=self._rng, dtype=torch.float64).numpy()
        future_t = base + (local + np.round(u * dist).astype(np.int64)) % size
        # group by episode (terminal); earliest sample (max dist) first, latest (min dist) last
        order = np.lexsort((-dist, terminal))
        term_sorted = terminal[order]
        first = np.flatnonzero(np.r_[True, term_sorted[1:] != term_sorted[:-1]])
        last = np.r_[first[1:] - 1, term_sorted.size - 1]
        n_eps = first.size
        n_her = int(n_eps * self.future_p)
        if n_her == 0:
            return
        pick = torch.randperm(n_eps, generator=self._rng)[:n_her].numpy()
        open_col = order[first[pick]]  # earliest sampled transition of each chosen episode
        close_col = order[last[pick]]  # latest one: the goal comes from its future
        rows = traj[:, open_col]  # (H, n_her): the episode from its earliest sample to its end
        src = future_t[close_col]
        if self._save_obs_next:
            goal = self._read(("obs_next", "achieved_goal"), src)
        else:
            goal = self._read(("obs", "achieved_goal"), st.next(src))
        flat = rows.reshape(-1)
        goal_rows = np.broadcast_to(goal[None], (self.horizon, *goal.shape)).reshape(
            flat.size, *goal.shape[1:]
        )
        if self._save_obs_next:
            ach_next = self._read(("obs_next", "achieved_goal"), flat)
        else:
            ach_next = self._read(("obs", "achieved_goal"), st.next(flat))
        rew = np.asarray(self.compute_reward_fn(ach_next, np.array(goal_rows)))
        rew_col = self._read(("rew",), flat[:0])
        if rew.shape[:1] != (flat.size,) or rew.shape[1:] != rew_col.shape[1:]:
            raise ValueError(
                f"compute_reward_fn: expected rewards of shape {(flat.size, *rew_col.shape[1:])}, "
                f"got {rew.shape}"
            )
        keys = [("obs", "desired_goal"), ("rew",)]
        if self._save_obs_next:
            keys.append(("obs_next", "desired_goal"))
        saved = {key: self._read(key, flat) for key in keys}
        self._her_cache = (flat, saved)
        st._write(("obs", "desired_goal"), flat, goal_rows)
        if self._save_obs_next:
            st._write(("obs_next", "desired_goal"), flat, goal_rows)
        st._write(("rew",), flat, rew.astype(rew_col.dtype, copy=False))


class HERReplayBuffer(_HERMixin, ReplayBuffer):
    """Replay buffer with HER "future" relabelling on sampling (Tianshou's API).

    Args:
        size: capacity.
        compute_reward_fn: ``(achieved_goal, desired_goal) -> rewards``, both ``(n, ...)``
            arrays, rewards of shape ``(n,)``.
        horizon: maximum episode length (how far ``next`` is followed).
        future_k: at most ``k - 1`` relabelled episodes per unaltered one (``>= 1``;
            ``inf`` relabels every sampled episode).
        kwargs: other ``ReplayBuffer`` options (``seed``, ``ignore_obs_next``, ...).

    Example:
        >>> def reward(ag, g):
        ...     return -(np.abs(ag - g).sum(-1) > 0).astype(np.float64)
        >>> buf = HERReplayBuffer(8, reward, horizon=4, future_k=float("inf"), seed=0)
        >>> for t in range(4):
        ...     ob = {"observation": [t], "achieved_goal": [t], "desired_goal": [9]}
        ...     nx = {"observation": [t + 1], "achieved_goal": [t + 1], "desired_goal": [9]}
        ...     _ = buf.add({"obs": ob, "act": 0, "rew": -1.0, "terminated": t == 3,
        ...                  "truncated": False, "obs_next": nx})
        >>> batch, idx = buf.sample(1)
        >>> goal = batch.obs.desired_goal.item()
        >>> idx[0] < goal <= 4, batch.rew.item() == (0.0 if goal == idx[0] + 1 else -1.0)
        (True, True)
        >>> _ = buf.sample_indices(0)  # restores the stored goals, then relabels again
        >>> buf.reset(); buf.obs.desired_goal[:4].flatten().tolist()
        [9, 9, 9, 9]
    """

    def __init__(
        self,
        size: int,
        compute_reward_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
        horizon: int,
        future_k: float = 8.0,
        **kwargs: Any,
    ) -> None:
        self._check_her_args(compute_reward_fn, horizon, future_k, kwargs)
        super().__init__(size, **kwargs)
        self._init_her(compute_reward_fn, horizon, future_k)


class HERVectorReplayBuffer(_HERMixin, VectorReplayBuffer):
    """HER over ``buffer_num`` sub-buffers; relabelling never crosses a sub-buffer."""

    def __init__(
        self,
        total_size: int,
        buffer_num: int,
        compute_reward_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
        horizon: int,
        future_k: float = 8.0,
        **kwargs: Any,
    ) -> None:
        self._check_her_args(compute_reward_fn, horizon, future_k, kwargs)
        super().__init__(total_size, buffer_num, **kwargs)
        self._init_her(compute_reward_fn, horizon, future_k)
