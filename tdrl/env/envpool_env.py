"""Drive an EnvPool env (``envpool.make(..., env_type="gymnasium")``) under the contract.

EnvPool steps and resets subsets natively (``env_id``); its infos are dicts of arrays and are
split into one dict per env. EnvPool is seeded when it is made (``envpool.make(..., seed=s)``
gives env ``i`` the seed ``s + i``); ``seed()`` and ``reset(seed=...)`` afterwards raise.
EnvPool is optional: nothing here imports it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from tdrl.env.base import BaseVectorEnv

__all__ = ["EnvPoolVectorEnv"]


def _split(info: dict[str, Any], n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, value in info.items():
        if isinstance(value, dict):
            for d, sub in zip(out, _split(value, n)):
                d[key] = sub
            continue
        arr = np.asarray(value)
        if arr.ndim == 0 or len(arr) != n:
            for d in out:
                d[key] = value
        else:
            for d, v in zip(out, arr):
                d[key] = v
    return out


class EnvPoolVectorEnv(BaseVectorEnv):
    """An EnvPool env with the gymnasium API as a tdrl vector env (synchronous mode).

    :param pool: the env returned by ``envpool.make(task, env_type="gymnasium", num_envs=N)``.
    """

    def __init__(self, pool: Any) -> None:
        n = int(pool.config["num_envs"]) if hasattr(pool, "config") else len(pool)
        super().__init__(n)
        self.pool = pool
        self.action_space = [copy.deepcopy(pool.action_space) for _ in range(n)]
        self.observation_space = [pool.observation_space] * n
        self._result: tuple | None = None

    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        if any(s is not None for s in seeds) or options:
            raise NotImplementedError(
                "EnvPool is seeded at creation (envpool.make(..., seed=s)) and takes no reset "
                f"options; got seed={seeds}, options={options}"
            )
        obs, info = self.pool.reset(ids.astype(np.int32))
        info.pop("env_id", None)
        return obs, _split(info, len(ids))

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        self._result = self.pool.step(action, ids.astype(np.int32))

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        assert self._result is not None
        obs, rew, term, trunc, info = self._result
        self._result = None
        info = dict(info)
        info.pop("env_id", None)
        return (
            pending,
            obs,
            np.asarray(rew, dtype=np.float64),
            np.asarray(term, dtype=bool),
            np.asarray(trunc, dtype=bool),
            _split(info, len(pending)),
        )

    def _seed_envs(self, seeds: list) -> list[Any]:
        raise NotImplementedError(
            "EnvPool is seeded at creation: pass seed= to envpool.make (env i gets seed + i)"
        )

    def _get_attr(self, key: str, i: int) -> Any:
        return getattr(self.pool, key)

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        setattr(self.pool, key, value)

    def _close(self) -> None:
        close = getattr(self.pool, "close", None)
        if close is not None:
            close()
