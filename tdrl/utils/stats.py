"""Running statistics: a moving average and a running mean/std normalizer.

Both keep their state in plain numbers / numpy arrays and expose ``state_dict`` /
``load_state_dict`` so that checkpoints (e.g. observation or return normalization of PPO) can
include them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch

__all__ = ["MovAvg", "RunningMeanStd"]

Number = int | float | np.number


def _as_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


class MovAvg:
    """Moving average (and std) over the last ``size`` finite values.

    Infinite and NaN values are skipped. ``size <= 0`` keeps every value.

    >>> stat = MovAvg(size=66)
    >>> stat.add(torch.tensor(5))
    5.0
    >>> stat.add(float("inf"))  # skipped
    5.0
    >>> stat.add([6, 7, 8])
    6.5
    >>> print(f"{stat.mean():.2f}±{stat.std():.2f}")
    6.50±1.12
    """

    def __init__(self, size: int = 100) -> None:
        self.size = size
        self.cache: deque[float] = deque(maxlen=size if size > 0 else None)

    def add(self, data_array: Number | list[Number] | np.ndarray | torch.Tensor) -> float:
        """Add a scalar, a list of scalars, an array or a tensor; return the new average."""
        values = _as_numpy(data_array).astype(np.float64, copy=False).reshape(-1)
        self.cache.extend(values[np.isfinite(values)].tolist())
        return self.get()

    def get(self) -> float:
        """The average of the cached values (0.0 when empty)."""
        return float(np.mean(self.cache)) if self.cache else 0.0

    def mean(self) -> float:
        """Same as :meth:`get`."""
        return self.get()

    def std(self) -> float:
        """The (population) standard deviation of the cached values (0.0 when empty)."""
        return float(np.std(self.cache)) if self.cache else 0.0

    def __len__(self) -> int:
        return len(self.cache)

    def state_dict(self) -> dict[str, Any]:
        """``{"size", "cache"}``, plain Python values."""
        return {"size": self.size, "cache": list(self.cache)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.size = int(state["size"])
        self.cache = deque(state["cache"], maxlen=self.size if self.size > 0 else None)


class RunningMeanStd:
    """Running mean and variance of a data stream (Chan et al.'s parallel update).

    ``update(x)`` folds in a batch along axis 0; ``norm(x)`` returns
    ``clip((x - mean) / sqrt(var + eps), -clip_max, clip_max)`` with the type of ``x``
    (torch in, torch out, on ``x``'s device and dtype).

    tdrl deviation: the constructor's ``std`` sets ``var = std ** 2`` (Tianshou stores ``std`` as
    the variance); with the default ``std=1`` both agree.

    >>> rms = RunningMeanStd(clip_max=None)
    >>> rms.update(np.array([[1.0], [3.0]]))
    >>> rms.mean, rms.var, rms.count
    (array([2.]), array([1.]), 2)
    >>> rms.norm(torch.tensor([[4.0]]))
    tensor([[2.]])
    """

    def __init__(
        self,
        mean: float | np.ndarray = 0.0,
        std: float | np.ndarray = 1.0,
        clip_max: float | None = 10.0,
        epsilon: float = float(np.finfo(np.float32).eps),
    ) -> None:
        self.mean: np.ndarray | float = mean
        self.var: np.ndarray | float = (
            float(std) ** 2
            if isinstance(std, int | float)
            else np.square(np.asarray(std, dtype=np.float64))
        )
        self.clip_max = clip_max
        self.count = 0
        self.eps = epsilon

    def update(self, data_array: np.ndarray | torch.Tensor | list[Any]) -> None:
        """Fold a batch (leading axis = samples) into the running mean, variance and count."""
        data = _as_numpy(data_array).astype(np.float64, copy=False)
        if data.ndim == 0:
            raise ValueError(f"data_array: expected at least 1 dimension (samples), got {data}")
        batch_count = data.shape[0]
        if batch_count == 0:
            return
        batch_mean, batch_var = data.mean(axis=0), data.var(axis=0)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        new_mean = self.mean + delta * batch_count / total
        m_2 = self.var * self.count + batch_var * batch_count
        m_2 = m_2 + np.square(delta) * self.count * batch_count / total
        self.mean, self.var, self.count = new_mean, m_2 / total, total

    def norm(self, data_array: Any) -> Any:
        """Normalize (and clip) ``data_array``; torch tensors stay torch tensors."""
        if isinstance(data_array, torch.Tensor):
            mean = torch.as_tensor(self.mean, dtype=data_array.dtype, device=data_array.device)
            var = torch.as_tensor(self.var, dtype=data_array.dtype, device=data_array.device)
            out = (data_array - mean) / torch.sqrt(var + self.eps)
            if self.clip_max:
                out = out.clamp(-self.clip_max, self.clip_max)
            return out
        out = (data_array - self.mean) / np.sqrt(self.var + self.eps)
        if self.clip_max:
            out = np.clip(out, -self.clip_max, self.clip_max)
        return out

    @property
    def std(self) -> np.ndarray | float:
        """``sqrt(var)``."""
        return np.sqrt(self.var)

    def state_dict(self) -> dict[str, Any]:
        """Mean, variance, count and settings (numpy arrays / Python numbers)."""
        return {
            "mean": np.array(self.mean, copy=True),
            "var": np.array(self.var, copy=True),
            "count": self.count,
            "clip_max": self.clip_max,
            "eps": self.eps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        for key in ("mean", "var", "count"):
            if key not in state:
                raise KeyError(f"RunningMeanStd state: missing key {key!r}, got {sorted(state)}")
        self.mean = np.asarray(state["mean"], dtype=np.float64)
        self.var = np.asarray(state["var"], dtype=np.float64)
        self.count = int(state["count"])
        self.clip_max = state.get("clip_max", self.clip_max)
        self.eps = float(state.get("eps", self.eps))
