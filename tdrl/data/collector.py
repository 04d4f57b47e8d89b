"""Collectors: run a policy in vector environments and store the transitions in a buffer.

Semantics follow Tianshou's ``Collector``: ``collect(n_step=...)`` steps every env until at
least ``n_step`` transitions were gathered (``ceil(n_step / N) * N``) and carries open
episodes over to the next call; ``collect(n_episode=...)`` gathers exactly ``n_episode``
episodes, spreading the last ones evenly over the envs, then resets every env.

The hot loop works on the envs' numpy arrays: one numpy -> torch conversion per input
array (the policy's ``Batch`` is assembled directly, :mod:`tdrl.data.collector_step`), one
torch -> numpy conversion for the action, one vectorized ``buffer.add`` per vector step,
and the policy runs under ``torch.inference_mode()``. What does not change during a
collect is looked up once (the bound methods, the policy's ``map_action``); a step where
no env finished skips the episode bookkeeping with one byte comparison, and a step of all
envs calls ``env.step`` without ids (nothing to validate).
"""

from __future__ import annotations

import pickle
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from typing_extensions import TypeVar

from tdrl.data.batch import Batch
from tdrl.data.batch_ops import torch_size
from tdrl.data.collector_step import (
    _policy_input,
    _step_finite,
    _surely_finite,
    env_stepper,
    first_nonfinite,
    legal_random_actions,
    sample_spaces,
)
from tdrl.data.hooks import CollectorHooksMixin
from tdrl.data.stats import CollectStats
from tdrl.data.tree import (
    Tree,
    stack_infos,
    tree_assign,
    tree_copy,
    tree_index,
    tree_to_numpy,
    tree_to_torch,
)
from tdrl.env import BaseVectorEnv, DummyVectorEnv, make_vector_env

DEFAULT_BUFFER_SIZE_PER_ENV = 10_000
TCollectStats = TypeVar("TCollectStats", bound=CollectStats, default=CollectStats)


def _as_vector_env(env: Any) -> BaseVectorEnv:
    if isinstance(env, BaseVectorEnv):
        return env
    if isinstance(env, gym.Env):
        warnings.warn(
            "Collector got a single gymnasium.Env; wrapping it in a DummyVectorEnv.",
            stacklevel=3,
        )
        return DummyVectorEnv([lambda: env])
    return make_vector_env(env)


def _buffer_num(buffer: Any) -> int:
    """Number of sub-buffers an env can be routed to (Tianshou's rule)."""
    cached = getattr(buffer, "cached_buffer_num", None)
    if cached is not None:
        return int(cached)
    return int(getattr(buffer, "buffer_num", 1))


_ndarray = np.ndarray
_Tensor = torch.Tensor
_InferenceMode = torch._C._InferenceMode
"""The guard ``torch.inference_mode()`` enters (without its Python wrapper's cost)."""
_UNSET: Any = object()
_NO_HOOKS = (_UNSET, _UNSET)
"""``Collector._policy_hooks`` outside ``collect``: look ``map_action`` /
``map_action_inverse`` up on the policy at each call."""


class NonFiniteError(ValueError):
    """An env returned a NaN or infinite reward or floating observation.

    >>> issubclass(NonFiniteError, ValueError)
    True
    """


def _as_policy(policy: Any) -> Any:
    """The policy to act with: an ``Algorithm`` stands for its policy (as in Tianshou 2.0,
    whose ``Collector`` takes ``Policy | Algorithm``); anything else is used as is."""
    base = sys.modules.get("tdrl.algorithm.algorithm_base")  # not imported: cannot be an Algorithm
    if base is not None and isinstance(policy, base.Algorithm):
        return policy.policy
    return policy


def _zero_rows(state: Any, rows: np.ndarray) -> Any:
    """Zero the hidden state of the given envs (tensor, TensorDict or nested dict)."""
    if state is None or len(rows) == 0:
        return state
    if isinstance(state, Mapping) and not isinstance(state, TensorDictBase):
        return {k: _zero_rows(v, rows) for k, v in state.items()}
    idx = torch.as_tensor(rows)
    if isinstance(state, torch.Tensor):
        state = state.clone()
        state[idx] = 0
        return state
    state = state.clone()
    state[idx] = state[idx].zero_()
    return state


def _zeros_like_rows(x: Any, n: int) -> Any:
    """A zero hidden state for ``n`` envs shaped like the per-env rows of ``x``."""
    if isinstance(x, torch.Tensor):
        return x.new_zeros((n, *x.shape[1:]))
    return x[:1].expand(n, *x.batch_size[1:]).clone().zero_()


class Collector(CollectorHooksMixin, Generic[TCollectStats]):
    """Collect transitions from vector envs with a policy into a replay buffer.

    ``Collector[CollectStats](...)`` works as in Tianshou (the parameter is the stats type);
    step and episode hooks: :mod:`tdrl.data.hooks`.

    Args:
        policy: a callable ``policy(batch, state) -> Batch`` returning ``act`` (and
            optionally ``state`` and ``policy``); see ``docs/internals.md``. It may define
            ``map_action``, ``map_action_inverse`` and ``exploration_noise``. An
            ``Algorithm`` may be given instead: its ``policy`` acts (as in Tianshou 2.0).
        env: a tdrl vector env, a single ``gymnasium.Env`` (wrapped with a warning), or any
            source ``tdrl.env.make_vector_env`` accepts.
        buffer: where transitions go; default ``VectorReplayBuffer(10000 * N, N)``.
        exploration_noise: apply ``policy.exploration_noise`` to the actions.
        check_finite: raise :class:`NonFiniteError` (naming the env and the key) when an
            env returns a NaN/inf reward or floating observation, from ``reset`` or
            ``step``; the bad step is not stored, what was collected before stays in the
            buffer. ``False`` skips the check.

    >>> import gymnasium as gym
    >>> from tdrl.env import DummyVectorEnv
    >>> from tdrl.data.buffer import VectorReplayBuffer
    >>> envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    >>> c = Collector(None, envs, VectorReplayBuffer(100, 2))
    >>> c.reset(seed=0)
    >>> c.collect(n_step=9, random=True).n_collected_steps
    10
    >>> len(c.buffer)
    10
    """

    _rounds_n_step = True  # n_step mode steps every env, so it rounds up to a multiple of N
    _policy_hooks: tuple[Any, Any] = _NO_HOOKS  # ``collect`` caches the policy's action maps

    def __init__(
        self,
        policy: Any,
        env: Any,
        buffer: Any = None,
        exploration_noise: bool = False,
        check_finite: bool = True,
    ) -> None:
        self.env = _as_vector_env(env)
        self.env_num = len(self.env)
        self.policy = _as_policy(policy)
        self.exploration_noise = exploration_noise
        self.check_finite = bool(check_finite)
        if buffer is None:
            from tdrl.data.buffer import VectorReplayBuffer

            buffer = VectorReplayBuffer(DEFAULT_BUFFER_SIZE_PER_ENV * self.env_num, self.env_num)
        self._check_buffer(buffer)
        self.buffer = buffer
        self._obs: Tree | None = None
        self._info: dict[str, np.ndarray] = {}
        self._state: Any = None
        self._rng = np.random.default_rng()
        self._env_id_memo: list[tuple[Any, Any]] = [(None, None)]  # see ``_policy_input``
        spaces = self.env.action_space
        self._same_spaces = all(space == spaces[0] for space in spaces)
        self.collect_step = 0
        self.collect_episode = 0
        self.collect_time = 0.0

    def state_dict(self) -> dict[str, Any]:
        """See :func:`collector_state_dict`."""
        return collector_state_dict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """See :func:`load_collector_state_dict`."""
        load_collector_state_dict(self, state)

    def _check_buffer(self, buffer: Any) -> None:
        if getattr(buffer, "maxsize", 1) == 0:
            raise ValueError("buffer has maxsize 0: it cannot store any transition")
        n = _buffer_num(buffer)
        if n < self.env_num:
            raise ValueError(
                f"buffer has {n} sub-buffer(s) but the collector drives {self.env_num} envs; "
                f"use a VectorReplayBuffer with buffer_num >= {self.env_num}"
            )

    # ------------------------------------------------------------------ resets
    def reset(
        self,
        reset_buffer: bool = True,
        reset_stats: bool = True,
        seed: int | None = None,
        gym_reset_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Reset the envs (and by default the buffer and the lifetime counters).

        ``seed`` seeds env ``i`` with ``seed + i`` and the collector's own generator (used for
        ``random=True`` actions) with ``seed``.
        """
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.reset_env(seed=seed, gym_reset_kwargs=gym_reset_kwargs)
        if reset_buffer:
            self.reset_buffer()
        if reset_stats:
            self.reset_stat()

    def reset_stat(self) -> None:
        """Zero the lifetime counters ``collect_step``, ``collect_episode``, ``collect_time``."""
        self.collect_step = self.collect_episode = 0
        self.collect_time = 0.0

    def reset_buffer(self, keep_statistics: bool = False) -> None:
        """Empty the buffer; ``keep_statistics`` keeps running episode returns/lengths."""
        self.buffer.reset(keep_statistics=keep_statistics)

    def reset_env(
        self, seed: int | None = None, gym_reset_kwargs: dict[str, Any] | None = None
    ) -> None:
        """Reset every env and the hidden state; open episodes are dropped."""
        kwargs = dict(gym_reset_kwargs or {})
        obs, info = self.env.reset(seed=seed, **kwargs)
        if self.check_finite:
            self._check_finite(np.arange(self.env_num), None, obs, "reset()")
        self._obs = tree_copy(obs)
        self._info = stack_infos(info, np.arange(self.env_num))
        self._state = None
        # the buffer's open episodes ended with that reset: their return and length must
        # not run on into the next episode (a warm-up's last partial episode, say)
        drop = getattr(self.buffer, "drop_open_episodes", None)
        if drop is not None:
            drop()

    def _reset_envs(self, env_ids: np.ndarray, gym_reset_kwargs: dict[str, Any]) -> None:
        obs, info = self.env.reset(env_id=env_ids, **gym_reset_kwargs)
        if self.check_finite:
            self._check_finite(env_ids, None, obs, "reset()")
        target = self._obs
        if type(target) is _ndarray:  # ``tree_assign`` of a plain array
            target[env_ids] = obs
        else:
            tree_assign(target, env_ids, obs)
        if self._info:
            new = stack_infos(info, env_ids)
            for k in list(self._info):
                if k in new:
                    target = self._info[k]
                    if type(target) is _ndarray:  # ``tree_assign`` of a plain array
                        target[env_ids] = new[k]
                    else:
                        tree_assign(target, env_ids, new[k])
        if self._state is not None:
            self._state = _zero_rows(self._state, env_ids)

    # ------------------------------------------------------------------ acting
    def _random_action(self, env_ids: np.ndarray, obs: Tree = None) -> np.ndarray:
        """Uniform actions from the collector's generator, mapped back to the raw space.

        With a ``{"obs", "mask"}`` observation (Discrete actions), only legal actions
        (``mask == True``) are drawn.
        """
        mask = obs.get("mask") if type(obs) is not _ndarray and isinstance(obs, Mapping) else None
        if mask is not None:
            return legal_random_actions(np.asarray(mask), self._rng)
        act = sample_spaces(self.env.action_space, env_ids, self._rng, self._same_spaces)
        inverse = self._policy_hooks[1]
        if inverse is _UNSET:
            inverse = getattr(self.policy, "map_action_inverse", None)
        return np.asarray(inverse(act)) if inverse is not None else act

    def _policy_action(
        self, obs: Tree, info: dict[str, np.ndarray], env_ids: np.ndarray, all_envs: bool
    ) -> tuple[np.ndarray, Any]:
        """Run the policy on the ready envs; return (raw action, data to store)."""
        state = self._state
        if state is not None and not all_envs:
            state = tree_index(state, torch.as_tensor(env_ids))
        with _InferenceMode(True):
            n = len(env_ids)
            size = torch_size(n)
            batch = _policy_input(obs, info, size, self._env_id_memo)
            if batch is None:
                data: dict[str, Any] = {"obs": tree_to_torch(obs)}
                if info:  # one nested Batch built with the outer one (cheaper than a set)
                    data["info"] = Batch(tree_to_torch(info), batch_size=size)
                batch = Batch(data, batch_size=size)
            result = self.policy(batch, state)
            # a Batch's entries as stored: what ``result[...]`` / ``result.get`` return
            entries = result._tensordict if type(result) is Batch else None
            act = None if entries is None else entries.get("act")
            if type(act) is not _Tensor:
                act = result["act"]
            if self.exploration_noise:
                act = self.policy.exploration_noise(act, batch)
            if entries is not None:
                new_state = entries.get("state")
                stored = entries.get("policy")
            else:
                new_state = result.get("state", None)
                stored = result.get("policy", None)
        if type(act) is _Tensor and act.is_cpu and not act.requires_grad:
            act_np = act.numpy()
        else:
            act_np = np.asarray(tree_to_numpy(act))
        if new_state is not None:
            if all_envs:
                self._state = new_state
            else:
                if self._state is None:
                    self._state = _zeros_like_rows(new_state, self.env_num)
                self._state[torch.as_tensor(env_ids)] = new_state
        return act_np, stored

    def _map_action(self, act: np.ndarray) -> np.ndarray:
        mapper: Callable[[np.ndarray], Any] | None = self._policy_hooks[0]
        if mapper is _UNSET:
            mapper = getattr(self.policy, "map_action", None)
        return np.asarray(mapper(act)) if mapper is not None else act

    # ------------------------------------------------------------------ collect
    def collect(
        self,
        n_step: int | None = None,
        n_episode: int | None = None,
        random: bool = False,
        render: float | None = None,
        reset_before_collect: bool = False,
        gym_reset_kwargs: dict[str, Any] | None = None,
    ) -> CollectStats:
        """Collect ``n_step`` steps or ``n_episode`` episodes; see the module docstring."""
        if (n_step is None) == (n_episode is None) or not (n_step or n_episode):
            raise ValueError(
                f"exactly one of n_step and n_episode must be a positive number, got "
                f"n_step={n_step}, n_episode={n_episode}"
            )
        if (n_step is not None and n_step < 0) or (n_episode is not None and n_episode < 0):
            raise ValueError(f"n_step/n_episode must be positive, got {n_step}/{n_episode}")
        if not random and self.policy is None:
            raise ValueError("collect(random=False) needs a policy; this collector has None")
        kwargs = dict(gym_reset_kwargs or {})
        if reset_before_collect or self._obs is None:
            if self._obs is None and not reset_before_collect:
                raise RuntimeError(
                    "the collector was never reset: call collector.reset() or "
                    "collect(..., reset_before_collect=True) first"
                )
            self.reset(reset_buffer=False, gym_reset_kwargs=kwargs)
        if self._rounds_n_step and n_step is not None and n_step % self.env_num != 0:
            warnings.warn(
                f"n_step={n_step} is not a multiple of the number of envs ({self.env_num}); "
                f"{-(-n_step // self.env_num) * self.env_num} steps will be collected",
                stacklevel=2,
            )
        start = time.perf_counter()
        self._episode_mode = n_episode is not None
        # the policy's action maps, looked up once per collect rather than once per step
        # (a miss on an ``nn.Module`` costs an exception)
        policy = self.policy
        self._policy_hooks = (
            getattr(policy, "map_action", None),
            getattr(policy, "map_action_inverse", None),
        )
        try:
            step_count, returns, lens = self._run(n_step, n_episode, random, render, kwargs)
        finally:
            self._policy_hooks = _NO_HOOKS
        if n_episode is not None:
            self._finish_episode_collect(kwargs)
        elapsed = max(time.perf_counter() - start, 1e-9)
        self.collect_step += step_count
        self.collect_episode += len(returns)
        self.collect_time += elapsed
        return CollectStats.from_episodes(
            np.asarray(returns), np.asarray(lens), step_count, elapsed
        )

    def _store(
        self, env_ids: np.ndarray, step: tuple, info: dict[str, Any], stored: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """Add one vector step to the buffer; return the finished episodes' returns/lengths.

        ``step`` is ``(obs, act, rew, terminated, truncated, obs_next)`` of the envs
        ``env_ids``; ``stored`` is the policy's data to keep (or ``None``).
        """
        obs, act, rew, terminated, truncated, obs_next = step
        if self.check_finite and not _step_finite(rew, obs_next):
            self._check_finite(env_ids, rew, obs_next, "step()")
        data: dict[str, Any] = {
            "obs": obs,
            "act": act,
            "rew": rew,
            "terminated": terminated,
            "truncated": truncated,
            "obs_next": obs_next,
        }
        if info:
            data["info"] = info
        if stored is not None:
            data["policy"] = stored
        if self._on_step_hook is not None:
            data = self._hook_step(data)
        ptr, ep_rew, ep_len, ep_idx = self.buffer.add(data, buffer_ids=env_ids)
        if self._on_episode_done_hook is not None:
            self._hook_episodes(ptr, ep_len, ep_idx)
        return ep_rew, ep_len

    def _check_finite(self, env_ids: np.ndarray, rew: Any, obs: Tree, source: str) -> None:
        """Raise :class:`NonFiniteError` if ``rew`` or a floating leaf of ``obs`` (one row
        per env of ``env_ids``) holds a NaN or an infinity."""
        if (rew is None or _surely_finite(rew)) and _surely_finite(obs):
            return
        found = None if rew is None else first_nonfinite(rew, "rew")
        if found is None:
            found = first_nonfinite(obs, "obs_next" if rew is not None else "obs")
        if found is None:
            return
        key, row, value = found
        raise NonFiniteError(
            f"env {int(np.asarray(env_ids)[row])}: {key} returned by {source} is {value}; "
            "expected finite rewards and observations (nothing of this step was stored; "
            "Collector(..., check_finite=False) turns this check off)"
        )

    def _finish_episode_collect(self, reset_kwargs: dict[str, Any]) -> None:
        """After an n_episode collect every env starts afresh (Tianshou's rule)."""
        self.reset_env(gym_reset_kwargs=reset_kwargs)

    def _run(
        self,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        reset_kwargs: dict[str, Any],
    ) -> tuple[int, list[float], list[int]]:
        env_ids = np.arange(self.env_num if n_step else min(self.env_num, n_episode or 0))
        all_envs = len(env_ids) == self.env_num
        obs = self._obs if all_envs else tree_index(self._obs, env_ids)
        info = self._info if all_envs else tree_index(self._info, env_ids)
        step_count, episode_count = 0, 0
        returns: list[float] = []
        lens: list[int] = []
        # the loop's methods looked up once (the per-step cost is what is left)
        env_step = env_stepper(self.env)
        store, map_action = self._store, self._map_action
        random_action, policy_action = self._random_action, self._policy_action
        logical_or = np.logical_or
        cls = type(self)
        # without an action map (and ``_map_action`` not overridden) the action goes to the
        # envs as it is: what ``_map_action`` would return
        no_map = self._policy_hooks[0] is None and cls._map_action is Collector._map_action
        plain_write_back = cls._write_back is Collector._write_back
        n = len(env_ids)
        no_done = bytes(n)  # ``done.tobytes()`` of a step where no env finished
        while True:
            if random:
                act, stored = random_action(env_ids, obs), None
            else:
                act, stored = policy_action(obs, info, env_ids, all_envs)
            obs_next, rew, terminated, truncated, info_next = env_step(
                act if no_map else map_action(act), env_ids, all_envs
            )
            step = (obs, act, rew, terminated, truncated, obs_next)
            ep_rew, ep_len = store(env_ids, step, info_next, stored)
            if render:
                self.env.render()
                time.sleep(render)
            step_count += n
            obs = obs_next
            info = info_next
            done = logical_or(terminated, truncated)
            if done.tobytes() == no_done:  # the common step: nothing finished
                if (n_step and step_count >= n_step) or (n_episode and episode_count >= n_episode):
                    break
                continue
            # ``np.flatnonzero`` without its Python wrapper for the usual 1-d flags
            done_local = done.nonzero()[0] if done.ndim == 1 else np.flatnonzero(done)
            if len(done_local):
                done_ids = env_ids[done_local]
                returns.extend(np.asarray(ep_rew)[done_local].tolist())
                lens.extend(np.asarray(ep_len)[done_local].tolist())
                episode_count += len(done_local)
                if all_envs and plain_write_back:  # ``_write_back`` of every env
                    self._obs, self._info = obs, info
                else:
                    self._write_back(env_ids, all_envs, obs, info)
                self._reset_envs(done_ids, reset_kwargs)
                obs = self._obs if all_envs else tree_index(self._obs, env_ids)
                info = self._info if all_envs else tree_index(self._info, env_ids)
                if n_episode:
                    surplus = len(env_ids) - (n_episode - episode_count)
                    if surplus > 0:
                        keep = np.ones(len(env_ids), dtype=bool)
                        keep[done_local[:surplus]] = False
                        env_ids = env_ids[keep]
                        all_envs = False
                        n = len(env_ids)
                        no_done = bytes(n)
                        obs = tree_index(self._obs, env_ids)
                        info = tree_index(self._info, env_ids)
            if (n_step and step_count >= n_step) or (n_episode and episode_count >= n_episode):
                break
        self._write_back(env_ids, all_envs, obs, info)
        return step_count, returns, lens

    def _write_back(
        self, env_ids: np.ndarray, all_envs: bool, obs: Tree, info: dict[str, np.ndarray]
    ) -> None:
        """Persist the latest observation of the ready envs for the next call."""
        if all_envs:
            self._obs = obs
            self._info = info
            return
        if len(env_ids):
            tree_assign(self._obs, env_ids, obs)
            for k in list(self._info):
                if k in info:
                    tree_assign(self._info[k], env_ids, info[k])


def _env_snapshot(env: BaseVectorEnv) -> list[Any] | None:
    """Pickled copies of in-process envs (their dynamics state and RNGs), else None."""
    if isinstance(env, DummyVectorEnv):
        return [pickle.dumps(e) for e in env.envs]
    return None


def collector_state_dict(collector: Collector[Any]) -> dict[str, Any]:
    """Everything needed to continue collection exactly: envs, last obs, hidden state, buffer.

    In-process envs (``DummyVectorEnv``) are snapshotted, so a resumed run continues the same
    episodes; envs in other processes cannot be, and are reset on load instead.
    """
    return {
        "obs": tree_copy(collector._obs) if collector._obs is not None else None,
        "info": tree_copy(collector._info),
        "state": collector._state,
        "buffer": pickle.dumps(collector.buffer),
        "envs": _env_snapshot(collector.env),
        "counters": (collector.collect_step, collector.collect_episode, collector.collect_time),
        "rng": collector._rng.bit_generator.state,
    }


def load_collector_state_dict(collector: Collector[Any], state: dict[str, Any]) -> None:
    """Restore what :func:`collector_state_dict` saved into ``collector``."""
    collector.buffer = pickle.loads(state["buffer"])
    collector.collect_step, collector.collect_episode, collector.collect_time = state["counters"]
    collector._rng.bit_generator.state = state["rng"]
    envs = state["envs"]
    if envs is not None and isinstance(collector.env, DummyVectorEnv):
        collector.env.envs = [pickle.loads(e) for e in envs]
        collector._obs, collector._info, collector._state = (
            state["obs"],
            state["info"],
            state["state"],
        )
    else:
        collector.reset_env()


class AsyncCollector(Collector):
    """Collector for async vector envs (``wait_num < N`` or a ``timeout``).

    Each ``env.step`` returns only the envs that finished stepping; the others keep running
    with the actions they were sent, across ``collect`` calls. Because results arrive in
    whatever order the envs finish, ``collect`` gathers *at least* ``n_step`` steps or
    ``n_episode`` episodes, and envs are not reset after an ``n_episode`` collect.

    >>> from tdrl.env.testing import MoveToRightEnv
    >>> from tdrl.data.buffer import VectorReplayBuffer
    >>> envs = DummyVectorEnv([lambda: MoveToRightEnv(3)] * 2, wait_num=1)
    >>> c = AsyncCollector(None, envs, VectorReplayBuffer(20, 2))
    >>> c.reset(seed=0)
    >>> c.collect(n_step=4, random=True).n_collected_steps >= 4
    True
    """

    _rounds_n_step = False

    def __init__(
        self,
        policy: Any,
        env: Any,
        buffer: Any = None,
        exploration_noise: bool = False,
        check_finite: bool = True,
    ) -> None:
        super().__init__(policy, env, buffer, exploration_noise, check_finite)
        if not self.env.is_async:
            warnings.warn(
                "AsyncCollector got a synchronous vector env; give it wait_num or timeout",
                stacklevel=2,
            )
        self._ready = np.arange(self.env_num)
        self._pending_act: np.ndarray | None = None
        self._pending_policy: Any = None

    def reset_env(
        self, seed: int | None = None, gym_reset_kwargs: dict[str, Any] | None = None
    ) -> None:
        """Fetch every in-flight result (discarded), then reset every env."""
        while getattr(self, "_ready", None) is not None and len(self.env.waiting_id):
            self.env.step(None)
        super().reset_env(seed=seed, gym_reset_kwargs=gym_reset_kwargs)
        self._ready = np.arange(self.env_num)

    def _remember(self, ids: np.ndarray, act: np.ndarray, stored: Any) -> None:
        if self._pending_act is None:
            self._pending_act = np.zeros((self.env_num, *act.shape[1:]), dtype=act.dtype)
        self._pending_act[ids] = act
        if stored is not None:
            if self._pending_policy is None:
                self._pending_policy = _zeros_like_rows(stored, self.env_num)
            self._pending_policy[torch.as_tensor(ids)] = stored

    def _run(
        self,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        reset_kwargs: dict[str, Any],
    ) -> tuple[int, list[float], list[int]]:
        step_count, episode_count = 0, 0
        returns: list[float] = []
        lens: list[int] = []
        while True:
            ready = self._ready
            if len(ready):
                obs = tree_index(self._obs, ready)
                if random:
                    act, stored = self._random_action(ready, obs), None
                else:
                    info = tree_index(self._info, ready)
                    act, stored = self._policy_action(obs, info, ready, False)
                self._remember(ready, act, stored)
                result = self.env.step(self._map_action(act), ready)
            else:
                result = self.env.step(None)
            obs_next, rew, terminated, truncated, step_info = result
            ids = np.fromiter((d["env_id"] for d in step_info), dtype=np.int64, count=len(rew))
            info_next = stack_infos(step_info, ids)
            assert self._pending_act is not None
            stored = None
            if self._pending_policy is not None:
                stored = self._pending_policy[torch.as_tensor(ids)]
            transition = (tree_index(self._obs, ids), self._pending_act[ids], rew)
            ep_rew, ep_len = self._store(
                ids, (*transition, terminated, truncated, obs_next), info_next, stored
            )
            if render:
                self.env.render()
                time.sleep(render)
            step_count += len(ids)
            tree_assign(self._obs, ids, obs_next)
            for k in list(self._info):
                if k in info_next:
                    tree_assign(self._info[k], ids, info_next[k])
            done_local = np.flatnonzero(np.logical_or(terminated, truncated))
            if len(done_local):
                returns.extend(np.asarray(ep_rew)[done_local].tolist())
                lens.extend(np.asarray(ep_len)[done_local].tolist())
                episode_count += len(done_local)
                self._reset_envs(ids[done_local], reset_kwargs)
            self._ready = ids
            if (n_step and step_count >= n_step) or (n_episode and episode_count >= n_episode):
                break
        return step_count, returns, lens

    def _finish_episode_collect(self, reset_kwargs: dict[str, Any]) -> None:
        """Async envs keep running across calls: nothing is reset after n_episode."""
