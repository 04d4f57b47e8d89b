"""The vector-env contract shared by every tdrl vector env.

A vector env holds ``env_num`` environments and steps any subset of them:

* ``reset(env_id=None, seed=None, options=None) -> (obs, info)``
* ``step(action, env_id=None) -> (obs, rew, terminated, truncated, info)``

``obs`` is a stacked ``np.ndarray`` (a dict of stacked arrays for Dict spaces), ``rew`` is
``float64``, the flags are ``bool`` and ``info`` is an object array of dicts, one per selected
env, each holding ``env_id``. There is no autoreset: the observation returned at a done step is
the true final observation and the caller resets finished envs with ``reset(env_id=...)``.

In async mode (``wait_num < env_num`` or a ``timeout``) ``step`` returns only the envs that are
ready (their ids are in ``info[i]["env_id"]``); ``step(None)`` fetches pending results.

Tianshou's spellings are accepted too: ``step(action, id=...)`` for ``env_id``, and
``venv.workers[i]`` (an :class:`EnvWorker`, one per env).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import create_empty_array

__all__ = [
    "BaseVectorEnv",
    "EnvIds",
    "EnvWorker",
    "env_spaces",
    "resolve_env_id",
    "stack_obs",
    "to_numpy_action",
]

EnvIds = int | Sequence[int] | np.ndarray | None
StepResult = tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def stack_obs(obs_list: Sequence[Any]) -> Any:
    """Stack per-env observations: arrays to one array, dicts (and tuples) key by key.

    Observations of different shapes fall back to an object array.

    >>> stack_obs([np.zeros(2), np.ones(2)]).shape
    (2, 2)
    >>> out = stack_obs([{"a": 1, "b": np.zeros(3)}, {"a": 2, "b": np.ones(3)}])
    >>> out["a"], out["b"].shape
    (array([1, 2]), (2, 3))
    """
    first = obs_list[0]
    if isinstance(first, dict):
        return {k: stack_obs([o[k] for o in obs_list]) for k in first}
    if isinstance(first, tuple):
        return tuple(stack_obs([o[j] for o in obs_list]) for j in range(len(first)))
    try:
        return np.array(obs_list)  # several times faster than np.stack for a few small arrays
    except ValueError:
        out = np.empty(len(obs_list), dtype=object)
        for j, o in enumerate(obs_list):
            out[j] = o
        return out


def to_numpy_action(action: Any) -> np.ndarray:
    """Convert an action batch (numpy, torch tensor on any device, list) to a numpy array.

    >>> to_numpy_action([1, 0]).tolist()
    [1, 0]
    """
    if type(action) is np.ndarray:  # the per-step case: nothing to convert
        return action
    if hasattr(action, "detach"):  # torch.Tensor, without importing torch here
        action = action.detach().cpu().numpy()
    return np.asarray(action)


def env_spaces(env: Any) -> tuple[gym.Space | None, gym.Space | None]:
    """``(observation_space, action_space)`` of ``env``; ``None`` for one it does not define.

    A vector env can hold envs that define no spaces (their observations are then stacked
    as they come, and random actions cannot be sampled for them).

    >>> class Bare:
    ...     action_space = gym.spaces.Discrete(2)
    >>> env_spaces(Bare())
    (None, Discrete(2))
    """
    return getattr(env, "observation_space", None), getattr(env, "action_space", None)


def resolve_env_id(env_id: EnvIds, id: EnvIds) -> EnvIds:
    """The env ids of a call that accepts ``env_id`` and Tianshou's spelling ``id``.

    >>> resolve_env_id(None, [1, 2])
    [1, 2]
    """
    if id is None:
        return env_id
    if env_id is not None:
        raise TypeError("pass the env ids once: env_id= or its alias id=, not both")
    return id


def _info_array(infos: Sequence[dict], ids: np.ndarray) -> np.ndarray:
    for info, i in zip(infos, ids.tolist()):
        info["env_id"] = i
    out = np.empty(len(infos), dtype=object)
    out[:] = infos
    return out


class EnvWorker:
    """One env of a vector env, as an object (Tianshou's ``EnvWorker``): ``venv.workers[i]``.

    It reads and sets attributes of that env through the vector env; subclasses for a
    particular vector env add what it has (``DummyVectorEnv``'s workers expose the env
    itself as ``.env``, the subprocess envs' workers their ``process``).

    :param venv: the vector env.
    :param env_id: the env's id in ``venv``.
    """

    def __init__(self, venv: BaseVectorEnv, env_id: int) -> None:
        self.venv = venv
        self.env_id = env_id

    def get_env_attr(self, key: str) -> Any:
        """``venv.get_env_attr(key, env_id)`` for this env alone."""
        return self.venv.get_env_attr(key, self.env_id)[0]

    def set_env_attr(self, key: str, value: Any) -> None:
        """``venv.set_env_attr(key, value, env_id)`` for this env alone."""
        self.venv.set_env_attr(key, value, self.env_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_id={self.env_id})"


class BaseVectorEnv(ABC):
    """Common bookkeeping of tdrl vector envs: env ids, async ready/waiting sets, seeding.

    Subclasses implement :meth:`_reset_envs`, :meth:`_send_actions`, :meth:`_collect`,
    :meth:`_seed_envs`, :meth:`_get_attr`, :meth:`_set_attr` and :meth:`_close`. A subclass
    that overrides the public ``reset``/``step`` (as Tianshou's finite-env example does) can
    read the selected ids with :meth:`_wrap_id`.

    :param env_num: number of environments.
    :param wait_num: in async mode, the number of envs ``step`` waits for (``None``: all).
    :param timeout: in async mode, the seconds ``step`` waits at most (at least one env is
        always returned).
    """

    def __init__(self, env_num: int, wait_num: int | None = None, timeout: float | None = None):
        if env_num < 1:
            raise ValueError(f"a vector env needs at least one env, got env_num={env_num}")
        self.env_num = env_num
        self.wait_num = env_num if wait_num is None else int(wait_num)
        if not 1 <= self.wait_num <= env_num:
            raise ValueError(f"wait_num must be in [1, {env_num}], got {wait_num}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive when given, got {timeout}")
        self.timeout = timeout
        self.is_async = self.wait_num != env_num or timeout is not None
        self.is_closed = False
        self._all_ids = np.arange(env_num)
        self._waiting = np.zeros(env_num, dtype=bool)
        self.action_space: list[gym.Space] = []
        self.observation_space: list[gym.Space] = []

    # ------------------------------------------------------------------ helpers
    def __len__(self) -> int:
        """Return the number of environments."""
        return self.env_num

    @property
    def ready_id(self) -> list[int]:
        """Ids of the envs that are not stepping (all of them outside async mode)."""
        return np.flatnonzero(~self._waiting).tolist()

    @property
    def waiting_id(self) -> list[int]:
        """Ids of the envs with a pending ``step`` (async mode)."""
        return np.flatnonzero(self._waiting).tolist()

    @property
    def workers(self) -> list[EnvWorker]:
        """One :class:`EnvWorker` per env (Tianshou's ``venv.workers``)."""
        return [EnvWorker(self, i) for i in range(self.env_num)]

    def _check_open(self) -> None:
        if self.is_closed:
            raise RuntimeError(f"{type(self).__name__} is closed; create a new one")

    def _ids(self, env_id: EnvIds) -> np.ndarray:
        if env_id is None:
            return self._all_ids
        ids = np.asarray(env_id, dtype=np.int64).reshape(-1)
        # the range check on a list: Python's min/max of a few ids beat numpy's reductions
        listed = ids.tolist()
        if listed and (min(listed) < 0 or max(listed) >= self.env_num):
            raise IndexError(f"env_id must be in [0, {self.env_num}), got {listed}")
        return ids

    def _wrap_id(self, env_id: EnvIds = None) -> list[int]:
        """The selected env ids as a list (all of them for ``None``), checked against
        ``env_num``: the helper Tianshou's vector env subclasses call by this name.

        >>> from tdrl.env import DummyVectorEnv
        >>> from tdrl.env.testing import MoveToRightEnv
        >>> venv = DummyVectorEnv([lambda: MoveToRightEnv(size=2)] * 3)
        >>> venv._wrap_id(None), venv._wrap_id(1), venv._wrap_id(np.array([2, 0]))
        ([0, 1, 2], [1], [2, 0])
        """
        return [int(i) for i in self._ids(env_id)]

    def _check_ready(self, ids: np.ndarray) -> None:
        if not self.is_async:  # only async mode leaves envs stepping between calls
            return
        busy = ids[self._waiting[ids]]
        if busy.size:
            raise RuntimeError(
                f"envs {busy.tolist()} are still stepping; interact only with ready envs "
                f"{self.ready_id} or fetch results with step(None)"
            )

    def _seed_list(self, seed: int | Sequence[int | None] | None, ids: np.ndarray) -> list:
        if seed is None:
            return [None] * len(ids)
        if isinstance(seed, int | np.integer):
            return [int(seed) + int(i) for i in ids]
        seeds = list(seed)
        if len(seeds) != len(ids):
            raise ValueError(f"seed: expected {len(ids)} seeds (one per env), got {len(seeds)}")
        return seeds

    # --------------------------------------------------------------- public API
    def reset(
        self,
        env_id: EnvIds = None,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, np.ndarray]:
        """Reset the selected envs (all by default) and return ``(obs, info)``.

        :param env_id: an id or a sequence of ids; ``None`` means every env.
        :param seed: ``None``, an int (env ``i`` is reset with ``seed + i``) or one seed per
            selected env.
        :param options: passed to every selected env's ``reset``.
        """
        self._check_open()
        ids = self._ids(env_id)
        if not len(ids):
            return self._empty_obs(), np.empty(0, dtype=object)
        self._check_ready(ids)
        obs, infos = self._reset_envs(ids, self._seed_list(seed, ids), options)
        return obs, _info_array(infos, ids)

    def step(self, action: Any, env_id: EnvIds = None, *, id: EnvIds = None) -> StepResult:
        """Step the selected envs with ``action`` (leading dim = number of selected envs).

        Outside async mode the results are for ``env_id`` in order. In async mode the results
        are for the envs that became ready (their ids in ``info[i]["env_id"]``), and
        ``action=None`` only fetches pending results. ``id`` is Tianshou's name for
        ``env_id`` (give one of them).
        """
        self._check_open()
        ids = self._ids(resolve_env_id(env_id, id))
        if not self.is_async:
            if action is None:
                raise ValueError("step(None) fetches pending results and needs async mode")
            if not len(ids):
                return self._empty_step()
            obs, rew, term, trunc, infos = self._step_ids(action, ids)
            return obs, rew, term, trunc, _info_array(infos, ids)
        if action is not None and not len(ids):
            return self._empty_step()
        if action is not None:
            self._check_ready(ids)
            self._send_actions(self._check_action(action, ids), ids)
            self._waiting[ids] = True
        pending = np.flatnonzero(self._waiting)
        if not len(pending):
            raise RuntimeError("step(None): no env is stepping, nothing to fetch")
        wait_num = min(self.wait_num, len(pending))
        ready, obs, rew, term, trunc, infos = self._collect(pending, wait_num, self.timeout)
        self._waiting[ready] = False
        return obs, rew, term, trunc, _info_array(infos, ready)

    def _step_ids(
        self, action: Any, ids: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """One synchronous step of the envs ``ids`` (a non-empty array of valid ids, outside
        async mode): ``step``'s results in ``ids`` order, except that the infos are the
        envs' own dicts in a list, without the ``env_id`` entry and the object array that
        ``step`` adds. The collector's per-step path (it keeps the ids itself)."""
        self._send_actions(self._check_action(action, ids), ids)
        _, obs, rew, term, trunc, infos = self._collect(ids, len(ids), None)
        return obs, rew, term, trunc, infos

    def _empty_obs(self) -> Any:
        try:
            return create_empty_array(self.observation_space[0], n=0)
        except Exception:  # spaces gymnasium cannot batch
            return np.empty(0, dtype=object)

    def _empty_step(self) -> StepResult:
        empty = np.empty(0, dtype=bool)
        return self._empty_obs(), np.empty(0), empty, empty.copy(), np.empty(0, dtype=object)

    @staticmethod
    def _check_action(action: Any, ids: np.ndarray) -> np.ndarray:
        act = to_numpy_action(action)
        if act.ndim == 0 or len(act) != len(ids):
            raise ValueError(
                f"action: expected leading dim {len(ids)} (one per selected env), "
                f"got shape {act.shape}"
            )
        return act

    def seed(self, seed: int | Sequence[int | None] | None = None) -> list[Any]:
        """Seed every env (env ``i`` with ``seed + i`` for an int) and its action space.

        The envs are reset with their seed, so ``seed(s)`` then ``reset()`` replays the same
        trajectory for the same actions.
        """
        self._check_open()
        self._check_ready(self._all_ids)
        return self._seed_envs(self._seed_list(seed, self._all_ids))

    def get_env_attr(self, key: str, id: EnvIds = None) -> list[Any]:
        """Return ``getattr(env, key)`` of the selected envs as a list."""
        self._check_open()
        ids = self._ids(id)
        self._check_ready(ids)
        return [self._get_attr(key, int(i)) for i in ids]

    def set_env_attr(self, key: str, value: Any, id: EnvIds = None) -> None:
        """Set ``key`` to ``value`` on the selected envs (on their unwrapped env)."""
        self._check_open()
        ids = self._ids(id)
        self._check_ready(ids)
        for i in ids:
            self._set_attr(key, value, int(i))

    def render(self, **kwargs: Any) -> list[Any]:
        """Render every env; returns one frame (or ``None``) per env."""
        raise NotImplementedError(f"{type(self).__name__} cannot render")

    def close(self) -> None:
        """Close every env and release processes and shared memory; safe to call twice."""
        if self.is_closed:
            return
        self.is_closed = True
        self._close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> BaseVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_num={self.env_num}, is_async={self.is_async})"

    # ------------------------------------------------------------ to implement
    @abstractmethod
    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        """Reset envs ``ids``; return stacked obs and one info dict per env."""

    @abstractmethod
    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        """Start stepping envs ``ids`` with ``action`` (one row per id)."""

    @abstractmethod
    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Wait for at least ``wait_num`` of the ``pending`` envs; return
        ``(ready_ids, obs, rew, terminated, truncated, infos)`` for the ready ones.

        Outside async mode ``wait_num == len(pending)`` and the results follow ``pending``'s
        order."""

    @abstractmethod
    def _seed_envs(self, seeds: list) -> list[Any]:
        """Seed every env."""

    @abstractmethod
    def _get_attr(self, key: str, i: int) -> Any:
        """Return an attribute of env ``i``."""

    @abstractmethod
    def _set_attr(self, key: str, value: Any, i: int) -> None:
        """Set an attribute of env ``i``."""

    @abstractmethod
    def _close(self) -> None:
        """Release the envs."""
