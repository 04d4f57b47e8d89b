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

from tdrl.errors import PresetError  # noqa: F401  (re-exported)
from tdrl.presets import registry as _registry
from tdrl.presets.dqn import DQNPreset as DQNPreset
from tdrl.presets.ppo import PPOPreset as PPOPreset
from tdrl.presets.registry import *  # noqa: F403  (its whole public API)
from tdrl.presets.registry import (  # noqa: F401  (the private tables and helpers old tests use)
    _REGISTRY,
    _RULES,
    _TASK_REGISTRY,
    ActionSpace,
    Trainer,
    _discover,
    _import,
)
from tdrl.presets.sac import SACPreset as SACPreset

__all__ = sorted({*_registry.__all__, "DQNPreset", "PPOPreset", "PresetError", "SACPreset"})
