"""``VectorEnvWrapper``: a vector env that wraps another one (Tianshou's ``VectorEnvWrapper``).

A wrapper is itself a :class:`~tdrl.env.BaseVectorEnv` (collectors take it like any other);
every call goes to the wrapped env, so a subclass overrides only what it changes, e.g. the
observations returned by :meth:`~VectorEnvWrapper.reset` and :meth:`~VectorEnvWrapper.step`
(:class:`~tdrl.env.NormObsVectorEnv`). Attributes the wrapper does not have (``envs``,
``pids``...) are read from the wrapped env.

>>> from tdrl.env import DummyVectorEnv
>>> from tdrl.env.testing import MoveToRightEnv
>>> class Doubled(VectorEnvWrapper):
...     def step(self, action, env_id=None, *, id=None):
...         obs, *rest = super().step(action, env_id, id=id)
...         return (2 * obs, *rest)
>>> venv = Doubled(DummyVectorEnv([lambda: MoveToRightEnv(size=3)] * 2))
>>> _ = venv.reset()
>>> venv.step([1, 1])[0].tolist(), len(venv), len(venv.envs)
([2, 2], 2, 2)
>>> venv.close(); venv.venv.is_closed
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tdrl.env.base import BaseVectorEnv, EnvIds, EnvWorker, StepResult

__all__ = ["VectorEnvWrapper"]


class VectorEnvWrapper(BaseVectorEnv):
    """A vector env that forwards everything to the vector env it wraps.

    :param venv: the vector env to wrap (closed with the wrapper).
    """

    def __init__(self, venv: BaseVectorEnv) -> None:
        if not isinstance(venv, BaseVectorEnv):
            raise TypeError(f"venv: expected a tdrl vector env, got {type(venv).__name__}")
        self.venv = venv
        super().__init__(venv.env_num, venv.wait_num, venv.timeout)
        self.observation_space = venv.observation_space
        self.action_space = venv.action_space

    def __getattr__(self, name: str) -> Any:
        """Attributes the wrapper does not have come from the wrapped env."""
        if name.startswith("_") or "venv" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__["venv"], name)

    @property
    def ready_id(self) -> list[int]:
        """The wrapped env's ready ids."""
        return self.venv.ready_id

    @property
    def waiting_id(self) -> list[int]:
        """The wrapped env's waiting ids."""
        return self.venv.waiting_id

    @property
    def workers(self) -> list[EnvWorker]:
        """The wrapped env's workers."""
        return self.venv.workers

    def reset(
        self,
        env_id: EnvIds = None,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, np.ndarray]:
        """The wrapped env's ``reset``."""
        return self.venv.reset(env_id, seed=seed, options=options)

    def step(self, action: Any, env_id: EnvIds = None, *, id: EnvIds = None) -> StepResult:
        """The wrapped env's ``step`` (``id`` is Tianshou's name for ``env_id``)."""
        return self.venv.step(action, env_id, id=id)

    def seed(self, seed: int | Sequence[int | None] | None = None) -> list[Any]:
        """The wrapped env's ``seed``."""
        return self.venv.seed(seed)

    def get_env_attr(self, key: str, id: EnvIds = None) -> list[Any]:
        """The wrapped env's ``get_env_attr``."""
        return self.venv.get_env_attr(key, id)

    def set_env_attr(self, key: str, value: Any, id: EnvIds = None) -> None:
        """The wrapped env's ``set_env_attr``."""
        self.venv.set_env_attr(key, value, id)

    def render(self, **kwargs: Any) -> list[Any]:
        """The wrapped env's ``render``."""
        return self.venv.render(**kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.venv!r})"

    # BaseVectorEnv's hooks: only close() reaches one here (_close); the others are for a
    # subclass that calls them, and go to the wrapped env's hooks
    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        return self.venv._reset_envs(ids, seeds, options)

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        self.venv._send_actions(action, ids)

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        return self.venv._collect(pending, wait_num, timeout)

    def _seed_envs(self, seeds: list) -> list[Any]:
        return self.venv._seed_envs(seeds)

    def _get_attr(self, key: str, i: int) -> Any:
        return self.venv._get_attr(key, i)

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        self.venv._set_attr(key, value, i)

    def _close(self) -> None:
        self.venv.close()
