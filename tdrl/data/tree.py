"""Small helpers over nested dicts of arrays (observations of Dict spaces, infos).

The collector keeps per-env data as numpy arrays or dicts of them; these helpers index,
assign and convert such trees without building TensorDicts on the hot path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

Tree = Any  # np.ndarray | torch.Tensor | Mapping[str, Tree]


def tree_index(x: Tree, index: Any) -> Tree:
    """Index every leaf of ``x`` with ``index``.

    >>> tree_index({"a": np.arange(3), "b": {"c": np.arange(3) * 2}}, [2])
    {'a': array([2]), 'b': {'c': array([4])}}
    """
    if isinstance(x, Mapping):
        return {k: tree_index(v, index) for k, v in x.items()}
    return x[index]


def tree_assign(x: Tree, index: Any, value: Tree) -> None:
    """Write ``value`` into ``x[index]`` leaf by leaf, in place.

    >>> x = {"a": np.zeros(3)}
    >>> tree_assign(x, [1], {"a": np.ones(1)})
    >>> x["a"]
    array([0., 1., 0.])
    """
    if isinstance(x, Mapping):
        for k, v in x.items():
            tree_assign(v, index, value[k])
    else:
        x[index] = value


def tree_copy(x: Tree) -> Tree:
    """Deep-copy the leaves of ``x`` (numpy arrays or tensors)."""
    if isinstance(x, Mapping):
        return {k: tree_copy(v) for k, v in x.items()}
    return x.clone() if isinstance(x, torch.Tensor) else np.array(x, copy=True)


def tree_to_torch(x: Tree) -> Tree:
    """Turn numpy leaves into tensors, sharing memory where numpy allows it.

    >>> tree_to_torch({"a": np.zeros(2, dtype=np.float32)})["a"].dtype
    torch.float32
    """
    if isinstance(x, Mapping):
        return {k: tree_to_torch(v) for k, v in x.items()}
    return torch.as_tensor(x)


def tree_to_numpy(x: Tree) -> Tree:
    """Turn tensor leaves into numpy arrays (CPU, detached).

    >>> tree_to_numpy(torch.arange(2))
    array([0, 1])
    """
    if isinstance(x, Mapping):
        return {k: tree_to_numpy(v) for k, v in x.items()}
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def stack_infos(infos: Any, env_ids: np.ndarray | None = None) -> dict[str, Any]:
    """Stack the numeric entries of a sequence of info dicts into arrays.

    Only keys present in every dict whose values are numbers or numeric arrays are kept
    (strings and objects cannot live in a tensor storage); nested dicts recurse. The vector
    envs' ``env_id`` entry is taken from ``env_ids`` when given, without reading the dicts.

    >>> stack_infos([{"env_id": 0, "s": "x"}, {"env_id": 1, "s": "y"}])
    {'env_id': array([0, 1])}
    """
    if len(infos) == 0:
        return {}
    first = infos[0]
    out: dict[str, Any] = {}
    if env_ids is not None and "env_id" in first:
        out["env_id"] = np.asarray(env_ids)
        if len(first) == 1:  # the common case: nothing but the env id
            return out
    for key, value in first.items():
        if key in out or key.startswith("_") or not all(key in d for d in infos):
            continue
        if isinstance(value, Mapping):
            sub = stack_infos([d[key] for d in infos])
            if sub:
                out[key] = sub
            continue
        if isinstance(value, (bool, int, float, np.number, np.bool_)) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
        ):
            try:
                out[key] = np.stack([np.asarray(d[key]) for d in infos])
            except ValueError:  # ragged across envs: not storable as one column
                continue
    return out
