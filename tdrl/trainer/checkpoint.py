"""Checkpoints of a whole training run, for exact resumption.

A checkpoint holds the algorithm (networks, target networks, optimizers, schedulers and
normalizers: everything in its ``state_dict``), the collectors (buffers, in-process env
snapshots, last observations, hidden states), the trainer's counters, best score and
progress inside the current epoch (a run interrupted mid-epoch resumes there), the logger's
interval bookkeeping and the global RNG states of Python, NumPy and torch. Resuming a run
from a checkpoint reproduces, on CPU, the metrics of a run that was never interrupted.

Writes are atomic: the state goes to ``checkpoint.pt.tmp``, which replaces the checkpoint
only once complete; on any error (a full disk) the partial file is removed and an
``OSError`` naming the checkpoint and the OS error is raised (``torch.save`` itself reports
a failed write as a ``RuntimeError``; the write goes through a file object that keeps the
real ``OSError``). A file that is not a tdrl checkpoint, is corrupt, or does not fit the
run, is a :class:`~tdrl.errors.CheckpointError` naming it.

Format (``CHECKPOINT_FORMAT``): a checkpoint is a ``torch.save`` zip file. Format 2 adds
``"format": 2`` and ``"digests"``, the SHA-256 of every nested pickle (the buffers and the
in-process env snapshots), and its buffers keep only their filled rows. Reading a
checkpoint first checks the CRC-32 of every entry of the zip file, then (format 2) the
digests, before anything is unpickled: one flipped bit is a ``CheckpointError``. Format-1
files (no ``"format"`` entry, written before) still load.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tdrl.errors import CheckpointError

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_KEYS",
    "LOAD_ERRORS",
    "CheckpointError",
    "atomic_save",
    "checkpoint_bytes",
    "load_checkpoint",
    "load_checkpoint_weights",
    "load_file",
    "nested_digests",
    "read_checkpoint",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
    "verify_zip",
    "write_bytes",
]

CHECKPOINT_KEYS = ("trainer", "algorithm", "collectors", "rng")
"""The entries every checkpoint has (beside ``logger``, ``format`` and ``digests``)."""

CHECKPOINT_FORMAT = 2
"""The checkpoint format this tdrl writes; it reads this one and format 1 (no ``format``
entry, no digests, buffers with every row)."""


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
        try:
            torch.save(obj, tmp)
        except RuntimeError as exc:  # a failed write: "[enforce fail ...] unexpected pos"
            os_error = _os_error_of(obj, tmp)
            if os_error is None:
                raise
            raise os_error from exc
        tmp.replace(path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from exc
        raise
    return path


def _os_error_of(obj: Any, tmp: Path) -> OSError | None:
    """The ``OSError`` behind a ``RuntimeError`` of ``torch.save(obj, tmp)`` (which hides
    it): the write again through a Python file object that keeps it; ``None`` if that
    write raises no ``OSError``."""
    try:
        with open(tmp, "wb") as f:
            writer = _Writer(f)
            try:
                torch.save(obj, writer)  # type: ignore[arg-type]
            except RuntimeError:
                if writer.error is None:
                    raise
                return writer.error
    except OSError as exc:  # opening, or flushing on close
        return exc
    except RuntimeError:
        return None
    return None


class _Writer(io.RawIOBase):
    """A write-only file object around ``f`` that keeps the ``OSError`` of a failed write
    (``torch.save`` turns it into an opaque ``RuntimeError: ... unexpected pos``)."""

    def __init__(self, f: Any) -> None:
        super().__init__()
        self.f = f
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return int(self.f.write(data))
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        self.f.flush()


def _write_error(path: Path, exc: OSError) -> OSError:
    """An ``OSError`` saying which file could not be written, and why."""
    if str(path) in str(exc):
        return exc
    text = f"could not write {path}: {exc.strerror or exc or type(exc).__name__}"
    return OSError(exc.errno, text) if exc.errno is not None else OSError(text)


def _checkpoint_state(trainer: Any, path: str | Path) -> dict[str, Any]:
    """What :func:`save_checkpoint` writes (format :data:`CHECKPOINT_FORMAT`)."""
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
    state["format"] = CHECKPOINT_FORMAT
    state["digests"] = nested_digests(state)
    return state


def save_checkpoint(trainer: Any, path: str | Path) -> Path:
    """Write the full state of ``trainer``'s run to ``path`` (atomically, :func:`atomic_save`)."""
    return atomic_save(_checkpoint_state(trainer, path), path)


def checkpoint_bytes(trainer: Any) -> bytes:
    """The checkpoint :func:`save_checkpoint` would write now, in memory (a copy of the
    state at this moment, for :func:`write_bytes` later)."""
    buf = io.BytesIO()
    torch.save(_checkpoint_state(trainer, "<memory>"), buf)
    return buf.getvalue()


def write_bytes(data: bytes, path: str | Path) -> Path:
    """Write ``data`` to ``path`` atomically (through ``path.tmp``); an ``OSError`` names
    the file and leaves no partial file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, exc) from exc
    return path


def _nested_blobs(obj: Any, where: str) -> Iterator[tuple[str, bytes]]:
    """``(path, bytes)`` of every ``bytes`` value (a nested pickle) inside ``obj``."""
    if isinstance(obj, bytes | bytearray):
        yield where, bytes(obj)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _nested_blobs(value, f"{where}/{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from _nested_blobs(value, f"{where}/{i}")


def nested_digests(state: dict[str, Any]) -> dict[str, str]:
    """SHA-256 (hex) of every nested pickle of a checkpoint's collectors, by path
    (``collectors/train_collector/buffer``, ``.../envs/0``): what format 2 verifies."""
    return {
        where: hashlib.sha256(blob).hexdigest()
        for where, blob in _nested_blobs(state.get("collectors"), "collectors")
    }


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
    """``torch.load(path)`` on the CPU, after :func:`verify_zip`; a file it cannot read is
    a :class:`~tdrl.errors.CheckpointError`: ``WHAT PATH: expected EXPECTED, could not read
    it: REASON``."""
    verify_zip(path, what, expected)
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
    _check_format(path, state)
    return state  # type: ignore[no-any-return]


def _check_format(path: Path, state: dict[str, Any]) -> None:
    """The format is one this tdrl reads and, for format 2, every nested pickle matches
    its recorded SHA-256."""
    version = state.get("format", 1)
    if version not in (1, CHECKPOINT_FORMAT):
        raise CheckpointError(
            f"checkpoint {path}: expected checkpoint format 1 or {CHECKPOINT_FORMAT}, got "
            f"format {version!r} (written by another tdrl version)"
        )
    if version == 1:
        return
    recorded = state.get("digests")
    if not isinstance(recorded, dict):
        raise CheckpointError(f"checkpoint {path}: expected SHA-256 digests, found none")
    actual = nested_digests(state)
    for where in sorted(set(recorded) | set(actual)):
        if recorded.get(where) != actual.get(where):
            raise CheckpointError(
                f"checkpoint {path}: expected {where} to match its SHA-256 digest, got a "
                "corrupt file (the digest differs)"
            )


def verify_zip(path: Path, what: str = "checkpoint", expected: str = "a tdrl checkpoint") -> None:
    """Check the CRC-32 of every entry of a ``torch.save`` zip file (a file that is no zip
    file is left to ``torch.load``); a mismatch is a :class:`~tdrl.errors.CheckpointError`
    naming the file and the entry."""
    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"{what} {path}: expected {expected}, it is corrupt: {reason}"
        ) from exc
    if bad is not None:
        raise CheckpointError(
            f"{what} {path}: expected {expected}, it is corrupt: entry {bad} fails its CRC-32"
        )


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
            try:
                collector.load_state_dict(state["collectors"][name])
            except LOAD_ERRORS as exc:  # a nested pickle (buffer, env snapshot) is corrupt
                first = str(exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
                raise CheckpointError(
                    f"checkpoint {path}: expected the state of this run's {name}, could not "
                    f"restore it: {first}"
                ) from exc
    trainer.load_state_dict(state["trainer"])
    for key, value in state.get("logger", {}).items():
        setattr(trainer.logger, key, value)
    set_rng_state(state["rng"])
