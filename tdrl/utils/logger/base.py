"""The logger interface: scoped, interval-gated writes of flat scalar dicts, plus resume data.

Scopes and their step counters (the x axis of every curve):

=========  ===============  ==========================================
scope      step             written by
=========  ===============  ==========================================
``train``  ``env_step``     :meth:`BaseLogger.log_train_data`
``test``   ``env_step``     :meth:`BaseLogger.log_test_data`
``update`` ``gradient_step`` :meth:`BaseLogger.log_update_data`
``info``   ``epoch``        :meth:`BaseLogger.log_info_data`
``save``   ``epoch``        :meth:`BaseLogger.save_data` (resume data)
=========  ===============  ==========================================

Nested inputs (dicts, dataclasses such as ``CollectStats``, TensorDicts / ``Batch``) are
flattened to ``"scope/a/b"`` keys; values that are not scalars are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SCOPE_STEP", "BaseLogger", "LazyLogger", "MultiLogger", "flatten_scalars"]

SCOPE_STEP: dict[str, str] = {
    "train": "env_step",
    "test": "env_step",
    "update": "gradient_step",
    "info": "epoch",
    "save": "epoch",
}
"""The step counter of each scope."""

RESUME_FILE = "tdrl_resume.json"


def _scalar(value: Any) -> float | None:
    """``value`` as a float if it is a single number, else ``None``."""
    if isinstance(value, bool | int | float | np.number | np.bool_):
        return float(value)
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "biuf":
        return float(value.reshape(-1)[0])
    torch = sys.modules.get("torch")  # no tensor can exist before torch is imported
    if (
        torch is not None
        and isinstance(value, torch.Tensor)
        and value.numel() == 1
        and not value.is_complex()
    ):
        return float(value.detach().reshape(-1)[0].item())
    return None


def _children(value: Any) -> Iterable[tuple[Any, Any]] | None:
    """The ``(key, child)`` pairs of a container, or ``None`` for a leaf."""
    if isinstance(value, Mapping):
        return value.items()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    items = getattr(value, "items", None)
    if callable(items) and hasattr(value, "batch_size"):  # TensorDict / Batch
        return items()
    return None


def _array(value: Any) -> np.ndarray | None:
    """``value`` as a numeric numpy array if it is an array or tensor, else ``None``."""
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind in "biuf" else None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and not value.is_complex():
        return value.detach().cpu().numpy()  # type: ignore[no-any-return]
    return None


def _flatten(data: Any, prefix: str, delimiter: str, keep_arrays: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def visit(value: Any, key: str) -> None:
        children = _children(value)
        if children is not None:
            for k, v in children:
                name = delimiter.join(k) if isinstance(k, tuple) else str(k)
                visit(v, f"{key}{delimiter}{name}" if key else name)
            return
        if not key:
            return
        if keep_arrays:
            array = _array(value)
            if array is not None and array.size != 1:
                out[key] = array
                return
        number = _scalar(value)
        if number is not None:
            out[key] = number

    visit(data, prefix)
    return out


def flatten_scalars(data: Any, prefix: str = "", delimiter: str = "/") -> dict[str, float]:
    """Flatten nested dicts / dataclasses / TensorDicts to ``{"a/b": float}``.

    Non-scalar leaves (arrays with more than one element, strings, ``None``) are skipped.

    >>> flatten_scalars({"returns_stat": {"mean": np.float32(1.5), "all": np.arange(3)},
    ...                  "n": 3, "name": "x"}, prefix="test")
    {'test/returns_stat/mean': 1.5, 'test/n': 3.0}
    """
    return _flatten(data, prefix, delimiter, keep_arrays=False)


class BaseLogger(ABC):
    """Base class of tdrl's loggers (Tianshou's ``BaseLogger`` interface, tdrl key names).

    Each ``log_*`` call writes only when its step advanced by at least the scope's interval
    since the last write. Subclasses implement :meth:`write` (and usually
    :meth:`restore_data` and :meth:`finalize`).

    :param train_interval: minimum env steps between two ``train`` writes.
    :param test_interval: minimum env steps between two ``test`` writes.
    :param update_interval: minimum gradient steps between two ``update`` writes.
    :param info_interval: minimum epochs between two ``info`` writes.
    :param save_interval: minimum epochs between two ``save`` writes (resume data and the
        ``save_checkpoint_fn`` call); ``None`` never saves. tdrl deviation: the default is
        ``1`` (Tianshou's is ``None``), so that every run can be resumed.
    """

    def __init__(
        self,
        train_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = 1,
    ) -> None:
        self.train_interval = train_interval
        self.test_interval = test_interval
        self.update_interval = update_interval
        self.info_interval = info_interval
        self.save_interval = save_interval
        self.last_log_train_step = -1
        self.last_log_test_step = -1
        self.last_log_update_step = -1
        self.last_log_info_step = -1
        self.last_save_step = -1

    @abstractmethod
    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Write flat ``data`` (keys ``"scope/..."``) at ``step`` of ``SCOPE_STEP[scope]``."""

    def prepare(self, data: Any, scope: str) -> dict[str, float]:
        """Flatten ``data`` to scalar ``"scope/..."`` keys."""
        return flatten_scalars(data, prefix=scope)

    def prepare_dict_for_logging(
        self,
        input_dict: Any,
        parent_key: str = "",
        delimiter: str = "/",
        exclude_arrays: bool = True,
    ) -> dict[str, float | np.ndarray]:
        """Flatten a nested dict (or dataclass, TensorDict) to ``{"a/b/c": value}`` keys, keeping
        only what can be logged: Tianshou's ``prepare_dict_for_logging``.

        Numbers (Python, numpy, one-element arrays and tensors) become floats; numeric
        arrays and tensors with another number of elements are dropped, or, with
        ``exclude_arrays=False``, kept as numpy arrays; anything else (strings, tuples,
        ``None``) is dropped. What the ``log_*`` methods write is this with
        ``exclude_arrays=True`` and the scope as ``parent_key``.

        :param input_dict: the nested data.
        :param parent_key: a prefix for every key (joined with ``delimiter``).
        :param delimiter: what joins the levels of a key.
        :param exclude_arrays: drop arrays (the default) instead of keeping them.

        >>> LazyLogger().prepare_dict_for_logging(
        ...     {"a": 1, "b": {"c": np.float32(0.5), "d": "text"}}, delimiter=".")
        {'a': 1.0, 'b.c': 0.5}
        >>> LazyLogger().prepare_dict_for_logging({"v": np.arange(3)}, exclude_arrays=False)
        {'v': array([0, 1, 2])}
        """
        return _flatten(input_dict, parent_key, delimiter, keep_arrays=not exclude_arrays)

    def _log(self, scope: str, data: Any, step: int, interval: int, attr: str) -> None:
        if step - getattr(self, attr) >= interval:
            self.write(scope, int(step), self.prepare(data, scope))
            setattr(self, attr, int(step))

    def log_train_data(self, data: Any, step: int) -> None:
        """Log training-collection statistics at env step ``step``."""
        self._log("train", data, step, self.train_interval, "last_log_train_step")

    log_training_data = log_train_data  # Tianshou's name

    def log_test_data(self, data: Any, step: int) -> None:
        """Log test statistics at env step ``step``."""
        self._log("test", data, step, self.test_interval, "last_log_test_step")

    def log_update_data(self, data: Any, update_step: int) -> None:
        """Log update (loss) statistics at gradient step ``update_step``."""
        self._log("update", data, update_step, self.update_interval, "last_log_update_step")

    def log_info_data(self, data: Any, step: int) -> None:
        """Log epoch-level information at epoch ``step``."""
        self._log("info", data, step, self.info_interval, "last_log_info_step")

    def save_data(
        self,
        epoch: int,
        env_step: int,
        gradient_step: int,
        save_checkpoint_fn: Callable[[int, int, int], Any] | None = None,
    ) -> None:
        """Every ``save_interval`` epochs: call ``save_checkpoint_fn`` and record resume data."""
        if self.save_interval is None or epoch - self.last_save_step < self.save_interval:
            return
        self.last_save_step = epoch
        if save_checkpoint_fn is not None:
            save_checkpoint_fn(epoch, env_step, gradient_step)
        self.write(
            "save",
            int(epoch),
            {"save/env_step": float(env_step), "save/gradient_step": float(gradient_step)},
        )

    def restore_data(self) -> tuple[int, int, int]:
        """Return ``(epoch, env_step, gradient_step)`` of the last save, ``(0, 0, 0)`` if none.

        Loggers that persist their data read it back; this base version has nothing.
        """
        return 0, 0, 0

    def _restored(self, epoch: int, env_step: int, gradient_step: int) -> tuple[int, int, int]:
        """Move the interval counters to a restored position and return it."""
        self.last_save_step = self.last_log_info_step = epoch
        self.last_log_train_step = self.last_log_test_step = env_step
        self.last_log_update_step = gradient_step
        return epoch, env_step, gradient_step

    def finalize(self) -> None:  # noqa: B027 (optional hook)
        """Flush and close (no-op by default)."""


def write_resume_file(
    directory: str | os.PathLike[str], epoch: int, env_step: int, gradient_step: int
) -> None:
    """Atomically write the JSON sidecar with the last save position."""
    path = Path(directory) / RESUME_FILE
    tmp = path.with_suffix(".tmp")
    data = {"epoch": epoch, "env_step": env_step, "gradient_step": gradient_step}
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_resume_file(directory: str | os.PathLike[str]) -> tuple[int, int, int] | None:
    """Read the JSON sidecar, or ``None`` when absent."""
    path = Path(directory) / RESUME_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return int(data["epoch"]), int(data["env_step"]), int(data["gradient_step"])


class LazyLogger(BaseLogger):
    """A logger that writes nothing (the trainers' default).

    >>> LazyLogger().restore_data()
    (0, 0, 0)
    """

    def __init__(self) -> None:
        super().__init__()

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Do nothing."""


class MultiLogger(BaseLogger):
    """Write every log call to several loggers (what ``tdrl train`` uses to keep a CSV log
    beside TensorBoard or W&B, so every run can be plotted).

    The interval gating happens once, here (the intervals given to this logger count); the
    loggers' :meth:`write` is called directly. :meth:`restore_data` asks the first logger.

    >>> class Keep(LazyLogger):
    ...     def __init__(self): super().__init__(); self.rows = []
    ...     def write(self, scope, step, data): self.rows.append((scope, step, data))
    >>> a, b = Keep(), Keep()
    >>> m = MultiLogger([a, b], test_interval=1)
    >>> m.log_test_data({"r": 1.0}, step=10)
    >>> a.rows == b.rows == [("test", 10, {"test/r": 1.0})]
    True
    """

    def __init__(self, loggers: list[BaseLogger], **kwargs: int | None) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        if not loggers:
            raise ValueError("loggers: expected at least one logger, got none")
        self.loggers = list(loggers)

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Write ``data`` with every logger."""
        for logger in self.loggers:
            logger.write(scope, step, data)

    def restore_data(self) -> tuple[int, int, int]:
        """The first logger's resume data (interval counters moved here)."""
        return self._restored(*self.loggers[0].restore_data())

    def finalize(self) -> None:
        """Finalize every logger."""
        for logger in self.loggers:
            logger.finalize()
