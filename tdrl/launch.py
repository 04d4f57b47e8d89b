"""Compatibility alias: the launcher now lives in :mod:`tdrl.experiment`.

``from tdrl.launch import ExperimentConfig, run_experiment`` keeps working; new code imports
from :mod:`tdrl.experiment` (the configuration, building and running a run) and
:class:`~tdrl.env.NormObsDummyVectorEnv` from :mod:`tdrl.env`. Nothing in the library
imports this module.
"""

from __future__ import annotations

from typing import Any

from tdrl.env.normobs import NormObsDummyVectorEnv
from tdrl.experiment.build import (
    TRAINERS,
    build_experiment,
    check_device,
    make_buffer,
    make_envs,
    make_train_fn,
    run_experiment,
    seed_everything,
    warmup_steps,
)
from tdrl.experiment.config import LOGGERS, ExperimentConfig, parse_overrides, run_options
from tdrl.experiment.run import CURVE_KEY, Experiment
from tdrl.experiment.rundir import resolve_run_dir, run_dirs
from tdrl.utils.logger import make_logger

__all__ = [
    "CURVE_KEY",
    "LOGGERS",
    "TRAINERS",
    "Experiment",
    "ExperimentConfig",
    "NormObsDummyVectorEnv",
    "build_experiment",
    "check_device",
    "make_buffer",
    "make_envs",
    "make_logger",
    "make_train_fn",
    "parse_overrides",
    "resolve_run_dir",
    "run_dirs",
    "run_experiment",
    "run_options",
    "seed_everything",
    "warmup_steps",
]


def __getattr__(name: str) -> Any:
    """``PRESETS``: each algorithm's preset for its default task, built on first access
    (kept for old scripts; :func:`tdrl.presets.preset` gives any algorithm/task pair)."""
    if name == "PRESETS":
        from tdrl.presets import registry

        return {a: registry.preset(a) for a in registry.algorithms()}
    raise AttributeError(f"module 'tdrl.launch' has no attribute {name!r}")
