"""The env worker process of the subprocess vector envs, and their shared-memory layout.

Kept free of torch and of the rest of tdrl so that a spawned worker starts quickly.

Shared memory is one file in ``/dev/shm`` (or the temp dir) that the main process creates once
the workers have reported their spaces, every worker maps, and the main process unlinks as soon
as every worker has mapped it: nothing is left behind even if a process is killed later.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import traceback
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["RemoteError", "ShmLayout", "worker_main"]

_SIMPLE = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
Leaves = list[tuple[tuple[str, ...], tuple[int, ...], str]]


class RemoteError:
    """An exception raised in a worker, sent back to the main process as text."""

    def __init__(self, env_id: int, exc: BaseException) -> None:
        self.env_id = env_id
        self.summary = f"{type(exc).__name__}: {exc}"
        self.text = "".join(traceback.format_exception(exc))


class EnvFactory:
    """Pickles an env factory with cloudpickle (lambdas and closures survive ``spawn``)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __getstate__(self) -> bytes:
        return cloudpickle.dumps(self.fn)

    def __setstate__(self, state: bytes) -> None:
        self.fn = cloudpickle.loads(state)


def space_leaves(space: gym.Space, prefix: tuple[str, ...] = ()) -> Leaves | None:
    """Flatten a (Dict of) Box/Discrete/MultiDiscrete/MultiBinary space to
    ``[(path, shape, dtype)]``; ``None`` when some part cannot live in shared memory."""
    if isinstance(space, spaces.Dict):
        out: Leaves = []
        for key, sub in space.spaces.items():
            leaves = space_leaves(sub, (*prefix, key))
            if leaves is None:
                return None
            out.extend(leaves)
        return out
    if isinstance(space, _SIMPLE) and space.dtype is not None:
        return [(prefix, tuple(space.shape or ()), np.dtype(space.dtype).str)]
    return None


class ShmLayout:
    """Named arrays with a leading env dim packed into one shared file.

    :param arrays: ``{name: (shape_per_env, dtype_str)}``.
    :param env_num: the leading dim.
    :param path: an existing file to map; ``None`` creates one.
    """

    def __init__(
        self, arrays: dict[str, tuple[tuple[int, ...], str]], env_num: int, path: str | None = None
    ) -> None:
        self.arrays, self.env_num = arrays, env_num
        offsets, size = {}, 0
        for name, (shape, dtype) in arrays.items():
            offsets[name] = size
            nbytes = env_num * int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            size += (nbytes + 63) // 64 * 64
        self.size = max(size, 64)
        if path is None:
            folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
            fd, path = tempfile.mkstemp(prefix="tdrl-venv-", dir=folder)
            os.ftruncate(fd, self.size)
        else:
            fd = os.open(path, os.O_RDWR)
        try:
            self.mem = mmap.mmap(fd, self.size)
        finally:
            os.close(fd)
        self.path = path
        self.views = {
            name: np.ndarray((env_num, *shape), dtype=dtype, buffer=self.mem, offset=offsets[name])
            for name, (shape, dtype) in arrays.items()
        }

    def unlink(self) -> None:
        """Remove the file (mappings stay valid)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _writer(leaves: Leaves, views: dict[str, np.ndarray], i: int, prefix: str) -> Any:
    rows = [(path, shape, views[prefix + "/".join(path)][i, ...]) for path, shape, _ in leaves]

    def write(obs: Any) -> None:
        for path, shape, row in rows:
            value = obs
            for key in path:
                value = value[key]
            if np.shape(value) != shape:
                name = "/".join(("obs", *path))
                raise ValueError(
                    f"observation {name!r}: expected shape {shape} from the observation space, "
                    f"got {np.shape(value)}"
                )
            row[...] = value

    return write


def _reset_early(env: gym.Env, write_robs: Any, env_id: int) -> tuple[Any, Any] | RemoteError:
    """Reset ``env`` right after a done step (``eager_reset``): ``(obs or None when written
    to the ``robs/`` arrays, info)``, or the :class:`RemoteError` of a failed reset, which
    the main process raises at the env's next ``reset()`` (as an in-process env would)."""
    try:  # reset now, while the main process is busy; see ``eager_reset``
        robs, rinfo = env.reset()
        if write_robs is not None:
            write_robs(robs)
            robs = None
        return (robs, rinfo)
    except Exception as exc:
        return RemoteError(env_id, exc)


def _seed_action_space(env: gym.Env, seed: int | None) -> None:
    """Seed ``env``'s action space, if it defines one."""
    space = getattr(env, "action_space", None)
    if space is not None:
        space.seed(seed)


def _serve_other(env: gym.Env, cmd: str, data: Any, conn: Connection) -> bool:
    """Serve a command other than step, reset and attach; ``True`` after ``close``."""
    if cmd == "seed":
        _seed_action_space(env, data)
        env.reset(seed=data)
        conn.send([data])
    elif cmd == "getattr":
        conn.send(env.get_wrapper_attr(data))
    elif cmd == "setattr":
        setattr(env.unwrapped, data[0], data[1])
        conn.send(None)
    elif cmd == "render":
        conn.send(env.render(**data))
    elif cmd == "close":
        env.close()
        conn.send(None)
        return True
    else:
        raise ValueError(f"unknown worker command {cmd!r}")
    return False


def worker_main(
    env_id: int,
    conn: Connection,
    factory: EnvFactory,
    others: list[Connection],
    eager_reset: bool = False,
) -> None:
    """Run one env: build it, report its spaces, then serve commands until ``close``/EOF.

    With ``eager_reset`` the env is reset right after a done step and the reset result rides
    along with the step reply (its observation in the ``robs/`` shared arrays when there are
    any), so the main process's ``reset`` needs no round trip."""
    for other in others:  # with fork: drop the inherited ends of the other workers' pipes
        other.close()
    try:
        env = factory.fn()
        # an env may define no spaces (None): its observations then travel over the pipe
        conn.send((getattr(env, "observation_space", None), getattr(env, "action_space", None)))
    except Exception as exc:
        conn.send(RemoteError(env_id, exc))
        return
    write_obs, write_robs, act_row, scalars = None, None, None, None
    act_scalar = False
    try:
        while True:
            try:
                cmd, data = conn.recv()
            except (EOFError, OSError):
                break
            try:
                if cmd == "s":
                    if act_row is not None:
                        data = act_row[()] if act_scalar else act_row.copy()
                    obs, rew, term, trunc, info = env.step(data)
                    pre = (
                        _reset_early(env, write_robs, env_id)
                        if eager_reset and (term or trunc)
                        else None
                    )
                    if scalars is None:
                        conn.send((obs, rew, term, trunc, info, pre))
                        continue
                    scalars[0][env_id], scalars[1][env_id], scalars[2][env_id] = rew, term, trunc
                    if write_obs is None:
                        conn.send((obs, info, pre))
                    else:
                        write_obs(obs)
                        conn.send((info, pre))
                elif cmd == "r":
                    seed, options = data
                    if seed is not None:
                        _seed_action_space(env, seed)
                    obs, info = env.reset(seed=seed, options=options)
                    if write_obs is None:
                        conn.send((obs, info))
                    else:
                        write_obs(obs)
                        conn.send(info)
                elif cmd == "attach":
                    path, arrays, obs_leaves, act_shm, env_num = data
                    layout = ShmLayout(arrays, env_num, path)
                    views = layout.views
                    scalars = (views["rew"], views["term"], views["trunc"])
                    if obs_leaves is not None:
                        write_obs = _writer(obs_leaves, views, env_id, "obs/")
                        if eager_reset:
                            write_robs = _writer(obs_leaves, views, env_id, "robs/")
                    if act_shm:
                        act_row = views["act"][env_id, ...]
                        act_scalar = act_row.ndim == 0
                    conn.send(None)
                elif _serve_other(env, cmd, data, conn):
                    break
            except Exception as exc:
                conn.send(RemoteError(env_id, exc))
    except KeyboardInterrupt:
        pass
    finally:
        conn.close()
