"""Checkpoints of a whole training run, for exact resumption.

A checkpoint holds the algorithm (networks, target networks, optimizers, schedulers and
normalizers: everything in its ``state_dict``), the collectors (buffers, in-process env
snapshots, last observations, hidden states), the trainer's counters, best score and
progress inside the current epoch (a run interrupted mid-epoch resumes there), the logger's
interval bookkeeping and the global RNG states of Python, NumPy and torch. Resuming a run
from a checkpoint reproduces, on CPU, the metrics of a run that was never interrupted.

Writes are atomic: the state goes to ``checkpoint.pt.tmp``, which replaces the checkpoint
only once complete; on any error (a full disk) the partial file is removed and the error
re-raised, naming the checkpoint. A file that is not a tdrl checkpoint, or does not fit the
run, is a :class:`~tdrl.errors.CheckpointError` naming it.
"""

from __future__ import annotations

import pickle
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tdrl.errors import CheckpointError

__all__ = [
    "CHECKPOINT_KEYS",
    "LOAD_ERRORS",
    "CheckpointError",
    "atomic_save",
    "load_checkpoint",
    "load_checkpoint_weights",
    "load_file",
    "read_checkpoint",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
]

CHECKPOINT_KEYS = ("trainer", "algorithm", "collectors", "rng")
"""The entries every checkpoint has (beside ``logger``)."""


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


def atomic_save(obj: Any, path: str | Path) -> Path:
    """``torch.save(obj)`` to ``path`` through ``path.tmp``: the file is either the old one
    or the complete new one, and no partial ``.tmp`` file stays behind on an error.

    >>> import tempfile
    >>> p = atomic_save({"x": 1}, Path(tempfile.mkdtemp()) / "f.pt")
    >>> torch.load(p), sorted(q.name for q in p.parent.iterdir())
    ({'x': 1}, ['f.pt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        torch.save(obj, tmp)
        tmp.replace(path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from exc
        raise
    return path


def _write_error(path: Path, exc: OSError) -> OSError:
    """An ``OSError`` saying which file could not be written, and why."""
    if str(path) in str(exc):
        return exc
    text = f"could not write {path}: {exc.strerror or exc or type(exc).__name__}"
    return OSError(exc.errno, text) if exc.errno is not None else OSError(text)


def save_checkpoint(trainer: Any, path: str | Path) -> Path:
    """Write the full state of ``trainer``'s run to ``path`` (atomically, :func:`atomic_save`)."""
    try:
        state = {
            "trainer": trainer.state_dict(),
            "algorithm": trainer.algorithm.state_dict(),
            "collectors": {k: c.state_dict() for k, c in _collectors(trainer).items()},
            "rng": rng_state(),
            "logger": _logger_state(trainer.logger),
        }
    except OSError as exc:  # pickling the buffers goes through torch.save too
        raise _write_error(Path(path), exc) from exc
    return atomic_save(state, path)


LOAD_ERRORS: tuple[type[BaseException], ...] = (
    RuntimeError,
    EOFError,
    pickle.UnpicklingError,
    zipfile.BadZipFile,
    ValueError,
    AttributeError,
    ImportError,
    IndexError,
    KeyError,
    TypeError,
)
"""What ``torch.load`` raises on a truncated, corrupt or foreign file."""


def load_file(path: Path, what: str, expected: str) -> Any:
    """``torch.load(path)`` on the CPU; a file it cannot read is a
    :class:`~tdrl.errors.CheckpointError`: ``WHAT PATH: expected EXPECTED, could not read
    it: REASON``."""
    try:
        return torch.load(path, weights_only=False, map_location="cpu")
    except LOAD_ERRORS as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"{what} {path}: expected {expected}, could not read it: {reason}"
        ) from exc


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint file; a missing, truncated or foreign file is a
    :class:`~tdrl.errors.CheckpointError` naming it.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "checkpoint.pt"
    >>> _ = bad.write_bytes(b"not a checkpoint")
    >>> read_checkpoint(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tdrl.errors.CheckpointError: checkpoint .../checkpoint.pt: expected a tdrl checkpoint ...
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path}: expected a file, found none")
    state = load_file(path, "checkpoint", "a tdrl checkpoint (torch.save file)")
    missing = [k for k in CHECKPOINT_KEYS if not isinstance(state, dict) or k not in state]
    if missing:
        raise CheckpointError(
            f"checkpoint {path}: expected a tdrl checkpoint with entries "
            f"{', '.join(CHECKPOINT_KEYS)}, got a file without {', '.join(missing)}"
        )
    return state  # type: ignore[no-any-return]


def load_checkpoint_weights(algorithm: Any, state: dict[str, Any], path: str | Path) -> None:
    """Load a checkpoint's algorithm state into ``algorithm``; weights of another algorithm
    or network shape are a :class:`~tdrl.errors.CheckpointError` naming ``path``."""
    try:
        algorithm.load_state_dict(state["algorithm"])
    except (RuntimeError, KeyError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"checkpoint {path}: expected the weights of this run's algorithm, got "
            f"mismatched ones ({first})"
        ) from exc


def load_checkpoint(trainer: Any, path: str | Path, state: dict[str, Any] | None = None) -> None:
    """Restore a run saved by :func:`save_checkpoint` into a freshly built ``trainer``
    (``state``: the file's contents if already read with :func:`read_checkpoint`).

    A checkpoint of another algorithm or network shape is a
    :class:`~tdrl.errors.CheckpointError` naming the file.
    """
    if state is None:
        state = read_checkpoint(path)
    load_checkpoint_weights(trainer.algorithm, state, path)
    for name, collector in _collectors(trainer).items():
        if name in state["collectors"]:
            collector.load_state_dict(state["collectors"][name])
    trainer.load_state_dict(state["trainer"])
    for key, value in state.get("logger", {}).items():
        setattr(trainer.logger, key, value)
    set_rng_state(state["rng"])
