"""Tiny deterministic envs for tests: exact episode lengths, observations you can predict.

* :class:`MoveToRightEnv`: a walk on ``0..size``; action 1 moves right, 0 moves left; the
  episode terminates on reaching ``size`` (reward 1 there, 0 elsewhere). Always pressing 1
  gives episodes of exactly ``size`` steps with observations ``0, 1, ..., size``.
* :class:`GoalWalkEnv`: the same walk with a goal drawn at reset, Dict observations
  ``observation/achieved_goal/desired_goal`` and a vectorized ``compute_reward`` for HER.
* :class:`FailingEnv`: raises on a chosen step (for error-propagation tests).
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["FailingEnv", "GoalWalkEnv", "MoveToRightEnv"]


def _as_int(action: Any) -> int:
    return int(np.asarray(action).reshape(-1)[0])


class MoveToRightEnv(gym.Env):
    """A deterministic walk on ``0..size``.

    :param size: the goal position; with action 1 every step an episode lasts ``size`` steps.
    :param sleep: seconds each ``step`` sleeps (to make some envs slower in async tests).
    :param dict_state: observe ``{"index": int64 (1,), "step": float32 (1,)}`` instead of an int.
    :param array_state: observe a float32 array ``[position, elapsed, ident, size]`` (4,).
    :param ident: an identifier reported in ``info["ident"]`` and in ``array_state``.
    :param max_steps: truncate after this many steps (``None``: never).

    Observation (default): the position, an int in ``Discrete(size + 1)``. Reward: 1.0 on the
    step that reaches ``size``, else 0.0. Info: ``{"ident": ident, "step": elapsed}``.
    ``reset(options={"start": k})`` starts at position ``k``.

    >>> env = MoveToRightEnv(size=3)
    >>> env.reset()
    (0, {'ident': 0, 'step': 0})
    >>> [env.step(1)[:4] for _ in range(3)]
    [(1, 0.0, False, False), (2, 0.0, False, False), (3, 1.0, True, False)]
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        size: int,
        sleep: float = 0.0,
        dict_state: bool = False,
        array_state: bool = False,
        ident: int = 0,
        max_steps: int | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size, self.sleep, self.ident, self.max_steps = size, sleep, ident, max_steps
        self.dict_state, self.array_state = dict_state, array_state
        self.action_space = spaces.Discrete(2)
        if dict_state:
            self.observation_space: spaces.Space = spaces.Dict(
                {
                    "index": spaces.Box(0, size, shape=(1,), dtype=np.int64),
                    "step": spaces.Box(0, np.inf, shape=(1,), dtype=np.float32),
                }
            )
        elif array_state:
            self.observation_space = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        else:
            self.observation_space = spaces.Discrete(size + 1)
        self.index = 0
        self.elapsed = 0

    def _obs(self) -> Any:
        if self.dict_state:
            return {
                "index": np.array([self.index], dtype=np.int64),
                "step": np.array([self.elapsed], dtype=np.float32),
            }
        if self.array_state:
            return np.array([self.index, self.elapsed, self.ident, self.size], dtype=np.float32)
        return self.index

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode at position 0 (or ``options["start"]``)."""
        super().reset(seed=seed)
        self.index = int((options or {}).get("start", 0))
        self.elapsed = 0
        return self._obs(), {"ident": self.ident, "step": 0}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Move left (0) or right (1)."""
        if self.sleep:
            time.sleep(self.sleep)
        self.elapsed += 1
        self.index = min(self.size, self.index + 1) if _as_int(action) else max(0, self.index - 1)
        terminated = self.index == self.size
        truncated = not terminated and self.max_steps is not None and self.elapsed >= self.max_steps
        info = {"ident": self.ident, "step": self.elapsed}
        return self._obs(), float(terminated), terminated, truncated, info


class GoalWalkEnv(gym.Env):
    """A goal-conditioned walk on ``0..size`` with Dict observations (for HER tests).

    At reset the start and the goal are drawn (different) from the env's seeded RNG. Action 1
    moves right, 0 left. The episode terminates when the position equals the goal and is
    truncated after ``max_steps``. Reward: :meth:`compute_reward`, 0 at the goal, -1 elsewhere.

    >>> env = GoalWalkEnv(size=5)
    >>> obs, _ = env.reset(seed=0)
    >>> sorted(obs)
    ['achieved_goal', 'desired_goal', 'observation']
    >>> env.compute_reward(np.array([[1.0], [2.0]]), np.array([[1.0], [3.0]]), {}).tolist()
    [0.0, -1.0]
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, size: int = 5, max_steps: int = 20) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size, self.max_steps = size, max_steps
        box = spaces.Box(0.0, float(size), shape=(1,), dtype=np.float32)
        self.observation_space = spaces.Dict(
            {"observation": box, "achieved_goal": box, "desired_goal": box}
        )
        self.action_space = spaces.Discrete(2)
        self.pos = self.goal = 0
        self.elapsed = 0

    def _obs(self) -> dict[str, np.ndarray]:
        pos = np.array([self.pos], dtype=np.float32)
        return {
            "observation": pos,
            "achieved_goal": pos.copy(),
            "desired_goal": np.array([self.goal], dtype=np.float32),
        }

    def compute_reward(
        self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any
    ) -> np.ndarray:
        """Vectorized reward: 0.0 where ``achieved_goal == desired_goal`` (last axis), else -1."""
        hit = np.all(np.asarray(achieved_goal) == np.asarray(desired_goal), axis=-1)
        return hit.astype(np.float64) - 1.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Draw a start and a different goal."""
        super().reset(seed=seed)
        self.pos, self.goal = (int(x) for x in self.np_random.choice(self.size + 1, 2, False))
        self.elapsed = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """Move left (0) or right (1)."""
        self.elapsed += 1
        self.pos = min(self.size, self.pos + 1) if _as_int(action) else max(0, self.pos - 1)
        obs = self._obs()
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], {}))
        terminated = self.pos == self.goal
        truncated = not terminated and self.elapsed >= self.max_steps
        return obs, reward, terminated, truncated, {}


class FailingEnv(MoveToRightEnv):
    """A :class:`MoveToRightEnv` whose ``step`` raises ``ValueError`` on step ``fail_at``
    (counted from the last reset), or that exits its process when ``exit_code`` is given."""

    def __init__(self, size: int = 5, fail_at: int = 2, exit_code: int | None = None) -> None:
        super().__init__(size)
        self.fail_at, self.exit_code = fail_at, exit_code

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step, or fail on step ``fail_at``."""
        if self.elapsed + 1 >= self.fail_at:
            if self.exit_code is not None:
                import os

                os._exit(self.exit_code)
            raise ValueError(f"FailingEnv: deliberate failure at step {self.fail_at}")
        return super().step(action)
