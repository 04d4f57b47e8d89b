"""Checkpoints of a whole training run, for exact resumption.

A checkpoint holds the algorithm (networks, target networks, optimizers, schedulers and
normalizers: everything in its ``state_dict``), the collectors (buffers, in-process env
snapshots, last observations, hidden states), the trainer's counters and best score, and
the global RNG states of Python, NumPy and torch. Resuming a run from a checkpoint taken at
the end of an epoch reproduces, on CPU, the metrics of a run that was never interrupted.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch


def rng_state() -> dict[str, Any]:
    """The global RNG states of Python's ``random``, NumPy and torch."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def _collectors(trainer: Any) -> dict[str, Any]:
    out = {}
    for name in ("train_collector", "test_collector"):
        collector = getattr(trainer, name, None)
        if collector is not None:
            out[name] = collector
    return out


def _logger_state(logger: Any) -> dict[str, int]:
    """The logger's interval bookkeeping (``last_log_*`` / ``last_save_step``)."""
    return {k: v for k, v in vars(logger).items() if k.startswith("last_") and isinstance(v, int)}


def save_checkpoint(trainer: Any, path: str | Path) -> Path:
    """Write the full state of ``trainer``'s run to ``path`` (a ``torch.save`` file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "trainer": trainer.state_dict(),
        "algorithm": trainer.algorithm.state_dict(),
        "collectors": {k: c.state_dict() for k, c in _collectors(trainer).items()},
        "rng": rng_state(),
        "logger": _logger_state(trainer.logger),
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(trainer: Any, path: str | Path) -> None:
    """Restore a run saved by :func:`save_checkpoint` into a freshly built ``trainer``."""
    state = torch.load(Path(path), weights_only=False)
    trainer.algorithm.load_state_dict(state["algorithm"])
    for name, collector in _collectors(trainer).items():
        if name in state["collectors"]:
            collector.load_state_dict(state["collectors"][name])
    trainer.load_state_dict(state["trainer"])
    for key, value in state.get("logger", {}).items():
        setattr(trainer.logger, key, value)
    set_rng_state(state["rng"])
