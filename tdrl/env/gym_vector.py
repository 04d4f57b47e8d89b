"""Drive a ready gymnasium ``VectorEnv`` under the tdrl vector-env contract.

gymnasium vector envs step all their envs at once and reset finished ones by themselves; the
contract has no autoreset. The adapter accepts the two gymnasium 1.x autoreset modes that keep
every transition:

* ``SAME_STEP``: at a done step gymnasium already returns the next episode's first
  observation, with the true final one in ``info["final_obs"]``. The adapter puts the final
  observation (and ``final_info``) back in place and keeps the reset result, which the
  following ``reset(env_id=...)`` returns without touching the env.
* ``DISABLED``: the adapter resets finished envs on ``reset(env_id=...)`` with
  ``options={"reset_mask": ...}``.

``NEXT_STEP`` (gymnasium's default) is rejected: it inserts a junk transition after every
episode. Stepping a subset of envs is impossible with gymnasium vector envs; build a
:class:`~tdrl.env.DummyVectorEnv` or :class:`~tdrl.env.ShmemVectorEnv` from env factories
for that (``make_vector_env`` unwraps a plain ``SyncVectorEnv`` into a ``DummyVectorEnv``).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from tdrl.env.base import BaseVectorEnv, stack_obs

__all__ = ["GymVectorEnvAdapter", "split_vector_info"]


def split_vector_info(info: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Turn gymnasium's batched info (values with ``_key`` masks) into one dict per env.

    >>> split_vector_info({"a": np.array([1, 2]), "_a": np.array([True, False])}, 2)
    [{'a': np.int64(1)}, {}]
    """
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, value in info.items():
        if key.startswith("_") and key[1:] in info:
            continue
        mask = info.get("_" + key)
        rows = np.flatnonzero(mask) if mask is not None else range(n)
        if isinstance(value, dict):
            parts = split_vector_info(value, n)
            for i in rows:
                out[i][key] = parts[i]
        else:
            for i in rows:
                out[i][key] = value[i]
    return out


def _row(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {k: _row(v, i) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_row(v, i) for v in obs)
    return copy.copy(obs[i])


def _put_row(obs: Any, i: int, value: Any) -> None:
    if isinstance(obs, dict):
        for k in obs:
            _put_row(obs[k], i, value[k])
    elif isinstance(obs, tuple):
        for o, v in zip(obs, value):
            _put_row(o, i, v)
    else:
        obs[i] = value


def _take(obs: Any, ids: np.ndarray) -> Any:
    if isinstance(obs, dict):
        return {k: _take(v, ids) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_take(v, ids) for v in obs)
    return obs[ids]


class GymVectorEnvAdapter(BaseVectorEnv):
    """A gymnasium ``VectorEnv`` (autoreset ``SAME_STEP`` or ``DISABLED``) as a tdrl vector env.

    ``step`` must be given all envs (``env_id=None`` or a permutation of them).

    >>> fns = [lambda: gym.make("CartPole-v1") for _ in range(2)]
    >>> venv = gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    >>> env = GymVectorEnvAdapter(venv)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, [d["env_id"] for d in info]
    ((2, 4), [0, 1])
    >>> env.close()
    """

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        if mode == AutoresetMode.NEXT_STEP:
            raise ValueError(
                "gymnasium vector env: autoreset_mode=NEXT_STEP returns a junk transition after "
                "every episode; build it with autoreset_mode=AutoresetMode.SAME_STEP or "
                "AutoresetMode.DISABLED (expected SAME_STEP or DISABLED, got NEXT_STEP)"
            )
        super().__init__(venv.num_envs)
        self.venv: Any = venv
        self.mode = mode
        self.action_space = [copy.deepcopy(venv.single_action_space) for _ in range(self.env_num)]
        self.observation_space = [venv.single_observation_space] * self.env_num
        self._pre: dict[int, tuple[Any, dict]] = {}
        self._step: tuple | None = None

    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        rows: list[Any] = [None] * len(ids)
        infos: list[Any] = [None] * len(ids)
        todo = []
        for j, (i, s) in enumerate(zip(ids.tolist(), seeds)):
            pre = self._pre.pop(i, None)
            if pre is not None and s is None and options is None:
                rows[j], infos[j] = pre
            else:
                todo.append(j)
        if todo:
            mask = np.zeros(self.env_num, dtype=bool)
            seed_all: list[int | None] = [None] * self.env_num
            for j in todo:
                mask[ids[j]] = True
                seed_all[ids[j]] = seeds[j]
                if seeds[j] is not None:
                    self.action_space[ids[j]].seed(seeds[j])
            opts = dict(options or {})
            if not mask.all():
                opts["reset_mask"] = mask
            obs, vinfo = self.venv.reset(seed=seed_all, options=opts or None)
            per_env = split_vector_info(vinfo, self.env_num)
            for j in todo:
                rows[j], infos[j] = _row(obs, ids[j]), per_env[ids[j]]
        return stack_obs(rows), infos

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        if len(ids) != self.env_num or not np.array_equal(np.sort(ids), self._all_ids):
            raise NotImplementedError(
                f"a gymnasium vector env steps all its {self.env_num} envs at once, got env_id="
                f"{ids.tolist()}; for subset stepping build a DummyVectorEnv/ShmemVectorEnv from "
                "env factories"
            )
        full = np.empty_like(action)
        full[ids] = action
        self._pre.clear()
        self._step = (ids, *self.venv.step(full))

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        assert self._step is not None
        ids, obs, rew, term, trunc, vinfo = self._step
        self._step = None
        per_env = split_vector_info(vinfo, self.env_num)
        done = np.flatnonzero(np.logical_or(term, trunc))
        if self.mode == AutoresetMode.SAME_STEP and len(done):
            for i in done.tolist():
                info = per_env[i]
                final_obs, final_info = info.pop("final_obs"), info.pop("final_info", {})
                self._pre[i] = (_row(obs, i), info)
                _put_row(obs, i, final_obs)
                per_env[i] = final_info
        if not np.array_equal(ids, self._all_ids):
            obs = _take(obs, ids)
            rew, term, trunc = rew[ids], term[ids], trunc[ids]
            per_env = [per_env[i] for i in ids.tolist()]
        return (
            ids,
            obs,
            np.asarray(rew, dtype=np.float64),
            np.asarray(term, dtype=bool),
            np.asarray(trunc, dtype=bool),
            per_env,
        )

    def _seed_envs(self, seeds: list) -> list[Any]:
        self._pre.clear()
        for space, s in zip(self.action_space, seeds):
            space.seed(s)
        self.venv.action_space.seed(seeds[0])
        self.venv.reset(seed=seeds)
        return [[s] for s in seeds]

    def _get_attr(self, key: str, i: int) -> Any:
        return self.venv.get_attr(key)[i]

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        values = list(self.venv.get_attr(key))
        values[i] = value
        self.venv.set_attr(key, values)

    def _close(self) -> None:
        self.venv.close()
