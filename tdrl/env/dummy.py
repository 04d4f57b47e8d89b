"""``DummyVectorEnv``: every env in the calling process, stepped in a loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from tdrl.env.base import BaseVectorEnv, EnvWorker, env_spaces, stack_obs

__all__ = ["DummyEnvWorker", "DummyVectorEnv", "get_attr", "seed_env"]


def get_attr(env: gym.Env, key: str) -> Any:
    """Return ``key`` from ``env`` or from any env it wraps."""
    if hasattr(env, "get_wrapper_attr"):
        return env.get_wrapper_attr(key)
    return getattr(env, key)


def seed_env(env: gym.Env, seed: int | None) -> list[int | None]:
    """Seed ``env``'s action space (if it has one) and reset ``env`` with ``seed``; return
    ``[seed]``."""
    space = env_spaces(env)[1]
    if space is not None:
        space.seed(seed)
    env.reset(seed=seed)
    return [seed]


def _constant(env: gym.Env) -> Callable[[], gym.Env]:
    return lambda: env


class DummyEnvWorker(EnvWorker):
    """One env of a :class:`DummyVectorEnv`; :attr:`env` is the env object itself."""

    venv: DummyVectorEnv

    @property
    def env(self) -> gym.Env:
        """The env (it lives in this process)."""
        return self.venv.envs[self.env_id]


class DummyVectorEnv(BaseVectorEnv):
    """Vector env that keeps every env in this process and steps them one after the other.

    It has the same API as the subprocess vector envs and is the fastest choice for cheap
    envs (CartPole-like), where a process round-trip costs more than a step.

    :param env_fns: one factory per env; ``env_fns[i]()`` builds env ``i``.
    :param wait_num: async mode (kept for API compatibility: every env is always ready at once).
    :param timeout: async mode, as ``wait_num``.

    Envs that define no ``observation_space`` / ``action_space`` are accepted: their entry
    in :attr:`observation_space` / :attr:`action_space` is ``None``.

    >>> from tdrl.env.testing import MoveToRightEnv
    >>> venv = DummyVectorEnv([lambda i=i: MoveToRightEnv(size=2 + i) for i in range(3)])
    >>> obs, info = venv.reset()
    >>> obs.tolist(), [d["env_id"] for d in info]
    ([0, 0, 0], [0, 1, 2])
    >>> obs, rew, term, trunc, info = venv.step([1, 1], env_id=[0, 2])
    >>> obs.tolist(), term.tolist()
    ([1, 1], [False, False])
    >>> obs, rew, term, trunc, info = venv.step([1], env_id=[0])
    >>> obs.tolist(), rew.tolist(), term.tolist()
    ([2], [1.0], [True])
    >>> venv.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        wait_num: int | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(len(env_fns), wait_num, timeout)
        self.envs: list[gym.Env] = [fn() for fn in env_fns]
        spaces = [env_spaces(env) for env in self.envs]
        self.observation_space = [obs_space for obs_space, _ in spaces]  # type: ignore[misc]
        self.action_space = [act_space for _, act_space in spaces]  # type: ignore[misc]
        self._results: dict[int, tuple] = {}
        self._last: list[tuple] = []

    @classmethod
    def from_envs(
        cls, envs: Sequence[gym.Env], wait_num: int | None = None, timeout: float | None = None
    ) -> DummyVectorEnv:
        """Wrap envs that are already built (they are closed with the vector env)."""
        return cls([_constant(env) for env in envs], wait_num, timeout)

    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        obs_list, infos = [], []
        envs = self.envs
        for i, s in zip(ids.tolist(), seeds):
            space = env_spaces(envs[i])[1] if s is not None else None
            if space is not None:
                space.seed(s)
            obs, info = envs[i].reset(seed=s, options=options)
            obs_list.append(obs)
            infos.append(info)
        return stack_obs(obs_list), infos

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        envs = self.envs
        results = [envs[i].step(a) for i, a in zip(ids.tolist(), action)]
        if self.is_async:
            self._results.update(zip(ids.tolist(), results))
        else:
            self._last = results

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if self.is_async:
            results = [self._results.pop(i) for i in pending.tolist()]
        else:
            results, self._last = self._last, []
        obs, rew, term, trunc, infos = zip(*results)
        return (
            pending,
            stack_obs(obs),
            np.array(rew, dtype=np.float64),
            np.array(term, dtype=bool),
            np.array(trunc, dtype=bool),
            list(infos),
        )

    def _seed_envs(self, seeds: list) -> list[Any]:
        return [seed_env(env, s) for env, s in zip(self.envs, seeds)]

    @property
    def workers(self) -> list[DummyEnvWorker]:  # type: ignore[override]
        """One :class:`DummyEnvWorker` per env (``workers[i].env`` is env ``i``)."""
        return [DummyEnvWorker(self, i) for i in range(self.env_num)]

    def _get_attr(self, key: str, i: int) -> Any:
        return get_attr(self.envs[i], key)

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        setattr(self.envs[i].unwrapped, key, value)

    def render(self, **kwargs: Any) -> list[Any]:
        """Render every env."""
        self._check_open()
        return [env.render(**kwargs) for env in self.envs]

    def _close(self) -> None:
        for env in self.envs:
            env.close()
