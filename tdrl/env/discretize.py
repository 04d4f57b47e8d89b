"""Discretize a continuous (``Box``) action space into evenly spaced bins per dimension.

:class:`DiscretizeAction` turns a ``Box(low, high, (D,))`` action space into
``MultiDiscrete([K_1, ..., K_D])``: sub-action ``i`` of dimension ``d`` is the value
``low_d + i (high_d - low_d) / (K_d - 1)``, so the bins include both bounds. This is how
BDQN (arXiv:1711.08946) acts in continuous-control tasks such as Pendulum-v1, and what
Tianshou's ``ContinuousToDiscrete`` wrapper does.

>>> import gymnasium as gym
>>> env = DiscretizeAction(gym.make("Pendulum-v1"), 5)
>>> env.action_space
MultiDiscrete([5])
>>> env.action(np.array([0])).tolist(), env.action(np.array([[2], [4]])).tolist()
([-2.0], [[0.0], [2.0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["DiscretizeAction", "MultiDiscreteToDiscrete", "TruncatedAsTerminated", "bin_values"]


def bin_values(low: Any, high: Any, bins: int | Sequence[int]) -> list[np.ndarray]:
    """The values of the bins of each dimension: ``linspace(low_d, high_d, K_d)``.

    :param low: lower bounds, one per dimension (finite).
    :param high: upper bounds, one per dimension (finite).
    :param bins: bins per dimension (``>= 2``): one int for all dimensions, or one each.

    >>> [v.tolist() for v in bin_values([-1.0, 0.0], [1.0, 4.0], [3, 5])]
    [[-1.0, 0.0, 1.0], [0.0, 1.0, 2.0, 3.0, 4.0]]
    """
    lo = np.asarray(low, dtype=np.float64).reshape(-1)
    hi = np.asarray(high, dtype=np.float64).reshape(-1)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError(f"low/high: expected finite bounds, got low={lo}, high={hi}")
    counts = [bins] * lo.shape[0] if isinstance(bins, int | np.integer) else list(bins)
    if len(counts) != lo.shape[0]:
        raise ValueError(
            f"bins: expected one count per action dimension ({lo.shape[0]}), got {len(counts)}"
        )
    for k in counts:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
            raise ValueError(f"bins: expected ints >= 2, got {list(counts)}")
    return [np.linspace(a, b, int(k)) for a, b, k in zip(lo, hi, counts, strict=True)]


class DiscretizeAction(gym.ActionWrapper):
    """A ``Box`` action space as ``MultiDiscrete`` bins: integer actions in, values out.

    :param env: an environment with a 1-D ``Box`` action space with finite bounds.
    :param bins: bins per dimension (``>= 2``): one int for all dimensions, or one each.

    :meth:`action` maps an integer action ``[D]`` (or a batch ``[..., D]``) to the bins'
    values in the ``Box``'s dtype; an index outside its dimension's bins is a
    ``ValueError``.

    >>> env = DiscretizeAction(gym.make("Pendulum-v1"), [3])
    >>> env.action(np.array([1])).dtype
    dtype('float32')
    >>> env.action(np.array([3]))
    Traceback (most recent call last):
    ...
    ValueError: act: expected bin indices in [0, [3]) per dimension, got [3]
    """

    def __init__(self, env: gym.Env, bins: int | Sequence[int]) -> None:
        super().__init__(env)
        box = env.action_space
        if not isinstance(box, gym.spaces.Box) or len(box.shape) != 1:
            raise ValueError(f"env.action_space: expected a 1-D Box, got {box}")
        self.values = bin_values(box.low, box.high, bins)
        self.nvec = np.array([len(v) for v in self.values], dtype=np.int64)
        self.action_space = gym.spaces.MultiDiscrete(self.nvec)
        table = np.zeros((len(self.values), int(self.nvec.max())))
        for d, v in enumerate(self.values):
            table[d, : len(v)] = v
        self._table = table.astype(box.dtype)
        self._dims = np.arange(len(self.values))

    def action(self, act: Any) -> np.ndarray:
        """The bins' values of the integer action ``act`` ``[..., D]``."""
        a = np.asarray(act)
        integral = np.issubdtype(a.dtype, np.integer) or (
            np.issubdtype(a.dtype, np.floating) and np.array_equal(a, np.round(a))
        )
        if a.shape[-1:] != (len(self.values),) or not integral:
            raise ValueError(
                f"act: expected integer bin indices of shape [..., {len(self.values)}], "
                f"got {a.dtype} of shape {a.shape}"
            )
        a = a.astype(np.int64, copy=False)
        if (a < 0).any() or (a >= self.nvec).any():
            raise ValueError(
                f"act: expected bin indices in [0, {self.nvec.tolist()}) per dimension, "
                f"got {a.tolist()}"
            )
        return self._table[self._dims, a]


class MultiDiscreteToDiscrete(gym.ActionWrapper):
    """A ``MultiDiscrete(nvec)`` action space as one ``Discrete(prod(nvec))``.

    Action ``k`` is the mixed-radix number whose digits are the sub-actions, the first
    dimension most significant (``np.unravel_index(k, nvec)``), as Tianshou's wrapper of
    the same name maps it.

    :param env: an environment with a 1-D ``MultiDiscrete`` action space.

    >>> env = MultiDiscreteToDiscrete(DiscretizeAction(gym.make("Pendulum-v1"), 5))
    >>> env.action_space, env.action(np.array(4)).tolist(), env.action(np.array([0, 3])).tolist()
    (Discrete(5), [4], [[0], [3]])
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.MultiDiscrete) or space.nvec.ndim != 1:
            raise ValueError(f"env.action_space: expected a 1-D MultiDiscrete, got {space}")
        self.nvec = np.asarray(space.nvec, dtype=np.int64)
        self.n = int(np.prod(self.nvec))
        self.action_space = gym.spaces.Discrete(self.n)

    def action(self, act: Any) -> np.ndarray:
        """The sub-actions ``[..., D]`` of the flat action(s) ``act`` ``[...]``."""
        a = np.asarray(act, dtype=np.int64)
        n = self.n
        if (a < 0).any() or (a >= n).any():
            raise ValueError(f"act: expected actions in [0, {n}), got {a.tolist()}")
        return np.stack(np.unravel_index(a, tuple(self.nvec)), axis=-1)


class TruncatedAsTerminated(gym.Wrapper):  # type: ignore[type-arg]
    """``terminated = terminated or truncated`` on every step (a time limit ends the task
    as a terminal state would: no bootstrapping past it).

    Wrap the environment (usually one under ``gymnasium.wrappers.TimeLimit``) with it:

    >>> env = TruncatedAsTerminated(gym.make("CartPole-v1", max_episode_steps=1))
    >>> _ = env.reset(seed=0)
    >>> env.step(0)[2:4]
    (True, True)
    """

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the env; a truncated step also counts as terminated."""
        obs, rew, terminated, truncated, info = self.env.step(action)
        return obs, rew, bool(terminated or truncated), bool(truncated), info
