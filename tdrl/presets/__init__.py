"""Presets, one module per algorithm, and the registry that finds them (no torch at import).

Each preset module defines its preset dataclass (a :class:`Preset` subclass), a
``build(preset, observation_space, action_space)`` function that imports torch and tdrl's
algorithm modules only when called, and :func:`register` calls, one per task family it is
tuned for. :mod:`tdrl.presets.registry` imports every module here on first lookup (all but
its :data:`~tdrl.presets.registry.INFRASTRUCTURE`), so adding an algorithm's presets needs
no edit elsewhere. :func:`make_algorithm` and :func:`check_action_space`
(:mod:`tdrl.presets.make`, which imports torch) load on first access.

>>> import tdrl.presets as presets
>>> presets.preset("dqn", "CartPole-v1").lr, presets.entry("dqn", "CartPole-v1").builder
(0.001, 'tdrl.presets.dqn:build')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tdrl.presets import registry as _registry
from tdrl.presets.registry import *  # noqa: F403  (exactly registry.__all__)

if TYPE_CHECKING:
    from tdrl.presets.make import check_action_space as check_action_space
    from tdrl.presets.make import make_algorithm as make_algorithm

__all__ = [*_registry.__all__, "check_action_space", "make_algorithm"]

_LAZY = {"make_algorithm", "check_action_space"}


def __getattr__(name: str) -> Any:
    """``make_algorithm`` and ``check_action_space`` from :mod:`tdrl.presets.make` (torch)."""
    if name in _LAZY:
        from tdrl.presets import make

        return getattr(make, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
