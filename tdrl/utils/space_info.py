"""The shapes and bounds of an env's spaces, as Tianshou 2.0's ``SpaceInfo`` gives them.

What network constructors need from a gymnasium env: the observation's shape (``obs_dim``
flat), the action's shape (``action_dim``: the number of actions of a ``Discrete`` space,
the flat size of a ``Box``) and the action bounds. ``Box`` and ``Discrete`` spaces only;
anything else is a ``ValueError`` naming the space.

>>> import gymnasium as gym
>>> info = SpaceInfo.from_env(gym.make("Pendulum-v1"))
>>> info.observation_info.obs_shape, info.action_info.action_dim, info.action_info.max_action
((3,), 1, 2.0)
>>> SpaceInfo.from_env(gym.make("CartPole-v1")).action_info.action_shape
2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import Self

__all__ = ["ActionSpaceInfo", "ObservationSpaceInfo", "SpaceInfo"]


def _flat(shape: int | Sequence[int]) -> int:
    return shape if isinstance(shape, int) else int(np.prod(shape))


def _unsupported(space: Any) -> ValueError:
    return ValueError(f"space: expected a gymnasium Box or Discrete space, got {space!r}")


@dataclass(kw_only=True)
class ActionSpaceInfo:
    """An action space's shape (an int for ``Discrete``: its number of actions) and the
    smallest and largest action (over every dimension of a ``Box``)."""

    action_shape: int | Sequence[int]
    min_action: float
    max_action: float

    @property
    def action_dim(self) -> int:
        """The number of discrete actions, or the flat size of a continuous action."""
        return _flat(self.action_shape)

    @classmethod
    def from_space(cls, space: gym.Space) -> Self:
        """From a ``Box`` (its shape, ``min(low)``, ``max(high)``) or ``Discrete`` space
        (``n``, ``start``, ``start + n - 1``)."""
        if isinstance(space, gym.spaces.Box):
            return cls(
                action_shape=space.shape,
                min_action=float(np.min(space.low)),
                max_action=float(np.max(space.high)),
            )
        if isinstance(space, gym.spaces.Discrete):
            first = int(space.start)
            return cls(
                action_shape=int(space.n),
                min_action=float(first),
                max_action=float(first + space.n - 1),
            )
        raise _unsupported(space)


@dataclass(kw_only=True)
class ObservationSpaceInfo:
    """An observation space's shape (an int for ``Discrete``: its number of states)."""

    obs_shape: int | Sequence[int]

    @property
    def obs_dim(self) -> int:
        """The flat size of an observation (the number of states of a ``Discrete`` one)."""
        return _flat(self.obs_shape)

    @classmethod
    def from_space(cls, space: gym.Space) -> Self:
        """From a ``Box`` (its shape) or ``Discrete`` space (``n``)."""
        if isinstance(space, gym.spaces.Box):
            return cls(obs_shape=space.shape)
        if isinstance(space, gym.spaces.Discrete):
            return cls(obs_shape=int(space.n))
        raise _unsupported(space)


@dataclass(kw_only=True)
class SpaceInfo:
    """Both spaces of an env: ``action_info`` and ``observation_info``."""

    action_info: ActionSpaceInfo
    observation_info: ObservationSpaceInfo

    @classmethod
    def from_env(cls, env: Any) -> Self:
        """From ``env.action_space`` and ``env.observation_space``."""
        return cls.from_spaces(env.action_space, env.observation_space)

    @classmethod
    def from_spaces(cls, action_space: gym.Space, observation_space: gym.Space) -> Self:
        """From the two spaces (the action space first, as Tianshou orders them)."""
        return cls(
            action_info=ActionSpaceInfo.from_space(action_space),
            observation_info=ObservationSpaceInfo.from_space(observation_space),
        )
