"""Experiments: the run configuration, building a run from it, and run directories.

* :mod:`tdrl.experiment.config`: :class:`ExperimentConfig` (what to train and how, one typed
  object), the run options and the summary line. Plain data.
* :mod:`tdrl.experiment.build`: envs, algorithm, buffer, collectors, logger and trainer
  from a config (:func:`build_experiment`, :func:`run_experiment`).
* :mod:`tdrl.experiment.run`: :class:`Experiment`, one assembled run, and how it trains.
* :mod:`tdrl.experiment.rundir`: run directories and their ``config.yaml``.
* :mod:`tdrl.experiment.policy`: ``policy.pt`` and :func:`load_policy`.

The names of :mod:`~tdrl.experiment.config` import with this package (no torch); the others
on first access, so ``tdrl train --help`` stays fast.

>>> from tdrl.experiment import ExperimentConfig
>>> ExperimentConfig("dqn", "CartPole-v1", seed=3).run_name()
'dqn-CartPole-v1-seed3'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tdrl.experiment.config import (
    COMPILE_MODES,
    LOGGERS,
    MAX_SEED,
    PRESET_ALIASES,
    RUN_OPTIONS,
    ExperimentConfig,
    check_run_options,
    parse_overrides,
    run_options,
    summary_line,
)

_LAZY = {
    "build_experiment": "tdrl.experiment.build",
    "run_experiment": "tdrl.experiment.build",
    "warmup_steps": "tdrl.experiment.build",
    "make_buffer": "tdrl.experiment.build",
    "make_envs": "tdrl.experiment.build",
    "make_train_fn": "tdrl.experiment.build",
    "check_device": "tdrl.experiment.build",
    "seed_everything": "tdrl.experiment.build",
    "Experiment": "tdrl.experiment.run",
    "CURVE_KEY": "tdrl.experiment.run",
    "load_policy": "tdrl.experiment.policy",
    "save_policy": "tdrl.experiment.policy",
    "rebuild": "tdrl.experiment.policy",
    "resolve_run_dir": "tdrl.experiment.rundir",
    "run_dirs": "tdrl.experiment.rundir",
    "read_run_config": "tdrl.experiment.rundir",
    "write_run_config": "tdrl.experiment.rundir",
}

__all__ = [
    "COMPILE_MODES",
    "CURVE_KEY",
    "LOGGERS",
    "MAX_SEED",
    "PRESET_ALIASES",
    "RUN_OPTIONS",
    "Experiment",
    "ExperimentConfig",
    "build_experiment",
    "check_device",
    "check_run_options",
    "load_policy",
    "make_buffer",
    "make_envs",
    "make_train_fn",
    "parse_overrides",
    "read_run_config",
    "rebuild",
    "resolve_run_dir",
    "run_dirs",
    "run_experiment",
    "run_options",
    "save_policy",
    "seed_everything",
    "summary_line",
    "warmup_steps",
    "write_run_config",
]

if TYPE_CHECKING:
    from tdrl.experiment.build import (
        build_experiment,
        check_device,
        make_buffer,
        make_envs,
        make_train_fn,
        run_experiment,
        seed_everything,
        warmup_steps,
    )
    from tdrl.experiment.policy import load_policy, rebuild, save_policy
    from tdrl.experiment.run import CURVE_KEY, Experiment
    from tdrl.experiment.rundir import (
        read_run_config,
        resolve_run_dir,
        run_dirs,
        write_run_config,
    )


def __getattr__(name: str) -> Any:
    """Import a name of the build, run, policy or run-directory modules on first access."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tdrl.experiment' has no attribute {name!r}")
