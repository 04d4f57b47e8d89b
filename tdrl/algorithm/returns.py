"""Return estimators over an episode-aware buffer: GAE / Monte-Carlo and n-step returns.

Both functions follow the partial-episode bootstrapping rules of the design (paper, Table 4):
the chain of a trajectory is cut at every ``done`` step and at every index in
``buffer.unfinished_index()``; the bootstrap value V(s') / Q(s') is masked only where the step is
``terminated``. Truncated and unfinished steps therefore bootstrap from their ``obs_next``.

The buffer only needs the episode API of ``docs/internals.md``: ``next(idx)``,
``unfinished_index()`` and the columns ``rew``, ``done``, ``terminated`` (torch tensors or numpy
arrays of length ``maxsize``). Arithmetic runs in float64, with one conversion per call.

GAE runs as one backward loop compiled by numba when it is installed (the ``fast`` extra;
compiled once per input dtype and cached on disk), else as the vectorized
:func:`discounted_segment_sum` (``TDRL_NUMBA=0`` forces it). The two agree to float64
rounding. n-step chains on tdrl's own buffers run as one compiled loop too (over the
buffer's link arrays, the same arithmetic in the same order, so the same values), else
through the episode API.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tdrl.algorithm.checks import require_unit
from tdrl.utils.jit import Kernel

__all__ = [
    "compute_episodic_return",
    "compute_nstep_return",
    "discounted_segment_sum",
    "nstep_reward_discount",
]

ArrayLike = np.ndarray | torch.Tensor

# Largest exponent magnitude used for the in-block rescaling g**j (e**-300 ~ 5e-131 stays far
# from float64's underflow and its inverse far from overflow).
_MAX_LOG_SCALE = 300.0


def _np(x: Any) -> np.ndarray:
    """View ``x`` as a numpy array (no copy for CPU tensors and arrays)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, torch.Tensor):
        try:
            return x.numpy()
        except (RuntimeError, TypeError):  # requires grad, or not on the CPU
            return x.detach().cpu().numpy()
    return np.asarray(x)


def _field(batch: Any, key: str) -> Any:
    """Read ``key`` from a Batch / TensorDict / mapping, raising a clear KeyError."""
    try:
        return batch[key]
    except (KeyError, TypeError, IndexError):
        raise KeyError(f"batch is missing required key {key!r}") from None


def _flags(batch: Any, key: str) -> np.ndarray:
    """``batch[key]`` as a flat bool array: any nonzero flag is set (bool, int or float 0/1
    flags give the same answer, as Tianshou's ``np.logical_or`` and bool buffer columns do)."""
    return _np(_field(batch, key)).reshape(-1).astype(bool, copy=False)


def _block_constants(g: float, block: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Cached per-block weights ``g**-j`` and ``g**j``, tiled over ``nb`` blocks."""
    key = (g, block, nb)
    consts = _CONST_CACHE.get(key)
    if consts is None:
        if len(_CONST_CACHE) >= 32:
            _CONST_CACHE.clear()
        w = g ** np.arange(block, dtype=np.float64)
        consts = (np.tile(1.0 / w, nb), np.tile(w, nb))
        _CONST_CACHE[key] = consts
    return consts


_CONST_CACHE: dict[tuple[float, int, int], tuple[np.ndarray, np.ndarray]] = {}


def discounted_segment_sum(a: np.ndarray, end: np.ndarray, g: float) -> np.ndarray:
    """Solve ``x[i] = a[i] + g * (1 - end[i]) * x[i + 1]`` backwards (``x[n] = 0``), vectorized.

    This is the GAE / discounted-return recursion with the chain cut after every ``end`` step.
    It runs on the time-reversed sequence ``r``, where it reads ``y[m] = r[m] + g * y[m - 1]``
    with a reset at each end. The sequence is cut into a few blocks short enough that
    ``g**-j`` cannot overflow; inside a block ``y[j] = g**j * (P[j] - P[s - 1])`` with ``P`` the
    cumulative sum of ``g**-j * r[j]`` and ``s`` the start of ``j``'s run. A block's first run
    then takes the previous block's last value with weight ``g**(j+1)``; that value depends on
    the block before only through ``g**B`` (at most about ``e**-150`` when there are several
    blocks), far below float64 resolution, so one level of carry is exact. About ten array
    operations, no Python loop over elements.

    :param a: float array of per-step terms (e.g. TD errors), shape ``(n,)``.
    :param end: bool array, shape ``(n,)``; ``True`` cuts the chain after that step.
    :param g: the per-step discount in ``[0, 1]`` (``gamma * lambda`` for GAE).
    :return: float64 array ``x`` of shape ``(n,)``.

    >>> discounted_segment_sum(np.array([1.0, 1.0, 1.0, 1.0]),
    ...                        np.array([False, True, False, False]), 0.5)
    array([1.5, 1. , 1.5, 1. ])
    """
    a = np.asarray(a).reshape(-1)
    end = np.asarray(end, dtype=bool).reshape(-1)
    n = a.shape[0]
    if end.shape[0] != n:
        raise ValueError(f"end: expected {n} flags (one per element of a), got {end.shape[0]}")
    if not 0.0 <= g <= 1.0:
        raise ValueError(f"g: expected a discount in [0, 1], got {g}")
    if n == 0 or g == 0.0:
        return a.astype(np.float64)
    bmax = n if g == 1.0 else max(1, int(_MAX_LOG_SCALE / -math.log(g)))
    nb = -(-n // bmax)
    block = -(-n // nb)
    size = nb * block
    w_neg, w_pos = _block_constants(g, block, nb)
    # reversed, rescaled terms; padding (a zero tail in reversed time) changes nothing
    y = np.empty(size)
    np.multiply(a[::-1], w_neg[:n], out=y[:n])
    y[n:] = 0.0
    prefix = torch.from_numpy(y).view(nb, block).cumsum(1).numpy().reshape(-1)
    # runs start at every reset (an end, in reversed time) and at every block start
    starts = np.zeros(size, dtype=bool)
    starts[(n - 1) - np.flatnonzero(end)] = True
    reset_at_block = starts[::block].copy()
    starts[::block] = True
    run_start = np.flatnonzero(starts)
    lengths = np.empty_like(run_start)
    np.subtract(run_start[1:], run_start[:-1], out=lengths[:-1])
    lengths[-1] = size - run_start[-1]
    before = prefix[run_start - 1]
    at_block_start = run_start % block == 0
    before[at_block_start] = 0.0
    prefix -= np.repeat(before, lengths)  # now y[j] = g**j * prefix[j] inside each block
    if nb > 1:
        # The first run of block b > 0 continues block b - 1 unless it starts with a reset:
        # it gains g**(j+1) * (last y of block b - 1), i.e. the constant g * that y in the
        # unscaled prefix. A short loop over blocks when they are few (the usual case).
        last_w = w_pos[block - 1] * g
        if nb <= 16:
            head_len = lengths[at_block_start]
            for b in range(1, nb):
                if not reset_at_block[b]:
                    start = b * block
                    prefix[start : start + head_len[b]] += prefix[start - 1] * last_w
        else:
            head = at_block_start & (run_start > 0)
            head[head] = ~reset_at_block[run_start[head] // block]
            carry = np.where(head, prefix[run_start - 1] * last_w, 0.0)
            prefix += np.repeat(carry, lengths)
    x = np.empty(n)
    np.multiply(prefix[:n], w_pos[:n], out=x[::-1])
    return x


def _gae_loop(
    rew: np.ndarray,
    v_s_: np.ndarray,
    v_s: np.ndarray,
    term: np.ndarray,
    end: np.ndarray,
    gamma: float,
    g: float,
    adv: np.ndarray,
    ret: np.ndarray,
) -> None:  # pragma: no cover - runs compiled; checked against discounted_segment_sum
    """``adv[i] = delta[i] + g * (1 - end[i]) * adv[i + 1]``, ``ret = adv + v_s`` (float64)."""
    acc = 0.0
    for i in range(rew.shape[0] - 1, -1, -1):
        if end[i]:
            acc = 0.0
        boot = 0.0 if term[i] else gamma * np.float64(v_s_[i])
        vs = np.float64(v_s[i])
        acc = (np.float64(rew[i]) + boot - vs) + g * acc
        adv[i] = acc
        ret[i] = acc + vs


_GAE = Kernel(_gae_loop)


def _gae_kernel() -> Callable[..., None] | None:
    """The numba-compiled :func:`_gae_loop`, or ``None`` without numba (or ``TDRL_NUMBA=0``)."""
    return _GAE.get()


def _flat_values(name: str, v: ArrayLike, size: int) -> np.ndarray:
    """``v`` as a flat numpy array of ``size`` numbers (dtype kept), or a clear error."""
    arr = _np(v).reshape(-1)
    if arr.shape[0] != size:
        raise ValueError(
            f"{name}: expected {size} values (one per index), got shape {tuple(v.shape)}"
        )
    return arr


def _monte_carlo_delta(
    rew: np.ndarray, v_s: ArrayLike | None, gae_lambda: float, n: int
) -> tuple[np.ndarray | None, np.ndarray]:
    """``(V(s) or None, r - V(s))`` in float64 for the return without ``V(s')``
    (``gae_lambda`` must be 1)."""
    if not math.isclose(gae_lambda, 1.0):
        raise ValueError(
            f"v_s_: expected V(s') values when gae_lambda != 1 (got gae_lambda={gae_lambda} "
            "and v_s_=None); v_s_=None means the Monte-Carlo return and needs gae_lambda=1"
        )
    if v_s is not None:
        vs = _flat_values("v_s", v_s, n)
        return vs, np.subtract(rew, vs, dtype=np.float64)
    return None, rew.astype(np.float64)


def compute_episodic_return(
    batch: Any,
    buffer: Any,
    indices: ArrayLike,
    v_s_: ArrayLike | None = None,
    v_s: ArrayLike | None = None,
    gamma: float = 0.99,
    gae_lambda: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Compute GAE advantages and returns (``adv + V(s)``) over ``batch = buffer[indices]``.

    ``indices`` must be chronological inside each episode (``buffer.sample_indices(0)`` order).
    The chain is cut at ``terminated | truncated`` and at ``buffer.unfinished_index()``;
    ``V(s')`` is zeroed where ``batch["terminated"]`` (Tianshou reads the same flags from
    ``buffer.terminated[indices]``; they agree because ``batch`` is ``buffer[indices]``).

    tdrl deviation from Tianshou: ``v_s`` is never inferred by rolling ``v_s_``. Pass both, or
    pass neither with ``gae_lambda=1`` for the Monte-Carlo discounted return (``V = 0``).

    :param batch: a Batch / TensorDict / mapping with ``rew``, ``terminated``, ``truncated``.
    :param buffer: the buffer ``batch`` was read from (episode API of ``docs/internals.md``).
    :param indices: the buffer indices of ``batch``'s rows.
    :param v_s_: V(obs_next) per row, any shape with ``len(indices)`` elements, or ``None``.
    :param v_s: V(obs) per row; ``None`` only together with ``v_s_=None`` (then ``V(s) = 0``).
    :param gamma: discount factor in ``[0, 1]``.
    :param gae_lambda: GAE lambda in ``[0, 1]``.
    :return: ``(returns, advantages)``, 1-d torch tensors with the dtype and device of ``v_s_``
        (or ``v_s``, else the default float dtype).

    >>> class Buf:  # a 3-step buffer whose last episode is still open
    ...     done = terminated = np.array([False, True, False])
    ...     def unfinished_index(self): return np.array([2])
    >>> b = {"rew": torch.ones(3), "terminated": torch.tensor([False, True, False]),
    ...      "truncated": torch.zeros(3, dtype=torch.bool)}
    >>> ret, adv = compute_episodic_return(b, Buf(), np.arange(3), gamma=0.5, gae_lambda=1.0)
    >>> ret
    tensor([1.5000, 1.0000, 1.0000])
    """
    require_unit(gamma=gamma, gae_lambda=gae_lambda)
    idx = _np(indices).astype(np.int64, copy=False).reshape(-1)
    n = idx.shape[0]
    rew = _flat_values("rew", _field(batch, "rew"), n)
    term = _flags(batch, "terminated")
    end = term | _flags(batch, "truncated")
    if end.shape[0] != n:
        raise ValueError(f"terminated/truncated: expected {n} flags, got {end.shape[0]}")
    if v_s_ is None:
        vs, delta = _monte_carlo_delta(rew, v_s, gae_lambda, n)
    else:
        if v_s is None:
            raise ValueError(
                "v_s: expected V(s) values together with v_s_ (got v_s=None); tdrl never "
                "infers V(s) by rolling V(s')"
            )
        vs = _flat_values("v_s", v_s, n)
        kernel = _gae_kernel()
        if kernel is not None:
            return _gae_compiled(kernel, buffer, idx, rew, v_s_, vs, term, end, gamma, gae_lambda)
        # delta = r + gamma * V(s') * ~terminated - V(s), in one float64 buffer
        delta = np.multiply(_flat_values("v_s_", v_s_, n), gamma, dtype=np.float64)
        delta[term] = 0.0
        delta += rew
        delta -= vs
    unfinished = _unfinished_mask(buffer, idx)
    if unfinished is not None:
        end |= unfinished
    adv = discounted_segment_sum(delta, end, gamma * gae_lambda)
    ret = adv + vs if vs is not None else adv
    dtype, device = _out_dtype(v_s_ if v_s_ is not None else v_s)
    return (
        torch.from_numpy(ret).to(device=device, dtype=dtype),
        torch.from_numpy(adv).to(device=device, dtype=dtype),
    )


def _out_dtype(ref: Any) -> tuple[torch.dtype, torch.device]:
    """The dtype and device of the returned tensors: ``ref``'s when it is floating."""
    if isinstance(ref, torch.Tensor) and ref.is_floating_point():
        return ref.dtype, ref.device
    if isinstance(ref, np.ndarray) and np.issubdtype(ref.dtype, np.floating):
        return torch.from_numpy(ref[:0]).dtype, torch.device("cpu")
    return torch.get_default_dtype(), torch.device("cpu")


def _gae_compiled(
    kernel: Callable[..., None],
    buffer: Any,
    idx: np.ndarray,
    rew: np.ndarray,
    v_s_: ArrayLike,
    vs: np.ndarray,
    term: np.ndarray,
    end: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE by the compiled loop: one pass, float64 arithmetic, outputs in the final dtype."""
    n = idx.shape[0]
    vn = _flat_values("v_s_", v_s_, n)
    unfinished = _unfinished_mask(buffer, idx)
    if unfinished is not None:
        end |= unfinished
    dtype, device = _out_dtype(v_s_)
    # write float32/float64 outputs directly (the same rounding as casting float64 results)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    adv = np.empty(n, dtype=np_dtype)
    ret = np.empty(n, dtype=np_dtype)
    kernel(rew, vn, vs, term, end, float(gamma), float(gamma * gae_lambda), adv, ret)
    ret_t, adv_t = torch.from_numpy(ret), torch.from_numpy(adv)
    if ret_t.dtype != dtype or device.type != "cpu":
        ret_t, adv_t = ret_t.to(device=device, dtype=dtype), adv_t.to(device=device, dtype=dtype)
    return ret_t, adv_t


def _unfinished_mask(buffer: Any, index: np.ndarray) -> np.ndarray | None:
    """``np.isin(index, buffer.unfinished_index())`` by a mark-and-gather (None if none open)."""
    unfinished = _np(buffer.unfinished_index())
    if unfinished.size == 0:
        return None
    size = getattr(buffer, "maxsize", None)
    if not isinstance(size, int | np.integer):
        size = _np(buffer.done).shape[0]
    mark = np.zeros(size, dtype=bool)
    mark[unfinished] = True
    return np.take(mark, index)


def compute_nstep_return(
    batch: Any,
    buffer: Any,
    indices: ArrayLike,
    target_q_fn: Callable[[Any, np.ndarray], torch.Tensor],
    gamma: float = 0.99,
    n_step: int = 1,
) -> Any:
    r"""Set ``batch["returns"]`` to the n-step return bootstrapped with ``target_q_fn``.

    .. math::
        G_t = \sum_{i=t}^{t+k-1} \gamma^{i-t} r_i + \gamma^{k} (1 - \mathrm{term}_{t+k-1})
        Q_{\mathrm{target}}(s_{t+k})

    where ``k <= n_step`` stops early at the first ``done`` or unfinished step. The rows reached
    after ``n_step - 1`` calls of ``buffer.next`` are passed to ``target_q_fn(buffer, idx)``,
    which must return Q of ``buffer[idx].obs_next`` (shape ``(I,)`` or ``(I, A)``); it runs
    under ``torch.no_grad``. Vectorized over the batch, with a loop over ``n_step`` only.

    :param batch: a Batch / TensorDict / dict equal to ``buffer[indices]``; it gets ``returns``
        (shape ``(I, A)``, dtype and device of the target Q) and, if present, ``weight`` is cast
        to the target Q's dtype.
    :param buffer: the buffer (``next``, ``unfinished_index``, columns ``rew``, ``done``,
        ``terminated``).
    :param indices: the buffer indices of ``batch``'s rows.
    :param target_q_fn: ``(buffer, indices) -> Q(obs_next)``.
    :param gamma: discount factor in ``[0, 1]``.
    :param n_step: number of steps, ``>= 1``.
    :return: ``batch``, with ``returns`` set.

    >>> class Buf:  # steps 0, 1, 2 of one episode that terminates at step 2
    ...     rew = np.array([1.0, 1.0, 1.0]); done = np.array([False, False, True])
    ...     terminated = done
    ...     def next(self, i): return np.minimum(i + 1, 2)
    ...     def unfinished_index(self): return np.array([], dtype=np.int64)
    >>> out = compute_nstep_return({}, Buf(), np.array([0, 1, 2]),
    ...                            lambda buf, i: torch.full((len(i),), 10.0), 0.5, n_step=2)
    >>> out["returns"].flatten()
    tensor([4.0000, 1.5000, 1.0000])
    """
    if not isinstance(n_step, int) or n_step < 1:
        raise ValueError(f"n_step: expected an int >= 1, got {n_step!r}")
    require_unit(gamma=gamma)
    idx = _np(indices).astype(np.int64, copy=False).reshape(-1)
    batch_size = getattr(batch, "batch_size", None)
    if batch_size is not None and len(batch_size) > 0 and batch_size[0] != idx.shape[0]:
        raise ValueError(
            f"indices: expected {batch_size[0]} indices (len(batch)), got {idx.shape[0]}"
        )
    n_idx = idx.shape[0]
    ret, disc, last = _nstep_chains(buffer, idx, gamma, n_step)
    with torch.no_grad():
        target_q = target_q_fn(buffer, last)
    if not isinstance(target_q, torch.Tensor):
        target_q = torch.as_tensor(target_q)
    if target_q.dim() == 0 or target_q.shape[0] != n_idx:
        raise ValueError(
            f"target_q_fn: expected a leading dimension of {n_idx} (one row per index), "
            f"got shape {tuple(target_q.shape)}"
        )
    # the buffer's part (numpy, float64) meets the target Q where it lives: on a GPU the
    # two small arrays go to the device instead of Q to the host, so no sync happens here
    tq = target_q.detach().reshape(n_idx, math.prod(target_q.shape[1:])).to(torch.float64)
    dev = tq.device
    out = tq * _to_device(disc, dev)[:, None] + _to_device(ret, dev)[:, None]
    batch["returns"] = out.to(target_q.dtype)
    if "weight" in batch:
        batch["weight"] = torch.as_tensor(batch["weight"]).to(device=dev, dtype=target_q.dtype)
    return batch


def nstep_reward_discount(
    buffer: Any, indices: ArrayLike, gamma: float, n_step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buffer's part of :func:`compute_nstep_return`, without a bootstrap value:
    ``(R, d, last)``, the discounted reward sums ``R [I]`` and bootstrap discounts
    ``d = gamma^k (1 - term) [I]`` (both float64; ``G = R + d Q(s_last')``) and the rows
    ``last [I]`` whose ``obs_next`` the chains bootstrap from.

    >>> class Buf:  # steps 0, 1, 2 of one episode that terminates at step 2
    ...     rew = np.array([1.0, 1.0, 1.0]); done = np.array([False, False, True])
    ...     terminated = done
    ...     def next(self, i): return np.minimum(i + 1, 2)
    ...     def unfinished_index(self): return np.array([], dtype=np.int64)
    >>> r, d, last = nstep_reward_discount(Buf(), np.array([0, 1, 2]), 0.5, n_step=2)
    >>> r.tolist(), d.tolist(), last.tolist()
    ([1.5, 1.5, 1.0], [0.25, 0.0, 0.0], [1, 2, 2])
    """
    if not isinstance(n_step, int) or n_step < 1:
        raise ValueError(f"n_step: expected an int >= 1, got {n_step!r}")
    require_unit(gamma=gamma)
    idx = _np(indices).astype(np.int64, copy=False).reshape(-1)
    return _nstep_chains(buffer, idx, gamma, n_step)


def _nstep_chains(
    buffer: Any, idx: np.ndarray, gamma: float, n_step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(R, d, last)`` of :func:`nstep_reward_discount` for valid ``idx`` (int64, flat):
    one compiled loop over a tdrl buffer's own link arrays when numba is installed and the
    buffer offers them (``_nstep_arrays``), else through the buffer's episode API."""
    kernel = _nstep_kernel()
    arrays = getattr(buffer, "_nstep_arrays", None)
    arrays = arrays() if kernel is not None and arrays is not None else None
    if kernel is None or arrays is None:
        stacked = _nstep_rows(buffer, idx, n_step)
        ret, disc = _nstep_reward_discount(buffer, stacked, gamma)
        return ret, disc, stacked[-1]
    stop, nxt, rew, done, term = arrays
    unfinished = _np(buffer.unfinished_index()).astype(np.int64, copy=False)
    n = idx.shape[0]
    ret, disc, last = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    powers = float(gamma) ** np.arange(n_step + 1)  # the generic path's gamma**steps
    kernel(idx, n_step, float(gamma), powers, stop, nxt, rew, done, term, unfinished,
           ret, disc, last)  # fmt: skip
    return ret, disc, last


def _nstep_loop(
    idx: np.ndarray,
    n_step: int,
    gamma: float,
    powers: np.ndarray,
    stop: np.ndarray,
    nxt: np.ndarray,
    rew: np.ndarray,
    done: np.ndarray,
    term: np.ndarray,
    unfinished: np.ndarray,
    ret: np.ndarray,
    disc: np.ndarray,
    last: np.ndarray,
) -> None:  # pragma: no cover - runs compiled; checked against the generic path
    """The generic path's arithmetic per index, in the same order: follow
    ``next(i) = i if stop[i] else nxt[i]`` ``n_step - 1`` times, then the rewards from the
    last row back (``R = r + gamma * R``, restarted at the first ``done`` or unfinished
    row), ``d = gamma**steps`` unless the last row terminated."""
    size = stop.shape[0]
    chain = np.empty(n_step, dtype=np.int64)
    for i in range(idx.shape[0]):
        j = idx[i] % size
        chain[0] = j
        for k in range(1, n_step):
            if not stop[j]:
                j = nxt[j]
            chain[k] = j
        acc = 0.0
        steps = n_step
        for k in range(n_step - 1, -1, -1):
            j = chain[k]
            end = bool(done[j])
            for u in range(unfinished.shape[0]):
                end = end or unfinished[u] == j
            if end:
                steps = k + 1
                acc = 0.0
            acc = np.float64(rew[j]) + gamma * acc
        ret[i] = acc
        j = chain[n_step - 1]
        last[i] = j
        disc[i] = 0.0 if term[j] else powers[steps]


_NSTEP = Kernel(_nstep_loop)


def _nstep_kernel() -> Callable[..., None] | None:
    """The numba-compiled :func:`_nstep_loop`, or ``None`` without numba (or
    ``TDRL_NUMBA=0``)."""
    return _NSTEP.get()


def _nstep_reward_discount(
    buffer: Any, stacked: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(R, d)`` of :func:`nstep_reward_discount` along the rows ``stacked [n_step, I]``."""
    ret, steps = _nstep_rewards(buffer, stacked, gamma)
    disc = (gamma**steps) * ~_np(buffer.terminated)[stacked[-1]].astype(bool, copy=False)
    return ret, disc


def _nstep_rows(buffer: Any, idx: np.ndarray, n_step: int) -> np.ndarray:
    """``[n_step, I]`` buffer rows: ``idx`` and its ``n_step - 1`` successors."""
    stacked = np.empty((n_step, idx.shape[0]), dtype=np.int64)
    stacked[0] = idx
    for k in range(1, n_step):
        stacked[k] = _np(buffer.next(stacked[k - 1]))
    return stacked


def _nstep_rewards(buffer: Any, stacked: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The discounted reward sums ``[I]`` (float64) along the rows ``stacked [n_step, I]``
    and the steps ``[I]`` each took (stopping at the first done or unfinished step)."""
    n_step, n_idx = stacked.shape
    end = _np(buffer.done)[stacked].astype(bool)
    unfinished = _unfinished_mask(buffer, stacked)
    if unfinished is not None:
        end |= unfinished
    rew = _np(buffer.rew)
    if rew.ndim > 1:
        if math.prod(rew.shape[1:]) != 1:
            raise ValueError(
                f"buffer.rew: expected one scalar reward per step, got shape {tuple(rew.shape)}"
            )
        rew = rew.reshape(-1)
    ret = np.zeros(n_idx)
    steps = np.full(n_idx, n_step)
    for k in range(n_step - 1, -1, -1):
        stop = end[k]
        steps[stop] = k + 1
        ret[stop] = 0.0
        ret = rew[stacked[k]] + gamma * ret
    return ret, steps


def _to_device(arr: np.ndarray, device: torch.device) -> torch.Tensor:
    """``arr`` as a tensor on ``device`` (pinned and asynchronous for a CUDA device)."""
    t = torch.from_numpy(arr)
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)
