"""Collector hooks (Tianshou 2.0's): a step hook and an episode-done hook.

* A **step hook** ``hook(action_batch, rollout_batch)`` runs after every vector step, before
  the step is added to the buffer: ``rollout_batch`` is the step's :class:`~tdrl.data.Batch`
  (``obs``, ``act``, ``rew``, ``terminated``, ``truncated``, ``obs_next``, ``info``), and
  what the hook adds to it (``rollout_batch.set_array_at_key(...)``) is stored too.
  ``action_batch`` holds ``act`` (and ``policy`` when the policy returned one).
* An **episode hook** ``hook(episode_batch)`` runs when an episode ends, with the stored
  episode (``buffer[episode indices]``); it may return ``{key: array}`` with one value per
  step, which is written into the buffer at the episode's indices
  (``buffer.set_array_at_key``). Returning data is only allowed for ``collect(n_episode=...)``
  (``ValueError`` otherwise, as in Tianshou).

>>> episode_mc_return_to_go(np.array([1.0, 1.0, 1.0]), gamma=0.5).tolist()
[1.75, 1.5, 1.0]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from tdrl.data.batch import Batch

__all__ = [
    "CollectorHooksMixin",
    "EpisodeRolloutHook",
    "EpisodeRolloutHookMCReturn",
    "StepHook",
    "episode_mc_return_to_go",
]


def episode_mc_return_to_go(rewards: Any, gamma: float = 0.99) -> np.ndarray:
    """Discounted return from every step to the end of one episode (float64, 1-d).

    :param rewards: the rewards of one whole episode, first step first.
    :param gamma: discount factor.
    """
    rew = np.asarray(rewards, dtype=np.float64).reshape(-1)
    out = np.zeros_like(rew)
    acc = 0.0
    for i in range(len(rew) - 1, -1, -1):
        acc = rew[i] + gamma * acc
        out[i] = acc
    return out


class StepHook(ABC):
    """Base of step hooks: ``__call__(action_batch, rollout_batch)`` may add keys to
    ``rollout_batch`` (see the module docstring)."""

    @abstractmethod
    def __call__(self, action_batch: Batch, rollout_batch: Batch) -> None:
        """Inspect or extend the step about to be stored."""


class EpisodeRolloutHook(ABC):
    """Base of episode hooks: ``__call__(episode_batch)`` returns ``{key: array}`` to store
    per step of the episode, or ``None``."""

    @abstractmethod
    def __call__(self, episode_batch: Batch) -> dict[str, np.ndarray] | None:
        """Data to add to the finished episode's transitions."""


class EpisodeRolloutHookMCReturn(EpisodeRolloutHook):
    """Store the Monte-Carlo return to go (``mc_return_to_go``) and the episode's full
    return (``full_episode_mc_return``, the same for every step) with each transition."""

    MC_RETURN_TO_GO_KEY = "mc_return_to_go"
    FULL_EPISODE_MC_RETURN_KEY = "full_episode_mc_return"

    def __init__(self, gamma: float = 0.99) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma: expected a number in [0, 1], got {gamma!r}")
        self.gamma = gamma

    def __call__(self, episode_batch: Batch) -> dict[str, np.ndarray]:
        """``{MC_RETURN_TO_GO_KEY: G_t, FULL_EPISODE_MC_RETURN_KEY: G_0}`` per step."""
        to_go = episode_mc_return_to_go(np.asarray(episode_batch.rew), self.gamma)
        return {
            self.MC_RETURN_TO_GO_KEY: to_go,
            self.FULL_EPISODE_MC_RETURN_KEY: np.full_like(to_go, to_go[0]),
        }


class CollectorHooksMixin:
    """The hook API of :class:`~tdrl.data.Collector` (Tianshou's method names)."""

    buffer: Any
    _on_step_hook: Any = None
    _on_episode_done_hook: Any = None
    _episode_mode: bool = False

    def set_on_step_hook(self, hook: Any) -> None:
        """Run ``hook(action_batch, rollout_batch)`` at every step (``None`` removes it)."""
        self._on_step_hook = hook

    def set_on_episode_done_hook(self, hook: Any) -> None:
        """Run ``hook(episode_batch)`` when an episode ends (``None`` removes it)."""
        self._on_episode_done_hook = hook

    def get_on_step_hook(self) -> Any:
        """The step hook, or ``None``."""
        return self._on_step_hook

    def get_on_episode_done_hook(self) -> Any:
        """The episode hook, or ``None``."""
        return self._on_episode_done_hook

    def run_on_step_hook(self, action_batch: Batch, rollout_batch: Batch) -> None:
        """Call the step hook, if any (override to change what happens at each step)."""
        if self._on_step_hook is not None:
            self._on_step_hook(action_batch, rollout_batch)

    def run_on_episode_done(self, episode_batch: Batch) -> dict[str, np.ndarray] | None:
        """Call the episode hook, if any, and return what it returned."""
        if self._on_episode_done_hook is not None:
            return self._on_episode_done_hook(episode_batch)
        return None

    def _hook_step(self, data: dict[str, Any]) -> Any:
        """The step as a Batch after the step hook saw it (``data`` when there is no hook)."""
        if self._on_step_hook is None:
            return data
        action = {k: data[k] for k in ("act", "policy") if k in data}
        rollout = Batch(data)
        self.run_on_step_hook(Batch(action), rollout)
        return rollout

    def _hook_episodes(self, ptr: np.ndarray, ep_len: np.ndarray, ep_idx: np.ndarray) -> None:
        """Run the episode hook on every episode that ended in this add (``ep_len > 0``)."""
        if self._on_episode_done_hook is None:
            return
        for row in np.flatnonzero(np.asarray(ep_len) > 0):
            index = self.buffer.get_buffer_indices(int(ep_idx[row]), int(ptr[row]) + 1)
            extra = self.run_on_episode_done(self.buffer[index])
            if extra is None:
                continue
            if not self._episode_mode:
                raise ValueError(
                    "on_episode_done_hook: returning data is only supported by "
                    f"collect(n_episode=...), got keys {list(extra)} during an n_step collect"
                )
            for key, value in extra.items():
                self.buffer.set_array_at_key(value, key, index=index)
