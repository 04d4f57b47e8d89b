"""What a :class:`~tdrl.data.collector.Collector` does with one vector step's arrays.

* the NaN/inf check at the env boundary (:func:`first_nonfinite` and the cheap pre-tests
  that skip it for a finite step; the collector raises its ``NonFiniteError``);
* uniform random actions for ``collect(random=True)`` (:func:`sample_spaces`,
  :func:`legal_random_actions`);
* the policy's input ``Batch`` built without ``Batch``'s general conversion
  (:func:`_policy_input`).

These names are importable from :mod:`tdrl.data.collector` too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl.data.batch import Batch, wrap_entries
from tdrl.data.tree import Tree, stack_infos
from tdrl.env.base import BaseVectorEnv

__all__ = [
    "first_nonfinite",
    "legal_random_actions",
    "sample_spaces",
]

_add_reduce = np.add.reduce
_vdot = np.vdot
_isfinite = math.isfinite
_ndarray = np.ndarray
_from_numpy = torch.from_numpy


def first_nonfinite(x: Tree, key: str) -> tuple[str, int, Any] | None:
    """``(key, row, value)`` of the first NaN/inf in a floating leaf of ``x``, else ``None``.

    ``x`` holds one row per env (an array, a tensor or a nested mapping of them); integer
    and bool leaves are skipped. Nested keys are dotted.

    >>> first_nonfinite({"pos": np.array([[0.0, 1.0], [np.inf, 0.0]])}, "obs")
    ('obs.pos', 1, inf)
    >>> first_nonfinite(np.array([0, 1]), "obs") is None
    True
    """
    if isinstance(x, Mapping):
        for name, value in x.items():
            found = first_nonfinite(value, f"{key}.{name}")
            if found is not None:
                return found
        return None
    arr = x.numpy() if isinstance(x, torch.Tensor) else x
    if type(arr) is not np.ndarray:
        arr = np.asarray(arr)
    if arr.dtype.kind not in "fc":
        return None
    ok = np.isfinite(arr)
    if ok.all():
        return None
    flat = ok.reshape(len(arr), -1) if arr.ndim else ok.reshape(1, 1)
    row = int(np.flatnonzero(~flat.all(axis=1))[0])
    bad = arr.reshape(flat.shape)[row][~flat[row]][0]
    return key, row, bad.item()


def _surely_finite(x: Tree) -> bool:
    """Cheap test: ``True`` when ``x`` surely holds no NaN/inf (integer or bool arrays, or
    float arrays of 32 bits or more whose sum of squares or sum is finite); ``False`` means
    "look closer" (:func:`first_nonfinite`), e.g. for tensors or a sum that overflowed."""
    if type(x) is _ndarray:
        dtype = x.dtype
        kind = dtype.kind
        if kind in "biu":
            return True
        return (
            kind == "f"
            and dtype.itemsize >= 4
            and (_isfinite(_vdot(x, x)) or _isfinite(_add_reduce(x, None)))
        )
    if isinstance(x, Mapping):
        return all(_surely_finite(v) for v in x.values())
    return False


def _step_finite(rew: Any, obs: Tree) -> bool:
    """``_surely_finite(rew) and _surely_finite(obs)``, inlined for the common step (float
    arrays of 32 bits or more). The sum of squares (``np.vdot(x, x)``, a third of the cost
    of a sum on small arrays) is finite only if every element is (its terms cannot
    cancel); where it overflows (``|x|`` above ~1e19 in float32) the sum decides, as
    before. ``False`` means "look closer", as for :func:`_surely_finite`.

    >>> _step_finite(np.zeros(2), np.ones((2, 3), np.float32))
    True
    >>> _step_finite(np.array([0.0, np.nan]), np.ones((2, 3)))
    False
    >>> _step_finite(np.zeros(2), np.array([[np.inf, -np.inf]], np.float32))
    False
    >>> _step_finite(np.zeros(2), np.full(2, 1e30, np.float32))  # squares overflow: sum
    True
    """
    if type(rew) is _ndarray and type(obs) is _ndarray:
        rd, od = rew.dtype, obs.dtype
        if rd.kind == "f" and od.kind == "f" and rd.itemsize >= 4 and od.itemsize >= 4:
            return (_isfinite(_vdot(rew, rew)) or _isfinite(_add_reduce(rew, None))) and (
                _isfinite(_vdot(obs, obs)) or _isfinite(_add_reduce(obs, None))
            )
    return _surely_finite(rew) and _surely_finite(obs)


def sample_spaces(
    spaces: list[gym.Space], env_ids: np.ndarray, rng: np.random.Generator, same: bool
) -> np.ndarray:
    """One uniform action per env in ``env_ids``, vectorized when the spaces are identical.

    With ``same`` (all spaces equal), Discrete and bounded Box spaces are drawn in one call
    from ``rng``; other spaces fall back to their own ``sample()``.

    >>> rng = np.random.default_rng(0)
    >>> sample_spaces([gym.spaces.Discrete(2)] * 3, np.arange(3), rng, True).shape
    (3,)
    """
    first = spaces[int(env_ids[0])]
    n = len(env_ids)
    if same and isinstance(first, gym.spaces.Discrete):
        start = int(first.start)
        return rng.integers(start, start + int(first.n), size=n).astype(first.dtype, copy=False)
    if same and isinstance(first, gym.spaces.Box) and first.is_bounded("both"):
        if np.issubdtype(first.dtype, np.integer):
            high = first.high.astype(np.int64) + 1
            return rng.integers(first.low, high, size=(n, *first.shape)).astype(first.dtype)
        return rng.uniform(first.low, first.high, size=(n, *first.shape)).astype(first.dtype)
    return np.stack([spaces[int(i)].sample() for i in env_ids])


def legal_random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a boolean ``[n, n_actions]`` mask
    (a row without a legal action gets a uniformly random one).

    >>> mask = np.array([[False, True, False], [True, False, True]])
    >>> acts = legal_random_actions(mask, np.random.default_rng(0))
    >>> bool(mask[np.arange(2), acts].all())
    True
    """
    scores = rng.random(mask.shape) + mask.astype(np.float64)
    return scores.argmax(axis=1)


def _rows_tensor(x: Any, n: int) -> torch.Tensor | None:
    """``torch.as_tensor(x)`` for a numeric numpy array of ``n`` rows, else ``None``."""
    if type(x) is not _ndarray or x.dtype.kind not in "biufc" or x.shape[:1] != (n,):
        return None
    try:
        return _from_numpy(x)
    except (TypeError, ValueError):  # a dtype torch lacks, negative strides
        return None


def _policy_input(
    obs: Tree, info: dict[str, Any], size: torch.Size, memo: list[tuple[Any, Any]] | None = None
) -> Batch | None:
    """The policy's input ``Batch(obs=..., info=...)`` built without ``Batch``'s general
    conversion, when ``obs`` is a numeric array and ``info`` a flat dict of them, all with
    ``size[0]`` rows (the per-step case); ``None`` otherwise (the caller builds it as usual).

    ``memo`` (a collector's own ``[(array, tensor)]``) keeps the last ``info["env_id"]``
    array converted and its tensor, which shares the array's memory: the collector passes
    the same ``env_ids`` array step after step, so it is converted once.

    >>> b = _policy_input(np.zeros((2, 3)), {"env_id": np.arange(2)}, torch.Size([2]))
    >>> b.obs.shape, b.info.env_id.tolist()
    (torch.Size([2, 3]), [0, 1])
    """
    n = size[0]
    t = _rows_tensor(obs, n)
    if t is None:
        return None
    entries: dict[str, Any] = {"obs": t}
    if info:
        sub = {}
        last = memo[0] if memo is not None else (None, None)
        for key, value in info.items():
            if type(key) is not str:
                return None
            if value is last[0] and value is not None:  # the same ``env_ids`` array
                sub[key] = last[1]
                continue
            leaf = _rows_tensor(value, n)
            if leaf is None:
                return None
            sub[key] = leaf
            if key == "env_id" and memo is not None:
                memo[0] = (value, leaf)
        entries["info"] = wrap_entries(Batch, sub, size)
    return wrap_entries(Batch, entries, size)


def step_infos(step_info: Any, env_ids: np.ndarray) -> dict[str, Any]:
    """``stack_infos(step_info, env_ids)``, with a shortcut for the common info of nothing
    but the vector env's ``env_id`` (which ``stack_infos`` takes from ``env_ids``), or of
    nothing at all: the envs' own dicts from ``BaseVectorEnv._step_ids``, which get their
    ``env_id`` here (as ``step`` would give it) when they hold more.

    Only keys every dict holds are kept (:func:`~tdrl.data.tree.stack_infos`), so the
    first dict decides the shortcut.

    >>> step_infos([{"env_id": 0}, {"env_id": 1}], np.arange(2))
    {'env_id': array([0, 1])}
    >>> step_infos([{}, {}], np.arange(2))
    {'env_id': array([0, 1])}
    >>> step_infos([{"x": 1.0}, {"x": 2.0}], np.arange(2))
    {'env_id': array([0, 1]), 'x': array([1., 2.])}
    """
    n = len(env_ids)
    first = step_info[0] if n and len(step_info) == n else None
    if type(first) is dict:
        if not first or (len(first) == 1 and "env_id" in first):
            return {"env_id": env_ids}
        if "env_id" not in first:  # the envs' own dicts: the id ``step`` would add
            for info, i in zip(step_info, env_ids.tolist()):
                info["env_id"] = i
    return stack_infos(step_info, env_ids)


StepFn = Callable[
    [Any, np.ndarray, bool], tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]
]
"""The collector loop's env step: ``(action, env_ids, all_envs) -> (obs_next, rew,
terminated, truncated, info)`` with ``info`` a dict of arrays (:func:`step_infos`)."""


def env_stepper(env: Any) -> StepFn:
    """The env step of one ``collect`` loop: ``step(action, env_ids, all_envs)`` steps the
    envs ``env_ids`` (every env of ``env`` when ``all_envs``; the ids may shrink from step
    to step in an ``n_episode`` collect) and stacks their infos into a dict.

    A vector env whose ``step`` is the base class's (not overridden, not replaced on the
    instance) and not async is stepped through ``BaseVectorEnv._step_ids``: the envs' own
    info dicts, without the object array ``step`` would build and :func:`step_infos` turn
    straight back into a dict. Any other env through its ``step``.

    >>> from tdrl.env import DummyVectorEnv
    >>> from tdrl.env.testing import MoveToRightEnv
    >>> venv = DummyVectorEnv([lambda: MoveToRightEnv(size=3)] * 2)
    >>> _ = venv.reset()
    >>> obs, rew, term, trunc, info = env_stepper(venv)(np.ones(2, int), np.arange(2), True)
    >>> obs.tolist(), sorted(info), info["env_id"].tolist()
    ([1, 1], ['env_id', 'ident', 'step'], [0, 1])
    >>> obs, rew, term, trunc, info = env_stepper(venv)(np.ones(1, int), np.arange(1), False)
    >>> obs.tolist(), info["env_id"].tolist()
    ([2], [0])
    """
    if type(env).step is BaseVectorEnv.step and "step" not in vars(env) and not env.is_async:
        step_ids = env._step_ids

        def plain(
            act: Any, env_ids: np.ndarray, all_envs: bool
        ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
            obs, rew, term, trunc, infos = step_ids(act, env_ids)
            return obs, rew, term, trunc, step_infos(infos, env_ids)

        return plain
    env_step = env.step

    def general(
        act: Any, env_ids: np.ndarray, all_envs: bool
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rew, term, trunc, infos = env_step(act, None if all_envs else env_ids)
        return obs, rew, term, trunc, step_infos(infos, env_ids)

    return general
