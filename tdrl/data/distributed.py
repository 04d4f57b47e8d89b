"""Distributed collection for off-policy training: M Ray collector workers, one learner buffer.

Each of the ``M`` workers is a Ray actor holding ``K`` envs (a
:class:`~tdrl.env.DummyVectorEnv`), a copy of the policy and a plain
:class:`~tdrl.data.collector.Collector`. The learner keeps the one replay buffer, a
``VectorReplayBuffer`` with ``M * K`` sub-buffers: worker ``w``'s env ``k`` writes to sub-buffer
``w * K + k``, so each sub-buffer receives one env's transitions in order and its episode
bookkeeping (``prev``/``next``, ``unfinished_index``, running returns) is exactly that of a
single :class:`~tdrl.data.collector.Collector` driving ``M * K`` envs. One round::

    learner                                       worker w = 0 .. M-1 (all in parallel)
    -------                                       -------------------------------------
    sync_weights: ray.put(weights) once ───────▶  load them into its policy copy
    collect(n_step) ───────────────────────────▶  collect ceil(n_step / (M K)) * K steps
                    ◀── its steps, [T, K, ...] ─  (recorded in order, not stored there)
    for t in 0 .. T-1:
        buffer.add(step t of every worker, buffer_ids = 0 .. M K - 1)
    returns, lengths <- the learner buffer's own add() results
    (then the trainer updates; the next collect pushes the new weights)

Counts follow Tianshou: ``collect(n_step)`` gathers ``ceil(n_step / (M K)) * M K`` steps,
``collect(n_episode)`` exactly ``n_episode`` episodes (spread over the workers as evenly as
possible, each worker then resets its envs). The episode returns and lengths in the stats come
from the learner buffer's ``add``, the same numbers a local collector reports. Info entries
are stored as a local collector stores them, with ``info["env_id"]`` the global env id.

The workers act with the weights of the last push (the learner's current ones: a round is
synchronous), and with the policy's plain attributes (``is_within_training_step``,
``deterministic_eval``, an epsilon, ...) and train/eval mode copied at each push.
"""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
import torch

from tdrl.data.collector import Collector
from tdrl.data.stats import CollectStats
from tdrl.data.tree import Tree, tree_index, tree_to_numpy
from tdrl.env import DummyVectorEnv
from tdrl.env.ray_env import init_ray
from tdrl.env.worker import EnvFactory

__all__ = ["CollectorWorker", "RayCollector", "StepRecorder", "policy_payload"]

_PLAIN = (bool, int, float, str, type(None))


def _copy_leaves(x: Tree) -> Tree:
    """Numpy copies of every leaf (tensors and TensorDicts become numpy / dicts)."""
    if isinstance(x, Mapping):
        return {k: _copy_leaves(v) for k, v in x.items()}
    return np.array(tree_to_numpy(x), copy=True)


def _stack(trees: Sequence[Tree]) -> Tree:
    if isinstance(trees[0], Mapping):
        return {k: _stack([t[k] for t in trees]) for k in trees[0]}
    return np.stack(trees)


def _concat(trees: Sequence[Tree], axis: int) -> Tree:
    if isinstance(trees[0], Mapping):
        return {k: _concat([t[k] for t in trees], axis) for k in trees[0]}
    return np.concatenate(trees, axis=axis)


def _shift_env_id(data: dict[str, Any], offset: int) -> None:
    info = data.get("info")
    if offset and isinstance(info, dict) and "env_id" in info:
        info["env_id"] = info["env_id"] + offset


class StepRecorder:
    """A stand-in buffer for a worker's :class:`~tdrl.data.collector.Collector`: it keeps
    every vector step it is given, in order, and tracks running episode returns and lengths
    per env so that ``add`` answers as a buffer does.

    :param buffer_num: the number of envs of the worker.

    >>> rec = StepRecorder(2)
    >>> step = {"obs": np.zeros(2), "act": np.zeros(2), "rew": np.array([1.0, 2.0]),
    ...         "terminated": np.array([False, True]), "truncated": np.zeros(2, bool)}
    >>> _, ep_rew, ep_len, _ = rec.add(step, np.arange(2))
    >>> ep_rew.tolist(), ep_len.tolist(), len(rec.steps)
    ([0.0, 2.0], [0, 1], 1)
    >>> kind, data = rec.drain()
    >>> kind, data["rew"].shape, rec.steps
    ('stacked', (1, 2), [])
    """

    maxsize = 2**62

    def __init__(self, buffer_num: int) -> None:
        self.buffer_num = int(buffer_num)
        self.steps: list[tuple[np.ndarray, dict[str, Any]]] = []
        self._ret = np.zeros(self.buffer_num, dtype=np.float64)
        self._len = np.zeros(self.buffer_num, dtype=np.int64)

    def add(
        self, data: dict[str, Any], buffer_ids: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Record one vector step (copied) for envs ``buffer_ids``; return
        ``(ptr, ep_rew, ep_len, ep_idx)`` with ``ptr``/``ep_idx`` zeros."""
        ids = np.arange(self.buffer_num) if buffer_ids is None else np.asarray(buffer_ids)
        rew = np.asarray(data["rew"], dtype=np.float64)
        done = np.asarray(data["terminated"], dtype=bool) | np.asarray(data["truncated"], bool)
        self._ret[ids] += rew
        self._len[ids] += 1
        ep_rew = np.where(done, self._ret[ids], 0.0)
        ep_len = np.where(done, self._len[ids], 0)
        self._ret[ids[done]] = 0.0
        self._len[ids[done]] = 0
        self.steps.append((ids.copy(), _copy_leaves(dict(data))))
        zeros = np.zeros(len(ids), dtype=np.int64)
        return zeros, ep_rew, ep_len, zeros

    def reset(self, keep_statistics: bool = False) -> None:
        """Drop the recorded steps (and the running episode statistics unless asked)."""
        self.steps = []
        if not keep_statistics:
            self._ret[:] = 0.0
            self._len[:] = 0

    def drain(self) -> tuple[str, Any]:
        """Hand over the recorded steps and forget them: ``("stacked", tree)`` with leaves
        ``[T, K, ...]`` when every step covered all envs in order, else ``("steps", list of
        (env_ids, data))``."""
        steps, self.steps = self.steps, []
        every = np.arange(self.buffer_num)
        if steps and all(len(ids) == self.buffer_num and (ids == every).all() for ids, _ in steps):
            keys = tuple(steps[0][1])
            if all(tuple(d) == keys for _, d in steps):
                return "stacked", _stack([d for _, d in steps])
        return "steps", steps


def policy_payload(policy: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict, bool]:
    """What a weight push sends: the policy's ``state_dict`` (CPU copies), its plain
    attributes (numbers, flags, strings) and its train/eval mode.

    >>> net = torch.nn.Linear(2, 1)
    >>> net.eps = 0.1
    >>> sd, attrs, training = policy_payload(net)
    >>> sorted(sd), attrs["eps"], training
    (['bias', 'weight'], 0.1, True)
    """
    state = {k: v.detach().to("cpu", copy=True) for k, v in policy.state_dict().items()}
    attrs = {
        k: v
        for k, v in vars(policy).items()
        if type(v) in _PLAIN and k != "training" and not k.startswith("__")
    }
    return state, attrs, bool(policy.training)


class CollectorWorker:
    """The body of one collector worker (a Ray actor in :class:`RayCollector`).

    :param env_fns: the worker's env factories.
    :param policy: the pickled policy (``cloudpickle``), or ``None`` for random collection.
    :param exploration_noise: apply the policy's exploration noise.
    :param check_finite: the collector's NaN/inf check.
    :param torch_threads: torch intra-op threads in the worker.

    >>> from tdrl.env.testing import MoveToRightEnv
    >>> w = CollectorWorker([EnvFactory(lambda: MoveToRightEnv(2))] * 2, None)
    >>> w.reset(0)
    >>> kind, data, n, _ = w.collect(4, None, True)
    >>> kind, data["obs"].shape, n
    ('stacked', (2, 2), 4)
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        policy: bytes | None,
        exploration_noise: bool = False,
        check_finite: bool = True,
        torch_threads: int = 1,
    ) -> None:
        torch.set_num_threads(torch_threads)
        envs = DummyVectorEnv([f.fn for f in env_fns])
        self.policy: Any = None if policy is None else cloudpickle.loads(policy)
        self.recorder = StepRecorder(len(envs))
        self.collector = Collector(
            self.policy, envs, self.recorder, exploration_noise, check_finite=check_finite
        )

    def spaces(self) -> tuple[gym.Space, gym.Space]:
        """``(observation_space, action_space)`` of the first env."""
        env = self.collector.env
        return env.observation_space[0], env.action_space[0]

    def reset(self, seed: int | None, gym_reset_kwargs: dict[str, Any] | None = None) -> None:
        """Reset the envs (env ``k`` with ``seed + k``) and the recorder."""
        self.collector.reset(seed=seed, gym_reset_kwargs=gym_reset_kwargs)

    def reset_env(self, gym_reset_kwargs: dict[str, Any] | None = None) -> None:
        """Reset the envs; open episodes are dropped."""
        self.collector.reset_env(gym_reset_kwargs=gym_reset_kwargs)
        self.recorder.reset()

    def set_weights(self, payload: tuple[dict[str, torch.Tensor], dict, bool]) -> None:
        """Load a :func:`policy_payload` into the policy copy."""
        state, attrs, training = payload
        self.policy.load_state_dict(state)
        for k, v in attrs.items():
            setattr(self.policy, k, v)
        self.policy.train(training)

    def collect(
        self,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        gym_reset_kwargs: dict[str, Any] | None = None,
    ) -> tuple[str, Any, int, float]:
        """Collect; return ``(kind, steps, n_steps, seconds)`` (see
        :meth:`StepRecorder.drain`)."""
        start = time.perf_counter()
        stats = self.collector.collect(
            n_step=n_step, n_episode=n_episode, random=random, gym_reset_kwargs=gym_reset_kwargs
        )
        kind, data = self.recorder.drain()
        return kind, data, stats.n_collected_steps, time.perf_counter() - start

    def close(self) -> None:
        """Close the envs."""
        self.collector.env.close()


def _even_shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` integers differing by at most one, larger first.

    >>> _even_shares(5, 3)
    [2, 2, 1]
    """
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


class RayCollector:
    """A drop-in training collector whose envs run in ``num_workers`` Ray actors.

    The learner side of the scheme in the module docstring; the trainers use it like a
    :class:`~tdrl.data.collector.Collector` (``collect``, ``reset``, ``buffer``, counters,
    ``state_dict``). Call :meth:`close` (or use it as a context manager) to stop the workers.

    :param policy: the learner's policy (a copy goes to each worker; its weights are pushed
        before every ``collect`` that is not random).
    :param env_fn: one env factory used for every env, or ``num_workers * envs_per_worker``
        factories (worker ``w`` gets ``env_fn[w * K:(w + 1) * K]``).
    :param num_workers: ``M``, the number of worker actors.
    :param envs_per_worker: ``K``, envs per worker.
    :param buffer: the learner's buffer: a vector buffer with at least ``M * K`` sub-buffers
        (default ``VectorReplayBuffer(10000 * M * K, M * K)``).
    :param exploration_noise: the workers apply the policy's exploration noise.
    :param check_finite: the workers' NaN/inf check (:class:`~tdrl.data.collector.Collector`).
    :param num_cpus: CPUs each worker reserves in Ray (``None``: 1 when the cluster has
        ``num_workers`` CPUs free, else 0, so that the workers never wait for CPUs).
    :param ray_init_kwargs: passed to ``ray.init`` when Ray is not initialized yet (default:
        the cluster at ``RAY_ADDRESS``, else a local instance with at least ``num_workers``
        CPUs).
    """

    def __init__(
        self,
        policy: Any,
        env_fn: Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
        num_workers: int,
        envs_per_worker: int = 1,
        buffer: Any = None,
        exploration_noise: bool = False,
        check_finite: bool = True,
        num_cpus: float | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if int(num_workers) < 1:
            raise ValueError(f"num_workers: expected an integer >= 1, got {num_workers!r}")
        if int(envs_per_worker) < 1:
            raise ValueError(f"envs_per_worker: expected an integer >= 1, got {envs_per_worker!r}")
        if num_cpus is not None and num_cpus < 0:
            raise ValueError(f"num_cpus: expected a number >= 0, got {num_cpus}")
        self.num_workers, self.envs_per_worker = int(num_workers), int(envs_per_worker)
        self.env_num = self.num_workers * self.envs_per_worker
        fns = [env_fn] * self.env_num if callable(env_fn) else list(env_fn)
        if len(fns) != self.env_num:
            raise ValueError(
                f"env_fn: expected one factory or num_workers * envs_per_worker = "
                f"{self.env_num} factories, got {len(fns)}"
            )
        if buffer is None:
            from tdrl.data.buffer import VectorReplayBuffer

            buffer = VectorReplayBuffer(10_000 * self.env_num, self.env_num)
        n_sub = int(getattr(buffer, "buffer_num", 1))
        if n_sub < self.env_num:
            raise ValueError(
                f"buffer: expected a vector buffer with at least num_workers * envs_per_worker "
                f"= {self.env_num} sub-buffers, got {n_sub}"
            )
        self.buffer = buffer
        self.policy = policy
        self.exploration_noise = exploration_noise
        self._all_ids = np.arange(self.env_num)
        init = dict(ray_init_kwargs or {})
        if "RAY_ADDRESS" not in os.environ and "address" not in init:
            init.setdefault("num_cpus", max(os.cpu_count() or 1, self.num_workers))
        self._ray = ray = init_ray(**init)
        if num_cpus is None:
            free = float(ray.available_resources().get("CPU", 0.0))
            num_cpus = 1.0 if free >= self.num_workers else 0.0
        # a CPU copy: the workers need no GPU (the pushes send CPU weights too)
        blob = None if policy is None else cloudpickle.dumps(copy.deepcopy(policy).cpu())
        cls = ray.remote(num_cpus=num_cpus)(CollectorWorker)
        k = self.envs_per_worker
        self.workers: list[Any] = [
            cls.remote(
                [EnvFactory(f) for f in fns[w * k : (w + 1) * k]],
                blob,
                exploration_noise,
                check_finite,
            )
            for w in range(self.num_workers)
        ]
        self._closed = False
        try:
            spaces = self._get([w.spaces.remote() for w in self.workers])
        except RuntimeError:
            self.close()
            raise
        self.observation_space, self.action_space = spaces[0]
        self.collect_step = self.collect_episode = 0
        self.collect_time = 0.0
        self._was_reset = False

    # ------------------------------------------------------------------ helpers
    def _get(self, refs: list[Any]) -> list[Any]:
        ray = self._ray
        try:
            return list(ray.get(refs))
        except ray.exceptions.RayActorError as exc:
            raise RuntimeError(f"RayCollector: a collector worker died: {exc}") from None
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            raise RuntimeError(
                f"RayCollector: a collector worker raised {type(cause).__name__}: {cause}\n"
                f"worker traceback:\n{exc}"
            ) from None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("RayCollector is closed; create a new one")

    # ------------------------------------------------------------------ weights
    def sync_weights(self) -> None:
        """Push the learner policy's weights (and plain attributes, train mode) to every
        worker: one ``ray.put``, then one call per worker, ordered before its next collect."""
        self._check_open()
        if self.policy is None:
            return
        ref = self._ray.put(policy_payload(self.policy))
        for w in self.workers:
            w.set_weights.remote(ref)

    # ------------------------------------------------------------------ resets
    def reset(
        self,
        reset_buffer: bool = True,
        reset_stats: bool = True,
        seed: int | None = None,
        gym_reset_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Reset every worker's envs (global env ``i`` with ``seed + i``), and by default
        the buffer and the counters."""
        self._check_open()
        k = self.envs_per_worker
        self._get(
            [
                w.reset.remote(None if seed is None else seed + i * k, gym_reset_kwargs)
                for i, w in enumerate(self.workers)
            ]
        )
        self._was_reset = True
        if reset_buffer:
            self.reset_buffer()
        if reset_stats:
            self.reset_stat()

    def reset_env(
        self, seed: int | None = None, gym_reset_kwargs: dict[str, Any] | None = None
    ) -> None:
        """Reset every worker's envs; open episodes are dropped."""
        if seed is not None:
            self.reset(reset_buffer=False, reset_stats=False, seed=seed)
            return
        self._check_open()
        self._get([w.reset_env.remote(gym_reset_kwargs) for w in self.workers])
        self._was_reset = True

    def reset_buffer(self, keep_statistics: bool = False) -> None:
        """Empty the learner's buffer."""
        self.buffer.reset(keep_statistics=keep_statistics)

    def reset_stat(self) -> None:
        """Zero ``collect_step``, ``collect_episode`` and ``collect_time``."""
        self.collect_step = self.collect_episode = 0
        self.collect_time = 0.0

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
        """Collect ``n_step`` steps or ``n_episode`` episodes over all workers (see the
        module docstring), append them to the learner's buffer and return the stats."""
        self._check_open()
        if (n_step is None) == (n_episode is None) or not (n_step or n_episode):
            raise ValueError(
                f"exactly one of n_step and n_episode must be a positive number, got "
                f"n_step={n_step}, n_episode={n_episode}"
            )
        if (n_step is not None and n_step < 0) or (n_episode is not None and n_episode < 0):
            raise ValueError(f"n_step/n_episode must be positive, got {n_step}/{n_episode}")
        if render:
            raise ValueError("render: RayCollector cannot render (its envs are remote)")
        if not random and self.policy is None:
            raise ValueError("collect(random=False) needs a policy; this collector has None")
        if reset_before_collect or not self._was_reset:
            if not reset_before_collect:
                raise RuntimeError(
                    "the collector was never reset: call collector.reset() or "
                    "collect(..., reset_before_collect=True) first"
                )
            self.reset(reset_buffer=False, gym_reset_kwargs=gym_reset_kwargs)
        if n_step is not None and n_step % self.env_num != 0:
            warnings.warn(
                f"n_step={n_step} is not a multiple of the number of envs ({self.env_num}); "
                f"{-(-n_step // self.env_num) * self.env_num} steps will be collected",
                stacklevel=2,
            )
        start = time.perf_counter()
        if not random:
            self.sync_weights()
        k = self.envs_per_worker
        if n_step is not None:
            per_worker = -(-n_step // self.env_num) * k
            jobs: list[tuple[int, int | None, int | None]] = [
                (w, per_worker, None) for w in range(self.num_workers)
            ]
        else:
            assert n_episode is not None
            shares = _even_shares(n_episode, self.num_workers)
            jobs = [(w, None, s) for w, s in enumerate(shares) if s > 0]
        results = self._get(
            [self.workers[w].collect.remote(s, e, random, gym_reset_kwargs) for w, s, e in jobs]
        )
        returns, lens = self._append([w for w, _, _ in jobs], results)
        steps = sum(r[2] for r in results)
        elapsed = max(time.perf_counter() - start, 1e-9)
        self.collect_step += steps
        self.collect_episode += len(returns)
        self.collect_time += elapsed
        return CollectStats.from_episodes(np.asarray(returns), np.asarray(lens), steps, elapsed)

    def _append(
        self, workers: list[int], results: list[tuple[str, Any, int, float]]
    ) -> tuple[list[float], list[int]]:
        """Add the workers' steps to the buffer (worker ``w``'s env ``k`` to sub-buffer
        ``w * K + k``); return the finished episodes' returns and lengths."""
        k = self.envs_per_worker
        returns: list[float] = []
        lens: list[int] = []

        def add(data: dict[str, Any], ids: np.ndarray) -> None:
            _, ep_rew, ep_len, _ = self.buffer.add(data, buffer_ids=ids)
            done = np.flatnonzero(np.logical_or(data["terminated"], data["truncated"]))
            if len(done):
                returns.extend(np.asarray(ep_rew)[done].tolist())
                lens.extend(np.asarray(ep_len)[done].tolist())

        lockstep = (
            len(workers) == self.num_workers
            and all(r[0] == "stacked" for r in results)
            and len({len(r[1]["rew"]) for r in results}) == 1
        )
        if lockstep:  # every worker stepped all its envs T times: add M*K rows per step
            for w, r in zip(workers, results):
                _shift_env_id(r[1], w * k)
            data = _concat([r[1] for r in results], axis=1)
            for t in range(len(data["rew"])):
                add(tree_index(data, t), self._all_ids)
            return returns, lens
        for w, (kind, payload, _, _) in zip(workers, results):
            if kind == "stacked":
                ids = np.arange(k) + w * k
                _shift_env_id(payload, w * k)
                for t in range(len(payload["rew"])):
                    add(tree_index(payload, t), ids)
            else:
                for ids, step in payload:
                    _shift_env_id(step, w * k)
                    add(step, ids + w * k)
        return returns, lens

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The buffer and the counters (the remote envs cannot be saved: on load they are
        reset)."""
        return {
            "buffer": pickle.dumps(self.buffer),
            "counters": (self.collect_step, self.collect_episode, self.collect_time),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved; the workers' envs are reset."""
        self.buffer = pickle.loads(state["buffer"])
        self.collect_step, self.collect_episode, self.collect_time = state["counters"]
        self.reset_env()

    def close(self) -> None:
        """Close the workers' envs and stop the workers; safe to call twice."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        ray = self._ray
        if not ray.is_initialized():
            return
        with contextlib.suppress(Exception):
            ray.get([w.close.remote() for w in self.workers], timeout=5)
        for w in self.workers:
            with contextlib.suppress(Exception):
                ray.kill(w)
        self.workers = []

    def __enter__(self) -> RayCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"RayCollector(num_workers={self.num_workers}, "
            f"envs_per_worker={self.envs_per_worker}, buffer={type(self.buffer).__name__})"
        )
