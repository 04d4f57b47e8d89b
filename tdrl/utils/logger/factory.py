"""One logger for a run directory, by kind: what ``tdrl train --logger KIND`` and the
recipes' ``--logger`` make."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tdrl.utils.logger.base import BaseLogger, MultiLogger
from tdrl.utils.logger.console import ConsoleLogger
from tdrl.utils.logger.csv import CSVLogger

LOGGER_KINDS = ("csv", "console", "tensorboard", "wandb", "none")
"""The kinds :func:`make_logger` accepts."""


def make_logger(kind: str, run_dir: str | Path, config: dict[str, Any] | None = None) -> BaseLogger:
    """A logger of ``kind`` writing into ``run_dir`` (W&B: offline unless
    ``WANDB_MODE=online``; ``config`` is the run's configuration W&B records).

    Whatever the kind, the run's CSV files are written (``csv`` and ``none``: only them;
    ``console``, ``tensorboard`` and ``wandb`` write beside them), so every run can be
    plotted (``tdrl plot RUN_DIR``). Training stats are logged after every collect, test
    stats after every test and losses every 100 gradient steps.

    >>> import tempfile
    >>> logger = make_logger("csv", tempfile.mkdtemp())
    >>> type(logger).__name__, logger.train_interval, logger.update_interval
    ('CSVLogger', 1, 100)
    >>> make_logger("tb", tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    ValueError: logger: expected one of csv, console, tensorboard, wandb, none, got 'tb'
    """
    if kind not in LOGGER_KINDS:
        raise ValueError(f"logger: expected one of {', '.join(LOGGER_KINDS)}, got {kind!r}")
    run_dir = Path(run_dir)
    csv_logger = CSVLogger(run_dir)  # every run keeps its CSV: tdrl plot reads any run
    backend: BaseLogger | None = None
    if kind == "console":
        backend = ConsoleLogger()
    elif kind == "tensorboard":
        from tdrl.utils.logger.tensorboard import TensorboardLogger

        backend = TensorboardLogger(str(run_dir))
    elif kind == "wandb":
        from tdrl.utils.logger.wandb import WandbLogger

        backend = WandbLogger(project="tdrl", name=run_dir.name, config=config, dir=run_dir)
    logger: BaseLogger = csv_logger if backend is None else MultiLogger([csv_logger, backend])
    logger.train_interval, logger.test_interval, logger.update_interval = 1, 1, 100
    return logger
