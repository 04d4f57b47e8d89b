"""Loggers: console, CSV, TensorBoard, Weights & Biases (offline by default), and a no-op.

All share :class:`BaseLogger`'s scoped, interval-gated interface and write flat
``"scope/a/b"`` scalar keys; :func:`make_logger` makes the one a run's ``--logger KIND``
names. ``TensorboardLogger`` and ``WandbLogger`` import their libraries lazily, on first
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tdrl.utils.logger.base import SCOPE_STEP, BaseLogger, LazyLogger, MultiLogger, flatten_scalars
from tdrl.utils.logger.console import ConsoleLogger
from tdrl.utils.logger.csv import CSVLogger, read_csv_log, truncate_csv_logs
from tdrl.utils.logger.factory import LOGGER_KINDS, make_logger

if TYPE_CHECKING:
    from tdrl.utils.logger.tensorboard import TensorboardLogger
    from tdrl.utils.logger.wandb import WandbLogger

__all__ = [
    "LOGGER_KINDS",
    "SCOPE_STEP",
    "BaseLogger",
    "CSVLogger",
    "ConsoleLogger",
    "LazyLogger",
    "MultiLogger",
    "TensorboardLogger",
    "WandbLogger",
    "flatten_scalars",
    "make_logger",
    "read_csv_log",
    "truncate_csv_logs",
]


def __getattr__(name: str) -> Any:
    if name == "TensorboardLogger":
        from tdrl.utils.logger.tensorboard import TensorboardLogger

        return TensorboardLogger
    if name == "WandbLogger":
        from tdrl.utils.logger.wandb import WandbLogger

        return WandbLogger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
