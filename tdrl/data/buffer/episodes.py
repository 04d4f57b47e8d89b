"""``EpisodeBook``: Tianshou's per-ring episode bookkeeping, vectorized over rings.

Mixed into :class:`~tdrl.data.buffer.storage.EpisodeStorage`. Per ring it keeps the
insertion ``cursor``, the number of valid rows (``lengths``), the newest global index
(``last_index``) and the running episode return/length/start (``ep_return``, ``ep_len``,
``ep_start``). Derived link arrays make the episode queries a few vector ops with no
per-ring Python loop: ``stop[i] = done[i] or i is a ring's newest index``;
``prv_base``/``nxt_base`` are ``i - 1``/``i + 1`` wrapped inside each ring's filled part.
``prev(i) = i if stop[prv_base[i]] else prv_base[i]``;
``next(i) = i if stop[i] else nxt_base[i]``.

While every ring is written in lockstep (a vector buffer fed one row per env per step),
``cursor``, ``lengths``, ``last_index``, ``stop`` and ``prv_base`` are brought up to date
lazily: a lockstep write advances two Python ints, and the first read of any of those
arrays (they are properties) writes what the skipped steps would have written
(:meth:`EpisodeBook._sync`). The values read are always those of the eager bookkeeping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tdrl.data.buffer.schema import Key

DONE: Key = ("done",)


def _synced_array(name: str, doc: str) -> Any:
    """A property for the bookkeeping array ``name`` (kept in the instance ``__dict__``
    under that name, so pickles keep their layout): reading or replacing it first brings
    pending lockstep writes up to date."""

    def get(self: EpisodeBook) -> np.ndarray:
        if self._lazy:
            self._sync()
        try:
            return self.__dict__[name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(name) from None

    def set_(self: EpisodeBook, value: np.ndarray) -> None:
        if self._lazy:
            self._sync()
        self.__dict__[name] = value

    return property(get, set_, doc=doc)


class EpisodeBook:
    """Episode bookkeeping and the episode queries (``prev``, ``next``, ...) of a storage.

    The host class provides the columns (``columns``, ``np_columns``, ``_write``,
    ``write_rows``) and the layout (``num_rings``, ``ring_size``, ``max_size``,
    ``offsets``).
    """

    num_rings: int
    ring_size: int
    max_size: int
    offsets: np.ndarray
    all_rings: np.ndarray
    columns: dict[Key, torch.Tensor]
    np_columns: dict[Key, np.ndarray]
    ep_return: np.ndarray
    ep_len: np.ndarray
    done3: np.ndarray
    _done_t: np.ndarray
    _filling: bool
    _stop_t: np.ndarray
    _prv_t: np.ndarray
    _nxt_t: np.ndarray

    # lockstep writes not yet reflected in the arrays below (see the module docstring):
    # ``_lk_c``/``_lk_n`` are the current cursor/length of every ring, ``_lk_c0``/``_lk_n0``
    # those the arrays hold, ``_lk_m`` the number of writes since
    _lazy = False
    _lk_c = _lk_n = _lk_c0 = _lk_n0 = _lk_m = 0

    cursor = _synced_array("cursor", "Insertion position (local) of every ring.")
    lengths = _synced_array("lengths", "Number of valid rows of every ring.")
    last_index = _synced_array("last_index", "Newest written global index of every ring.")
    stop = _synced_array("stop", "``done[i]`` or ``i`` is its ring's newest index.")
    prv_base = _synced_array("prv_base", "``i - 1`` wrapped inside each ring's filled part.")

    def _sync(self) -> None:
        """Write into the bookkeeping arrays what the lockstep writes since they were last
        up to date would have written (see :meth:`_write_lockstep`)."""
        self._lazy = False
        d = self.__dict__
        c, n, m = self._lk_c, self._lk_n, self._lk_m
        c0, n0 = self._lk_c0, self._lk_n0
        s = self.ring_size
        d["cursor"].fill(c)
        d["lengths"].fill(n)
        last = c - 1 if c else s - 1  # the slot written last
        np.add(self.offsets, last, out=d["last_index"])
        # every row but the newest of a ring has ``stop == done``: restore the rows from
        # the old newest mark up to the new one, then mark the new one
        stop_t, done_t = self._stop_t, self._done_t
        if n0:
            start, count = (c0 - 1) % s, m
        else:  # empty rings: the mark sat on slot 0, the first write went to ``c0``
            stop_t[0] = done_t[0]
            start, count = c0, m - 1
        if count >= s:
            stop_t[:] = done_t
        elif count > 0:
            end = start + count
            if end <= s:
                stop_t[start:end] = done_t[start:end]
            else:
                stop_t[start:] = done_t[start:]
                stop_t[: end - s] = done_t[: end - s]
        stop_t[last] = True
        if n0 < s:  # ``prv_base`` of each ring's first row: its newest filled row
            self._prv_t[0] = self.offsets + (n - 1)

    def _write(self, key: Key, pos: np.ndarray, value: Any) -> None:
        raise NotImplementedError

    def write_rows(
        self, pos: np.ndarray, leaves: dict[Key, np.ndarray], fill_missing: bool
    ) -> None:
        """Write ``leaves`` at ``pos``; provided by the storage."""
        raise NotImplementedError

    def reset_bookkeeping(self, keep_statistics: bool = False) -> None:
        """Forget all rows (data stays allocated); optionally keep running episode stats."""
        old_last = getattr(self, "last_index", None)
        self.cursor = np.zeros(self.num_rings, dtype=np.int64)
        self.lengths = np.zeros(self.num_rings, dtype=np.int64)
        self.last_index = self.offsets.copy()
        self.ep_start = self.offsets.copy()
        if not keep_statistics:
            self.ep_return = np.zeros_like(self.ep_return)
            self.ep_len = np.zeros(self.num_rings, dtype=np.int64)
        if old_last is None or getattr(self, "stop", None) is None:
            self.refresh_links()
            return
        # O(num_rings) instead of a full refresh: only the last-index marks move
        self.stop[old_last] = self._done_at(old_last)
        self.stop[self.offsets] = True
        self.prv_base[self.offsets] = self.offsets
        self._update_flags()

    def reset_rings(self, rings: Any) -> None:
        """Empty the given rings in O(len(rings)) (data and episode statistics are kept)."""
        rings = np.asarray(rings, dtype=np.int64).reshape(-1)
        old = self.last_index[rings]
        self.stop[old] = self._done_at(old)
        off = self.offsets[rings]
        self.cursor[rings] = 0
        self.lengths[rings] = 0
        self.last_index[rings] = off
        self.ep_start[rings] = off
        self.stop[off] = True
        self.prv_base[off] = off
        self._update_flags()

    def drop_open_episodes(self, rings: Any = None) -> None:
        """Forget the running return and length of the rings' unfinished episodes: the next
        step written starts a new episode (its env was reset mid-episode). The rows already
        written stay."""
        idx = (
            np.arange(self.num_rings)
            if rings is None
            else np.asarray(rings, dtype=np.int64).reshape(-1)
        )
        self.ep_return[idx] = 0
        self.ep_len[idx] = 0
        self.ep_start[idx] = self.offsets[idx] + self.cursor[idx]

    def _update_flags(self) -> None:
        self._filling = bool((self.lengths < self.ring_size).any())
        self._lockstep = bool(
            (self.cursor == self.cursor[0]).all() and (self.lengths == self.lengths[0]).all()
        )

    def refresh_links(self) -> None:
        """Recompute the derived link arrays from ``done`` and the ring bookkeeping.

        ``stop[i]`` is ``done[i] or i is a ring's last index``; ``prv_base``/``nxt_base``
        hold ``i - 1``/``i + 1`` wrapped inside each ring's filled part. Call this after
        editing the ``done`` column in place.
        """
        n, s = self.max_size, self.ring_size
        stop = self._done_at(slice(None)).astype(bool, copy=True)
        stop[self.last_index] = True
        self.stop = stop
        prv = np.arange(-1, n - 1, dtype=np.int64)
        nxt = np.arange(1, n + 1, dtype=np.int64)
        nxt[self.offsets + s - 1] = self.offsets
        prv[self.offsets] = self.offsets + np.maximum(self.lengths, 1) - 1
        self.prv_base, self.nxt_base = prv, nxt
        self._make_views()
        self._update_flags()

    def _make_views(self) -> None:
        """Views and constants of the lockstep write (``_write_lockstep``).

        ``stop3`` is ``stop`` viewed ring-major ``(num_rings, ring_size)``; the ``_t``
        views are ``(ring_size, num_rings)`` transposes, so that a whole slot (one row of
        every ring) is ``view[c]``: plain integer indexing, numpy's cheapest.
        """
        shape = (self.num_rings, self.ring_size)
        self.stop3 = self.stop.reshape(shape)
        self._stop_t = self.stop3.T
        self._prv_t = self.prv_base.reshape(shape).T
        self._nxt_t = self.nxt_base.reshape(shape).T
        self._ones = np.ones(self.num_rings, dtype=np.int64)
        self._no_done = bytes(self.num_rings)

    def _prepare_ep_return(self, rew: np.ndarray) -> None:
        if self.ep_return.shape[1:] != rew.shape[1:]:
            self.ep_return = np.zeros((self.num_rings, *rew.shape[1:]), dtype=np.float64)

    def write_step(
        self,
        rings: np.ndarray | None,
        leaves: dict[Key, np.ndarray] | list[np.ndarray],
        done: np.ndarray,
        rew: np.ndarray,
        cols: list[np.ndarray | None] | None = None,
        cols3: list[np.ndarray | None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Write one transition into each of the distinct ``rings``; update bookkeeping.

        ``rings=None`` means every ring, in order. ``leaves`` must already be validated.
        ``cols`` (the numpy column of each leaf in order, ``None`` to skip it; ``cols3``
        the same viewed as ``(ring_size, num_rings, ...)``) asserts that the leaves cover
        the allocated columns and need no conversion; otherwise new keys are allocated
        and columns absent from ``leaves`` are zeroed at the written rows.
        Returns ``(ptr, ep_rew, ep_len, ep_idx)``.
        """
        values = leaves if isinstance(leaves, list) else list(leaves.values())
        if cols3 is not None and rings is None and self._lockstep:
            return self._write_lockstep(values, cols3, done, rew)
        sel: Any = slice(None) if rings is None else rings
        off = self.offsets[sel]
        ptr = off + self.cursor[sel]
        if cols is not None:
            for col, arr in zip(cols, values):
                if col is not None:
                    col[ptr] = arr
            dcol = self.np_columns[DONE]
            dcol[ptr] = done
        else:
            assert isinstance(leaves, dict)
            self.write_rows(ptr, leaves, fill_missing=True)
            self._write(DONE, ptr, done)
            dcol = self._done_at(slice(None))
        stop = self.stop
        old = self.last_index[sel]
        stop[old] = dcol[old]
        stop[ptr] = True
        self.last_index[sel] = ptr
        nxt = self.nxt_base[ptr]
        self.cursor[sel] = nxt - off
        if rings is not None:
            self._lockstep = False
        if self._filling:
            lens = np.minimum(self.lengths[sel] + 1, self.ring_size)
            self.lengths[sel] = lens
            self.prv_base[off] = off + lens - 1
            self._filling = bool((self.lengths < self.ring_size).any())
        return self._episode_stats(rings, done, rew, nxt)

    def _write_lockstep(
        self,
        values: list[np.ndarray],
        cols3: list[np.ndarray | None],
        done: np.ndarray,
        rew: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All rings share cursor ``c`` and length: write slot ``c`` of every ring.

        The hot path of a vector buffer's ``add``. ``cols3`` are the columns viewed
        ``(ring_size, num_rings, ...)`` (``None`` to skip a leaf), so slot ``c`` is
        ``view[c]``; ``done`` and ``rew`` hold one entry per ring. Cursor arithmetic uses
        Python ints and precomputed views (numpy scalar arithmetic costs more than a small
        copy).
        """
        s = self.ring_size
        if self._lazy:
            c, n = self._lk_c, self._lk_n
        else:  # the arrays are up to date: later writes only advance the ints
            d = self.__dict__
            c, n = d["cursor"].item(0), d["lengths"].item(0)
            self._lk_c0, self._lk_n0, self._lk_m = c, n, 0
            self._lk_c, self._lk_n = c, n
            self._lazy = True
        for col_t, arr in zip(cols3, values):
            if col_t is not None:
                col_t[c] = arr
        self._done_t[c] = done
        # offsets + c, read off the static ``nxt_base = i + 1`` of the previous row
        ptr = self._nxt_t[c - 1].copy() if c else self.offsets.copy()
        # cursor, lengths, last_index, stop and prv_base: brought up to date by ``_sync``
        self._lk_c = c + 1 if c + 1 < s else 0
        self._lk_m += 1
        if n < s:
            self._lk_n = n + 1
            self._filling = n + 1 < s
        # episode statistics: ``_episode_stats(None, ...)`` inlined (the call and its
        # generality cost ~0.5 us of this ~7 us hot path, measured)
        ret = self.ep_return
        if ret.shape != rew.shape:
            self._prepare_ep_return(rew)
            ret = self.ep_return
        ret += rew
        eln = self.ep_len
        eln += self._ones
        start = self.ep_start.copy()
        if done.tobytes() == self._no_done:
            return ptr, np.zeros(ret.shape), np.zeros(self.num_rings, dtype=np.int64), start
        # few rings finish per step: per-ring scalar updates beat masked vector ops
        ep_rew = np.zeros(ret.shape)
        ep_len = np.zeros(self.num_rings, dtype=np.int64)
        ep_start, nxt = self.ep_start, self._nxt_t[c]  # nxt[r] == offsets[r] + c1
        for r in done.nonzero()[0].tolist():
            ep_rew[r] = ret[r]
            ep_len[r] = eln[r]
            ret[r] = 0.0
            eln[r] = 0
            ep_start[r] = nxt[r]
        return ptr, ep_rew, ep_len, start

    def _episode_stats(
        self,
        rings: np.ndarray | None,
        done: np.ndarray,
        rew: np.ndarray,
        nxt: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Advance the running episode statistics of ``rings`` (``None``: all, in order).

        ``nxt`` holds the next write position of each ring (the start of its next episode).
        """
        if self.ep_return.shape[1:] != rew.shape[1:]:
            self._prepare_ep_return(rew)
        if rings is None:
            ret = self.ep_return
            ret += rew
            eln = self.ep_len
            eln += self._ones
            start = self.ep_start.copy()
            ptr = self.last_index.copy()
        else:
            ret = self.ep_return[rings] + rew
            eln = self.ep_len[rings] + 1
            start = self.ep_start[rings]
            ptr = self.last_index[rings]
        ep_rew = np.zeros(ret.shape)
        ep_len = np.zeros(len(ptr), dtype=np.int64)
        if np.count_nonzero(done):
            # few rings finish per step: per-ring scalar updates beat masked vector ops
            ep_start = self.ep_start
            for i in done.nonzero()[0].tolist():
                ep_rew[i] = ret[i]
                ep_len[i] = eln[i]
                ret[i] = 0.0
                eln[i] = 0
                ep_start[i if rings is None else rings[i]] = nxt[i]
        if rings is not None:
            self.ep_return[rings] = ret
            self.ep_len[rings] = eln
        return ptr, ep_rew, ep_len, start

    def write_sequence(
        self,
        ring: int,
        leaves: dict[Key, np.ndarray],
        done: np.ndarray,
        rew: np.ndarray | None,
        *,
        positions: np.ndarray | None = None,
        track_episodes: bool = True,
        fill_missing: bool = True,
    ) -> np.ndarray:
        """Write a time-ordered run of rows into one ring and advance its bookkeeping.

        ``positions`` (global) default to the next rows after the ring's cursor. With
        ``track_episodes=False`` (used by ``update``) the running episode statistics are
        left untouched, as in Tianshou. Returns the global positions written.
        """
        n = len(done)
        off = int(self.offsets[ring])
        if positions is None:
            local = (self.cursor[ring] + np.arange(n)) % self.ring_size
        else:
            local = np.asarray(positions, dtype=np.int64) - off
        pos = local + off
        self.write_rows(pos, leaves, fill_missing)
        self._write(DONE, pos, done)
        if n == 0:
            return pos
        old_last = int(self.last_index[ring])
        self.stop[old_last] = self._done_at(np.array([old_last]))[0]
        self.stop[pos] = done
        self.last_index[ring] = pos[-1]
        self.cursor[ring] = (local[-1] + 1) % self.ring_size
        self.lengths[ring] = min(self.ring_size, max(self.lengths[ring] + n, local.max() + 1))
        if track_episodes:
            rew = np.zeros(n) if rew is None else rew.astype(np.float64)
            self._prepare_ep_return(rew)
            self._advance_episode(ring, pos, done, rew)
        self.stop[self.last_index[ring]] = True
        self.prv_base[off] = off + max(int(self.lengths[ring]), 1) - 1
        self._update_flags()
        return pos

    def _advance_episode(
        self, ring: int, pos: np.ndarray, done: np.ndarray, rew: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(done)
        seg = np.concatenate([[0], np.cumsum(done)[:-1]])
        first = np.concatenate([[-1], np.flatnonzero(done)])[seg] + 1
        csum = np.cumsum(rew, axis=0)
        base = np.where((first > 0).reshape((-1,) + (1,) * (rew.ndim - 1)), csum[first - 1], 0.0)
        head = (seg == 0).reshape((-1,) + (1,) * (rew.ndim - 1))
        ret = csum - base + np.where(head, self.ep_return[ring], 0.0)
        length = np.arange(n) - first + 1 + np.where(seg == 0, self.ep_len[ring], 0)
        start = np.where(seg == 0, self.ep_start[ring], pos[first])
        if done[-1]:
            self.ep_return[ring] = 0.0
            self.ep_len[ring] = 0
            self.ep_start[ring] = self.offsets[ring] + self.cursor[ring]
        else:
            self.ep_return[ring] = ret[-1]
            self.ep_len[ring] = length[-1]
            self.ep_start[ring] = start[-1]
        return ret, length, start

    # ----------------------------------------------------------- episode API
    def _done_at(self, idx: Any) -> np.ndarray:
        col = self.np_columns.get(DONE)
        if col is not None:
            return col[idx]
        if isinstance(idx, slice):
            if DONE in self.columns:
                return self.columns[DONE][idx].cpu().numpy()
            return np.zeros(self.max_size, dtype=bool)
        if DONE in self.columns:
            return self.columns[DONE][torch.as_tensor(idx)].cpu().numpy()
        return np.zeros(np.shape(idx), dtype=bool)

    def _wrap_index(self, index: Any) -> Any:
        if np.ndim(index) == 0:
            return int(index) % self.max_size
        if index.size and (index.min() < 0 or index.max() >= self.max_size):
            return index % self.max_size
        return index

    def prev(self, index: Any) -> Any:
        """Previous index in the same episode (unchanged at an episode start).

        Indices are expected to hold valid data (as returned by the buffer).
        """
        index = self._wrap_index(index)
        p = self.prv_base[index]
        if isinstance(index, int):
            return np.int64(index if self.stop[p] else p)
        return np.where(self.stop[p], index, p)

    def next(self, index: Any) -> Any:
        """Next index in the same episode (unchanged at a done or newest step)."""
        index = self._wrap_index(index)
        if isinstance(index, int):
            return np.int64(index if self.stop[index] else self.nxt_base[index])
        return np.where(self.stop[index], index, self.nxt_base[index])

    def unfinished_index(self) -> np.ndarray:
        """Newest index of every ring whose episode is still open."""
        last = self.last_index[self.lengths > 0]
        return last[~self._done_at(last)].astype(np.int64)

    def _ring_runs(self, off: int, n: int, c: int) -> list[np.ndarray]:
        """The valid rows of the ring at offset ``off`` (length ``n``, cursor ``c``) as
        one or two ascending runs of global indices, oldest first."""
        if n < self.ring_size:
            return [np.arange(off, off + n, dtype=np.int64)]
        return [
            np.arange(off + c, off + self.ring_size, dtype=np.int64),
            np.arange(off, off + c, dtype=np.int64),
        ]

    def ring_indices(self, ring: int) -> np.ndarray:
        """Global indices of the valid rows of ``ring``, oldest first."""
        off, n, c = int(self.offsets[ring]), int(self.lengths[ring]), int(self.cursor[ring])
        return np.concatenate(self._ring_runs(off, n, c))

    def valid_indices(self) -> np.ndarray:
        """All valid indices, chronological within each ring, rings in order."""
        layout = zip(self.offsets.tolist(), self.lengths.tolist(), self.cursor.tolist())
        return np.concatenate([run for ring in layout for run in self._ring_runs(*ring)])

    def sample_uniform(self, n: int, generator: torch.Generator | None) -> np.ndarray:
        """``n`` indices drawn uniformly with replacement from all valid rows."""
        if not self._filling:  # every row is valid
            return torch.randint(self.max_size, (n,), generator=generator).numpy()
        lens = self.lengths
        total = int(lens.sum())
        if total == 0:
            raise ValueError("cannot sample from an empty buffer: expected len(buffer) > 0, got 0")
        return self.rank_to_index(torch.randint(total, (n,), generator=generator).numpy())

    def rank_to_index(self, u: np.ndarray) -> np.ndarray:
        """Map ranks in ``[0, len)`` (valid rows counted ring by ring) to global indices."""
        if not self._filling or self.num_rings == 1:  # valid rows are a prefix of each ring
            return u
        lens = self.lengths
        if self._lockstep:
            ring = u // lens[0]
            return u + ring * (self.ring_size - lens[0])
        cum = np.cumsum(lens)
        ring = np.searchsorted(cum, u, side="right")
        return u - (cum[ring] - lens[ring]) + self.offsets[ring]
