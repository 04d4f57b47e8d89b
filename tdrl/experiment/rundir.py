"""Run directories: where a run trains, and its ``config.yaml``.

Layout of ``runs/ALGO-TASK-seedS[-N]/`` (``docs/run-directory.md``)::

    config.yaml      algo, task, seed and run options, then every preset field (resolved),
                     all at the top level
    policy.pt        the final policy weights (:mod:`tdrl.experiment.policy`)
    checkpoint.pt    the whole run, for --resume (:mod:`tdrl.trainer.checkpoint`)
    train.csv, test.csv, update.csv, save.csv, curve.png

A new run gets ``LOG_DIR/ALGO-TASK-seedS``, or ``-2``, ``-3``, ... when that exists;
``resume`` continues the latest of them, ``overwrite`` replaces the latest. ``tdrl train
--config RUN_DIR/config.yaml`` reproduces a run (in a new directory). Plain data: importing
this module loads no torch.

>>> import tempfile
>>> from tdrl.presets import registry
>>> d = Path(tempfile.mkdtemp())
>>> p = registry.preset("dqn", "CartPole-v1")
>>> write_run_config(d, {"algo": "dqn", "task": "CartPole-v1", "seed": 3}, p).name
'config.yaml'
>>> cfg = read_run_config(d)
>>> cfg["algo"], cfg["seed"], cfg["lr"], cfg["hidden_sizes"]
('dqn', 3, 0.001, [128, 128, 128])
>>> registry.preset(cfg["algo"], cfg["task"], **config_preset_fields(cfg)) == p
True
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tdrl.errors import CheckpointError, RunDirError, UsageError
from tdrl.experiment.config import RUN_OPTIONS, ExperimentConfig
from tdrl.presets import registry

__all__ = [
    "CHECKPOINT_FILE",
    "CONFIG_FILE",
    "RUN_KEYS",
    "config_preset_fields",
    "preset_fields",
    "read_config_file",
    "read_run_config",
    "resolve_run_dir",
    "run_dirs",
    "start_run_dir",
    "write_run_config",
]

CONFIG_FILE = "config.yaml"
CHECKPOINT_FILE = "checkpoint.pt"
RUN_KEYS = ("algo", "task", *RUN_OPTIONS)
"""The keys of ``config.yaml`` that are not preset fields."""
_HEADER = (
    "# tdrl run config: the resolved settings of this run.\n"
    "# `tdrl train --config THIS_FILE` trains it again (in a new run directory);\n"
    "# flags given beside --config win over the values here.\n"
)
_RUN_SUFFIX = re.compile(r"-(\d+)$")


# ------------------------------------------------------------------------- config.yaml
def _plain(value: Any) -> Any:
    """Tuples as lists (YAML's safe dumper knows no tuples)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def preset_fields(preset: registry.Preset) -> dict[str, Any]:
    """Every field of ``preset`` but ``task``, YAML-ready (tuples as lists)."""
    return {
        f.name: _plain(getattr(preset, f.name))
        for f in dataclasses.fields(preset)
        if f.name != "task"
    }


def write_run_config(run_dir: str | Path, options: dict[str, Any], preset: Any) -> Path:
    """Write ``RUN_DIR/config.yaml``: ``options`` (``algo``, ``task``, ``seed``, ...), then
    every field of ``preset``, one flat mapping. Returns the path (written atomically)."""
    import yaml

    path = Path(run_dir) / CONFIG_FILE
    fields = preset_fields(preset)
    clash = sorted(set(fields) & set(options))
    if clash:
        raise ValueError(f"preset fields {clash} clash with run options of the same name")
    data = {**{k: _plain(v) for k, v in options.items()}, **fields}
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(_HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _load_yaml(path: Path, error: type[UsageError], empty_ok: bool) -> dict[str, Any]:
    """A YAML file holding a mapping (an empty file: ``{}`` if ``empty_ok``), or ``error``
    naming the file."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise error(f"config {path}: expected YAML, could not parse it: {first}") from exc
    if data is None and empty_ok:
        data = {}
    if not isinstance(data, dict):
        raise error(f"config {path}: expected a mapping of settings, got {data!r}")
    return data


def read_run_config(path: str | Path) -> dict[str, Any]:
    """Read a run's ``config.yaml`` (``path``: the file or its run directory).

    Returns the mapping with ``algo`` and ``task`` checked; a missing or malformed file is a
    :class:`~tdrl.errors.CheckpointError` naming it.
    """
    path = Path(path)
    if path.is_dir():
        path = path / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"config {path}: expected a tdrl run config file, found none")
    data = _load_yaml(path, CheckpointError, empty_ok=False)
    for key in ("algo", "task"):
        if not isinstance(data.get(key), str):
            raise CheckpointError(
                f"config {path}: expected a string {key!r} entry, got {data.get(key)!r}"
            )
    if not isinstance(data.get("preset", {}), dict):
        raise CheckpointError(f"config {path}: expected 'preset' to be a mapping of fields")
    return data


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML config file (``tdrl train --config``) as a mapping (``algo``, ``task``, run
    options, preset fields at the top level or under ``preset:``); an unreadable file is a
    one-line :class:`~tdrl.errors.UsageError` naming it. A run's ``config.yaml`` (one naming
    both ``algo`` and ``task``) gets :func:`read_run_config`'s checks too."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"argument --config: expected a YAML file, {p} does not exist")
    data = _load_yaml(p, UsageError, empty_ok=True)
    if "algo" in data and "task" in data:
        try:
            read_run_config(p)
        except CheckpointError as exc:
            raise UsageError(str(exc)) from exc
    return data


def config_preset_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """The preset fields of a config mapping: every key but :data:`RUN_KEYS` (fields nested
    under ``preset:`` too)."""
    nested = cfg.get("preset") or {}
    out = {k: v for k, v in cfg.items() if k not in RUN_KEYS and k != "preset"}
    out.update(nested)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in out.items()}


# ----------------------------------------------------------------------- directories
def run_dirs(log_dir: str | os.PathLike[str], name: str) -> list[Path]:
    """The existing run directories of run name ``name`` under ``log_dir``, oldest first:
    ``name``, then ``name-2``, ``name-3``, ... (by number).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("ppo-CartPole-v1-seed0", "ppo-CartPole-v1-seed0-10",
    ...           "ppo-CartPole-v1-seed0-2", "ppo-CartPole-v1-seed01"):
    ...     (d / n).mkdir()
    >>> [p.name for p in run_dirs(d, "ppo-CartPole-v1-seed0")]
    ['ppo-CartPole-v1-seed0', 'ppo-CartPole-v1-seed0-2', 'ppo-CartPole-v1-seed0-10']
    """
    root = Path(log_dir)
    if not root.is_dir():
        return []
    found: list[tuple[int, Path]] = []
    for p in root.iterdir():
        if not p.is_dir():
            continue
        if p.name == name:
            found.append((1, p))
        elif p.name.startswith(name + "-"):
            m = _RUN_SUFFIX.fullmatch(p.name[len(name) :])
            if m and int(m.group(1)) >= 2:
                found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def _checkpoint_of(path: Path, hint: str = "") -> Path:
    """``path``, if it holds a checkpoint; else a :class:`~tdrl.errors.RunDirError`."""
    if not (path / CHECKPOINT_FILE).is_file():
        raise RunDirError(
            f"--resume: expected a checkpoint {path / CHECKPOINT_FILE}, found none{hint}"
        )
    return path


def resolve_run_dir(cfg: ExperimentConfig) -> Path:
    """The run directory ``cfg`` trains in (not created here; see :func:`run_dirs`).

    New run: ``LOG_DIR/ALGO-TASK-seedS``, or the next free ``-N``; ``overwrite``: the
    latest existing one (replaced when the run starts); ``resume``: ``cfg.run_dir`` or the
    latest existing one, which must hold a ``checkpoint.pt``
    (:class:`~tdrl.errors.RunDirError` otherwise).
    """
    if cfg.resume and cfg.overwrite:
        raise UsageError("--overwrite: expected either --resume or --overwrite, got both")
    name = cfg.run_name()
    if cfg.run_dir is not None:
        path = Path(cfg.run_dir)
        return _checkpoint_of(path) if cfg.resume else path
    existing = run_dirs(cfg.log_dir, name)
    if cfg.resume:
        if not existing:
            raise RunDirError(
                f"--resume: expected a run directory {Path(cfg.log_dir) / name} with a "
                "checkpoint.pt, found none"
            )
        hint = " (--checkpoint saves one after every epoch, Ctrl-C saves one)"
        return _checkpoint_of(existing[-1], hint)
    if cfg.overwrite and existing:
        return existing[-1]
    if not existing:
        return Path(cfg.log_dir) / name
    last = _RUN_SUFFIX.search(existing[-1].name[len(name) :])
    return Path(cfg.log_dir) / f"{name}-{int(last.group(1)) + 1 if last else 2}"


def latest_run_config(
    algo: str, task: str, seed: Any, log_dir: str | os.PathLike[str]
) -> tuple[dict[str, Any], str] | None:
    """``(config, path)`` of the run a bare ``--resume`` would continue, if it has a
    ``config.yaml`` (``None`` otherwise, or for a seed that is not an int)."""
    if not isinstance(seed, int):
        return None
    existing = run_dirs(log_dir, registry.run_name(algo, task, seed))
    if not existing or not (existing[-1] / CONFIG_FILE).is_file():
        return None
    path = existing[-1] / CONFIG_FILE
    return read_config_file(path), str(path)


def start_run_dir(cfg: ExperimentConfig, run_dir: Path, resume_state: Any) -> bool:
    """Create (or, resuming, prepare) the run directory; return whether it is new.

    Resuming cuts the CSV logs back to the checkpoint's step; ``overwrite`` removes the old
    directory first.
    """
    if resume_state is not None:
        from tdrl.utils.logger import truncate_csv_logs

        t = resume_state["trainer"]
        truncate_csv_logs(run_dir, int(t["epoch"]), int(t["env_step"]), int(t["gradient_step"]))
        return False
    if cfg.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=cfg.run_dir is not None)
    return True
