"""Compatibility alias: the preset registry now lives in :mod:`tdrl.presets.registry`.

Everything this module exported is re-exported from its new home: the registry API from
:mod:`tdrl.presets.registry`, :class:`~tdrl.errors.PresetError` from :mod:`tdrl.errors`,
and the DQN, PPO and SAC presets from :mod:`tdrl.presets.dqn`, :mod:`tdrl.presets.ppo` and
:mod:`tdrl.presets.sac`. New code imports from :mod:`tdrl.presets`. The registry's tables
(``_REGISTRY``, ...) are the same objects; patch them on :mod:`tdrl.presets.registry`.

>>> import tdrl.presets
>>> preset is tdrl.presets.preset, DQNPreset().lr
(True, 0.001)
"""

from __future__ import annotations

from tdrl.errors import PresetError
from tdrl.presets.dqn import DQNPreset
from tdrl.presets.ppo import PPOPreset
from tdrl.presets.registry import _REGISTRY as _REGISTRY
from tdrl.presets.registry import _RULES as _RULES
from tdrl.presets.registry import _TASK_REGISTRY as _TASK_REGISTRY
from tdrl.presets.registry import (
    FAMILIES,
    MAX_ENVS,
    STOP_THRESHOLDS,
    ActionSpace,
    Entry,
    Preset,
    Trainer,
    algorithms,
    check_dataset,
    default_task,
    entry,
    families,
    field_kinds,
    field_text,
    preset,
    register,
    run_name,
    stop_threshold,
    task_family,
    task_threshold,
)
from tdrl.presets.registry import _discover as _discover
from tdrl.presets.registry import _import as _import
from tdrl.presets.sac import SACPreset

__all__ = [
    "FAMILIES",
    "MAX_ENVS",
    "STOP_THRESHOLDS",
    "ActionSpace",
    "DQNPreset",
    "Entry",
    "PPOPreset",
    "Preset",
    "PresetError",
    "SACPreset",
    "Trainer",
    "algorithms",
    "check_dataset",
    "default_task",
    "entry",
    "families",
    "field_kinds",
    "field_text",
    "preset",
    "register",
    "run_name",
    "stop_threshold",
    "task_family",
    "task_threshold",
]
