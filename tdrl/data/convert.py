"""``to_numpy`` / ``to_torch`` / ``to_torch_as`` / ``to_hdf5`` / ``from_hdf5``: Tianshou's
conversion helpers, for tdrl data.

They convert tensors, arrays, Python scalars, sequences, dicts and Batches (recursively).
tdrl Batches always hold tensors, so ``to_numpy(batch)`` returns
:meth:`Batch.to_numpy <tdrl.data.Batch.to_numpy>`'s nested dict of arrays and
``to_torch(batch)`` a new Batch.

>>> to_torch([1.0, 2.0], dtype=torch.float32)
tensor([1., 2.])
>>> to_numpy({"a": torch.tensor([1, 2])})
{'a': array([1, 2])}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from tdrl.data.batch import Batch

__all__ = ["from_hdf5", "to_hdf5", "to_numpy", "to_torch", "to_torch_as"]


def _stack(x: Any) -> np.ndarray:
    """A list/tuple as one array; ragged data raises ``TypeError`` (as in Tianshou)."""
    try:
        arr = np.asarray(x)
    except ValueError as err:
        raise TypeError(f"cannot convert a ragged sequence to one array: {err}") from err
    if arr.dtype == object and any(isinstance(v, (np.ndarray, torch.Tensor)) for v in x):
        raise TypeError("cannot convert a ragged sequence of arrays to one array")
    return arr


def to_numpy(x: Any) -> Any:
    """``x`` as numpy: tensors (detached, on the CPU), scalars and sequences as arrays, dicts
    and Batches as dicts of arrays; ``None`` and other objects as 0-d object arrays."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, Batch):
        return x.to_numpy()
    if isinstance(x, Mapping):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return _stack([to_numpy(v) for v in x])
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return np.asanyarray(x)
    out = np.empty((), dtype=object)
    out[()] = x
    return out


def to_torch(x: Any, dtype: torch.dtype | None = None, device: str | torch.device = "cpu") -> Any:
    """``x`` as torch tensors on ``device`` (cast to ``dtype`` when given); dicts and Batches
    convert every entry. ``None`` or object data raises ``TypeError``."""
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype)
    if isinstance(x, Batch):
        return x.to_torch(dtype=dtype, device=device)
    if isinstance(x, Mapping):
        return {k: to_torch(v, dtype, device) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        x = _stack([to_numpy(v) for v in x])
    if isinstance(x, (bool, int, float, np.generic)):
        x = np.asanyarray(x)
    if isinstance(x, np.ndarray) and x.dtype != object:
        return torch.as_tensor(x).to(device=device, dtype=dtype)
    raise TypeError(f"to_torch: cannot convert {type(x).__name__} to a tensor")


def to_torch_as(x: Any, y: torch.Tensor) -> Any:
    """``to_torch(x)`` with the dtype and device of the tensor ``y``."""
    return to_torch(x, dtype=y.dtype, device=y.device)


def to_hdf5(x: Any, y: Any, compression: str | None = None) -> None:
    """Write the mapping (dict or Batch) ``x`` into the open h5py group ``y``.

    Nested mappings become groups; tensors and numeric arrays datasets (``compression``
    applies to them); anything else is pickled into an attribute. An object that cannot be
    pickled raises ``NotImplementedError``; an array HDF5 cannot store and pickle cannot
    either raises ``RuntimeError`` (as in Tianshou).
    """
    import pickle

    for key, value in x.items():
        if isinstance(value, Mapping):
            to_hdf5(value, y.create_group(key), compression)
            continue
        if isinstance(value, torch.Tensor):
            value = to_numpy(value)
        if isinstance(value, np.ndarray) and value.dtype != object:
            y.create_dataset(key, data=value, compression=compression)
            continue
        try:
            y.attrs[key] = np.void(pickle.dumps(value))
        except Exception as err:
            if isinstance(value, np.ndarray):
                raise RuntimeError(f"{key}: HDF5 cannot store this array nor pickle it") from err
            raise NotImplementedError(f"{key}: cannot pickle {type(value).__name__}") from err


def from_hdf5(x: Any, device: str | None = None) -> dict[str, Any]:
    """Read a group written by :func:`to_hdf5` back into a nested dict (arrays as numpy,
    as tensors on ``device`` when given)."""
    import pickle

    out: dict[str, Any] = {}
    for key, value in x.items():
        if hasattr(value, "keys"):
            out[key] = from_hdf5(value, device)
        else:
            arr = value[()]
            out[key] = arr if device is None else torch.as_tensor(arr, device=device)
    for key, raw in x.attrs.items():
        out[key] = pickle.loads(raw.tobytes())
    return out
