"""Compatibility alias: the presets' builders and :func:`make_algorithm` now live in
:mod:`tdrl.presets` (:mod:`tdrl.presets.make`, :mod:`tdrl.presets.dqn`,
:mod:`tdrl.presets.ppo`, :mod:`tdrl.presets.sac`).

This module sits in the algorithm layer, below :mod:`tdrl.presets`, so it imports nothing
from there until a name is asked for (module ``__getattr__``); new code imports from
:mod:`tdrl.presets`.

>>> from tdrl.algorithm import presets
>>> alg = presets.make_algorithm("dqn", "CartPole-v1")
>>> type(alg).__name__, alg.n_step, presets.DQN_CARTPOLE.trainer_kwargs()["update_per_step"]
('DQN', 3, 0.1)
>>> presets.build_dqn is __import__("tdrl.presets.dqn").presets.dqn.build
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tdrl.presets.dqn import DQNPreset
    from tdrl.presets.dqn import build as build_dqn
    from tdrl.presets.make import check_action_space, make_algorithm
    from tdrl.presets.ppo import PPOPreset
    from tdrl.presets.ppo import build as build_ppo
    from tdrl.presets.sac import SACPreset
    from tdrl.presets.sac import build as build_sac

    DQN_CARTPOLE: DQNPreset
    PPO_CARTPOLE: PPOPreset
    SAC_PENDULUM: SACPreset

__all__ = [
    "DQN_CARTPOLE",
    "PPO_CARTPOLE",
    "SAC_PENDULUM",
    "DQNPreset",
    "PPOPreset",
    "SACPreset",
    "build_dqn",
    "build_ppo",
    "build_sac",
    "check_action_space",
    "make_algorithm",
]

_NAMES = {  # name -> (module, attribute)
    "DQNPreset": ("tdrl.presets.dqn", "DQNPreset"),
    "PPOPreset": ("tdrl.presets.ppo", "PPOPreset"),
    "SACPreset": ("tdrl.presets.sac", "SACPreset"),
    "build_dqn": ("tdrl.presets.dqn", "build"),
    "build_ppo": ("tdrl.presets.ppo", "build"),
    "build_sac": ("tdrl.presets.sac", "build"),
    "check_action_space": ("tdrl.presets.make", "check_action_space"),
    "make_algorithm": ("tdrl.presets.make", "make_algorithm"),
}
_TUNED = {  # the presets on their tuned tasks, as tdrl.presets.preset(algo, task)
    "DQN_CARTPOLE": ("dqn", "CartPole-v1"),
    "PPO_CARTPOLE": ("ppo", "CartPole-v1"),
    "SAC_PENDULUM": ("sac", "Pendulum-v1"),
}


def __getattr__(name: str) -> Any:
    """The name from its new home in :mod:`tdrl.presets`, imported on first access."""
    if name in _NAMES:
        module, attr = _NAMES[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _TUNED:
        value = importlib.import_module("tdrl.presets.registry").preset(*_TUNED[name])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # one object per name, as when this module defined them
    return value
