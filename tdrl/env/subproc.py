"""``SubprocVectorEnv`` and ``ShmemVectorEnv``: one worker process per env.

With shared memory (``ShmemVectorEnv``) actions, observations, rewards and the two flags live
in one shared file mapped by every process; a step sends a tiny command down each pipe and
gets back only the env's info dict. Observation or action spaces that do not fit (Tuple, Text,
per-env different spaces) travel over the pipe instead.

A worker that raises surfaces as a ``RuntimeError`` naming the env id and carrying its
traceback; a worker that dies surfaces as a ``RuntimeError`` naming the env id and its exit
code, whether it died during a call or between calls (the next command to it fails). An
eager reset that raises is raised at that env's next ``reset()``, as ``DummyVectorEnv`` raises
it there. ``close()`` (also run on garbage
collection and at interpreter exit) stops and reaps every worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from typing import Any

import gymnasium as gym
import numpy as np

from tdrl.env.base import BaseVectorEnv, EnvWorker, stack_obs
from tdrl.env.worker import EnvFactory, RemoteError, ShmLayout, space_leaves, worker_main

__all__ = ["ShmemVectorEnv", "SubprocEnvWorker", "SubprocVectorEnv", "default_context"]

_STEP = pickle.dumps(("s", None), protocol=pickle.HIGHEST_PROTOCOL)


def default_context() -> str:
    """``"fork"`` where the platform has it (much faster to start), else ``"spawn"``.

    Chosen explicitly because ``import torchrl`` switches the global default to spawn.
    """
    return "fork" if "fork" in mp.get_all_start_methods() else "spawn"


def _shutdown(procs: list, conns: list[Connection], layout: list) -> None:
    for conn in conns:
        with contextlib.suppress(Exception):
            conn.send(("close", None))
    deadline = time.monotonic() + 1.0
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    for conn in conns:
        conn.close()
    for lay in layout:
        lay.unlink()
    layout.clear()


class SubprocEnvWorker(EnvWorker):
    """One env of a :class:`SubprocVectorEnv`; :attr:`process` is its worker process."""

    venv: SubprocVectorEnv

    @property
    def process(self) -> Any:
        """The ``multiprocessing.Process`` the env runs in."""
        return self.venv._procs[self.env_id]


class SubprocVectorEnv(BaseVectorEnv):
    """Vector env with one worker process per env.

    :param env_fns: one factory per env (lambdas are fine: they are sent with cloudpickle).
    :param wait_num: async mode: ``step`` returns once this many envs are ready.
    :param timeout: async mode: ``step`` returns after this many seconds (with at least one
        ready env).
    :param share_memory: exchange actions, observations, rewards and flags through shared
        memory (see :class:`ShmemVectorEnv`).
    :param context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or a multiprocessing context;
        ``None`` picks :func:`default_context`.
    :param eager_reset: a worker resets its env right after a done step, in parallel with the
        main process, and ``reset(env_id)`` (without seed or options) then returns that result
        with no round trip. The sequence of env calls is unchanged for the usual
        step-until-done-then-reset loop; what differs: between the done step and ``reset`` the
        env already is in its new episode (``get_env_attr`` shows it, and stepping it without
        a reset continues the new episode), and a ``reset`` with a seed or options resets once
        more. ``False`` resets only when asked. An eager reset that raises is not retried:
        the env's next ``reset()`` (or step) raises it, naming the env id.

    Envs that define no ``observation_space`` / ``action_space`` are accepted: their entry
    in :attr:`observation_space` / :attr:`action_space` is ``None`` and their observations
    travel over the pipe. ``workers[i].process`` is env ``i``'s worker process.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        wait_num: int | None = None,
        timeout: float | None = None,
        share_memory: bool = False,
        context: str | BaseContext | None = None,
        eager_reset: bool = True,
    ) -> None:
        super().__init__(len(env_fns), wait_num, timeout)
        self.eager_reset = eager_reset
        self._pre: dict[int, tuple[Any, dict] | RemoteError] = {}
        ctx = (
            context
            if isinstance(context, BaseContext)
            else mp.get_context(context or default_context())
        )
        forking = ctx.get_start_method() == "fork"
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._layout: list[ShmLayout] = []
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns, self._layout)
        for i, fn in enumerate(env_fns):
            parent, child = ctx.Pipe()
            others = [*self._conns, parent] if forking else []
            proc = ctx.Process(  # type: ignore[attr-defined]
                target=worker_main,
                args=(i, child, EnvFactory(fn), others, eager_reset),
                daemon=True,
                name=f"tdrl-env-{i}",
            )
            proc.start()
            child.close()
            self._procs.append(proc)
            self._conns.append(parent)
        try:
            spaces_ = [self._recv(i) for i in range(self.env_num)]
        except RuntimeError as exc:
            self.close()
            if forking or "died" not in str(exc):
                raise
            raise RuntimeError(
                f"{exc}; with the {ctx.get_start_method()!r} start method each worker re-imports "
                "the main module: guard the script with `if __name__ == '__main__':` and make "
                "the env factories importable (or pass context='fork')"
            ) from None
        self.observation_space = [s[0] for s in spaces_]
        self.action_space = [s[1] for s in spaces_]
        self._obs_leaves: Any = None
        self._act_shm = False
        self._shm: dict[str, np.ndarray] | None = None
        if share_memory:
            self._setup_shm()

    def _setup_shm(self) -> None:
        # shared arrays need one (shape, dtype) per leaf for all envs; bounds may differ
        obs_all = [space_leaves(sp) for sp in self.observation_space]
        act_all = [space_leaves(sp) for sp in self.action_space]
        obs_leaves = obs_all[0] if all(x == obs_all[0] for x in obs_all) else None
        act_leaves = act_all[0] if all(x == act_all[0] for x in act_all) else None
        act_shm = act_leaves is not None and len(act_leaves) == 1 and act_leaves[0][0] == ()
        arrays: dict[str, tuple[tuple[int, ...], str]] = {
            "rew": ((), "<f8"),
            "term": ((), "|b1"),
            "trunc": ((), "|b1"),
        }
        for path, shape, dtype in obs_leaves or []:
            arrays["obs/" + "/".join(path)] = (shape, dtype)
            if self.eager_reset:
                arrays["robs/" + "/".join(path)] = (shape, dtype)
        if act_shm:
            assert act_leaves is not None
            arrays["act"] = act_leaves[0][1:]
        layout = ShmLayout(arrays, self.env_num)
        self._layout.append(layout)
        try:
            for i in range(self.env_num):
                self._send(i, ("attach", (layout.path, arrays, obs_leaves, act_shm, self.env_num)))
            for i in range(self.env_num):
                self._recv(i)
        except Exception:
            self.close()
            raise
        finally:
            layout.unlink()
        self._shm = layout.views
        self._obs_leaves = obs_leaves
        self._act_shm = act_shm

    # ------------------------------------------------------------------ pipes
    def _dead(self, i: int) -> RuntimeError:
        proc = self._procs[i]
        proc.join(2.0)
        return RuntimeError(
            f"{type(self).__name__}: the worker of env {i} (pid {proc.pid}) died "
            f"(exit code {proc.exitcode})"
        )

    def _send(self, i: int, msg: Any) -> None:
        """Send a command to worker ``i``; a dead worker is a ``RuntimeError`` naming it."""
        try:
            if isinstance(msg, bytes):
                self._conns[i].send_bytes(msg)
            else:
                self._conns[i].send(msg)
        except (BrokenPipeError, ConnectionError, EOFError, OSError):
            raise self._dead(i) from None

    def _raise_failed_reset(self, ids: Sequence[int]) -> None:
        """Raise the error of a failed eager reset of any of ``ids`` (it is then forgotten)."""
        for i in ids:
            pre = self._pre.get(i)
            if isinstance(pre, RemoteError):
                del self._pre[i]
                raise RuntimeError(
                    f"{type(self).__name__}: env {i} raised in its worker: {pre.summary} "
                    f"(resetting after its episode ended)\nworker traceback:\n{pre.text}"
                )

    def _recv(self, i: int) -> Any:
        try:
            msg = self._conns[i].recv()
        except (EOFError, OSError):
            raise self._dead(i) from None
        if isinstance(msg, RemoteError):
            raise RuntimeError(
                f"{type(self).__name__}: env {msg.env_id} raised in its worker: {msg.summary}\n"
                f"worker traceback:\n{msg.text}"
            )
        return msg

    def _recv_all(self, ids: Sequence[int]) -> list[Any]:
        """Receive one reply per id; drain them all before raising the first error."""
        out, error = [], None
        for i in ids:
            try:
                out.append(self._recv(i))
            except RuntimeError as exc:
                error = error or exc
                out.append(None)
        if error is not None:
            raise error
        return out

    def _obs_at(self, ids: np.ndarray, pre: np.ndarray | None = None) -> Any:
        """Gather the shared observations of ``ids``; rows where ``pre`` is set come from the
        eager-reset slots."""
        assert self._shm is not None and self._obs_leaves is not None
        shm = self._shm

        def leaf(path: tuple[str, ...]) -> np.ndarray:
            name = "/".join(path)
            out = shm["obs/" + name][ids]
            if pre is not None:
                out[pre] = shm["robs/" + name][ids[pre]]
            return out

        if len(self._obs_leaves) == 1 and self._obs_leaves[0][0] == ():
            return leaf(())
        out: dict[str, Any] = {}
        for path, _, _ in self._obs_leaves:
            node = out
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = leaf(path)
        return out

    # --------------------------------------------------------------- contract
    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        id_list = ids.tolist()
        self._raise_failed_reset(id_list)
        n = len(id_list)
        infos: list[Any] = [None] * n
        obs_list: list[Any] = [None] * n
        pre_mask = np.zeros(n, dtype=bool)
        remote: list[int] = []
        for j, (i, s) in enumerate(zip(id_list, seeds)):
            pre = self._pre.pop(i, None)
            if isinstance(pre, tuple) and s is None and options is None:
                obs_list[j], infos[j] = pre
                pre_mask[j] = True
                continue
            self._send(i, ("r", (s, options)))
            remote.append(j)
            space = self.action_space[i]
            if s is not None and space is not None:  # the main process's copy (for sampling)
                space.seed(s)
        replies = self._recv_all([id_list[j] for j in remote])
        if self._obs_leaves is not None:
            for j, info in zip(remote, replies):
                infos[j] = info
            return self._obs_at(ids, pre_mask if pre_mask.any() else None), infos
        for j, (obs, info) in zip(remote, replies):
            obs_list[j], infos[j] = obs, info
        return stack_obs(obs_list), infos

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        id_list = ids.tolist()
        self._raise_failed_reset(id_list)
        buf = self._shm["act"] if self._shm is not None and self._act_shm else None
        if buf is not None and action.dtype.kind == "f" and buf.dtype.kind in "iub":
            raise TypeError(
                f"action: expected integer actions for the {self.action_space[0]} action "
                f"space, got dtype {action.dtype}"
            )
        if self._pre:  # stepped without a reset: the eager reset is what it continues from
            for i in id_list:
                self._pre.pop(i, None)
        if buf is not None:
            buf[ids] = action
            for i in id_list:
                self._send(i, _STEP)
        else:
            for i, a in zip(id_list, action):
                self._send(i, ("s", a))

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if wait_num < len(pending) or timeout is not None:
            pending = self._wait_ready(pending, wait_num, timeout)
        id_list = pending.tolist()
        replies = self._recv_all(id_list)
        shm = self._shm
        if shm is None:
            obs, rew_, term_, trunc_, infos, pres = zip(*replies)
            obs = stack_obs(obs)
            rew = np.array(rew_, dtype=np.float64)
            term = np.array(term_, dtype=bool)
            trunc = np.array(trunc_, dtype=bool)
        else:
            rew, term, trunc = shm["rew"][pending], shm["term"][pending], shm["trunc"][pending]
            if self._obs_leaves is None:
                obs_list, infos, pres = zip(*replies)
                obs = stack_obs(obs_list)
            else:
                infos, pres = zip(*replies)
                obs = self._obs_at(pending)
        if self.eager_reset:
            for i, pre in zip(id_list, pres):
                if pre is not None:
                    self._pre[i] = pre
        return pending, obs, rew, term, trunc, list(infos)

    def _wait_ready(self, pending: np.ndarray, wait_num: int, timeout: float | None) -> np.ndarray:
        conn_ids = {self._conns[i]: i for i in pending.tolist()}
        remaining = list(conn_ids)
        ready: list[int] = []
        start = time.monotonic()
        while remaining and len(ready) < wait_num:
            left = None if timeout is None else timeout - (time.monotonic() - start)
            if left is not None and left <= 0:
                if ready:
                    break
                left = None  # always return at least one env
            new = wait(remaining, left)
            ready.extend(conn_ids[c] for c in new)  # type: ignore[index]
            remaining = [c for c in remaining if c not in new]
        return np.array(sorted(ready), dtype=np.int64)

    def _seed_envs(self, seeds: list) -> list[Any]:
        self._pre.clear()
        for i, (space, s) in enumerate(zip(self.action_space, seeds)):
            self._send(i, ("seed", s))
            if space is not None:
                space.seed(s)
        return self._recv_all(range(self.env_num))

    def _get_attr(self, key: str, i: int) -> Any:
        self._send(i, ("getattr", key))
        return self._recv(i)

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        self._send(i, ("setattr", (key, value)))
        self._recv(i)

    def render(self, **kwargs: Any) -> list[Any]:
        """Render every env (in its worker) and return the frames."""
        self._check_open()
        self._check_ready(self._all_ids)
        for i in range(self.env_num):
            self._send(i, ("render", kwargs))
        return self._recv_all(range(self.env_num))

    @property
    def workers(self) -> list[SubprocEnvWorker]:  # type: ignore[override]
        """One :class:`SubprocEnvWorker` per env (``workers[i].process`` runs env ``i``)."""
        return [SubprocEnvWorker(self, i) for i in range(self.env_num)]

    @property
    def pids(self) -> list[int | None]:
        """Process ids of the workers."""
        return [p.pid for p in self._procs]

    def _close(self) -> None:
        self._shm = None
        self._finalizer()


class ShmemVectorEnv(SubprocVectorEnv):
    """:class:`SubprocVectorEnv` with shared memory for actions, observations, rewards and
    flags (only commands and info dicts go through the pipes).

    >>> from tdrl.env.testing import MoveToRightEnv
    >>> venv = ShmemVectorEnv([lambda: MoveToRightEnv(3) for _ in range(2)], context="fork")
    >>> venv.reset()[0].tolist()
    [0, 0]
    >>> obs, rew, term, trunc, info = venv.step([1, 0])
    >>> obs.tolist(), [d["env_id"] for d in info]
    ([1, 0], [0, 1])
    >>> venv.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        wait_num: int | None = None,
        timeout: float | None = None,
        context: str | BaseContext | None = None,
        eager_reset: bool = True,
    ) -> None:
        super().__init__(
            env_fns,
            wait_num,
            timeout,
            share_memory=True,
            context=context,
            eager_reset=eager_reset,
        )
