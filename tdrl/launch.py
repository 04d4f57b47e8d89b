"""Compatibility alias: the launcher now lives in :mod:`tdrl.experiment`.

``from tdrl.launch import ExperimentConfig, run_experiment`` keeps working; new code imports
from :mod:`tdrl.experiment` (the configuration, building and running a run) and
:class:`~tdrl.env.NormObsDummyVectorEnv` from :mod:`tdrl.env`. Nothing in the library
imports this module.
"""

from __future__ import annotations

from typing import Any

from tdrl.env.normobs import NormObsDummyVectorEnv
from tdrl.experiment import *  # noqa: F403  (the configuration, building and running)
from tdrl.experiment import __all__ as _experiment_names
from tdrl.experiment.build import TRAINERS
from tdrl.utils.logger import make_logger

__all__ = [*_experiment_names, "NormObsDummyVectorEnv", "TRAINERS", "make_logger"]


def __getattr__(name: str) -> Any:
    """``PRESETS``: each algorithm's preset for its default task, built on first access
    (kept for old scripts; :func:`tdrl.presets.preset` gives any algorithm/task pair)."""
    if name == "PRESETS":
        from tdrl.presets import registry

        return {a: registry.preset(a) for a in registry.algorithms()}
    raise AttributeError(f"module 'tdrl.launch' has no attribute {name!r}")
