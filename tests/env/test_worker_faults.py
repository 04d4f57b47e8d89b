"""Worker faults of the subprocess vector envs name the env: a worker killed *between* calls
(not only mid-call), and an eager reset that raises (raised at the next ``reset()``, as
``DummyVectorEnv`` raises it there, never swallowed and retried)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from tdrl.env import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv
from tdrl.env.testing import MoveToRightEnv

CLASSES = [SubprocVectorEnv, ShmemVectorEnv]


def _gone(pid: int, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.02)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("call", ["step", "reset", "seed", "get_env_attr"])
def test_worker_killed_between_calls_names_env_and_exit_code(cls: type, call: str) -> None:
    venv = cls([lambda: MoveToRightEnv(9) for _ in range(3)], context="fork")
    venv.reset()
    venv.step([1, 1, 1])
    os.kill(venv.pids[2], signal.SIGKILL)
    _gone(venv.pids[2])
    time.sleep(0.1)  # the worker is gone before the next call: its pipe is broken
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker of env 2 \(pid \d+\) died \(exit code -9\)"):
        if call == "step":
            venv.step([1, 1, 1])
        elif call == "reset":
            venv.reset()
        elif call == "seed":
            venv.seed(0)
        else:
            venv.get_env_attr("size")
    assert time.monotonic() - start < 5
    venv.close()


class FlakyResetEnv(MoveToRightEnv):
    """A :class:`MoveToRightEnv` whose ``fail_on``-th ``reset`` raises (once)."""

    def __init__(self, size: int = 2, fail_on: int = 2) -> None:
        super().__init__(size)
        self.resets = 0
        self.fail_on = fail_on

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self.resets += 1
        if self.resets == self.fail_on:
            raise ValueError("flaky reset")
        return super().reset(*args, **kwargs)


def _to_done(venv: Any) -> None:
    venv.reset()
    for _ in range(2):  # MoveToRightEnv(2): done after two steps right
        *_, term, trunc, _ = venv.step([1, 1])
    assert (term | trunc).all()


@pytest.mark.parametrize("cls", [DummyVectorEnv, *CLASSES])
def test_a_reset_that_raises_once_is_raised_by_every_vector_env(cls: type) -> None:
    kwargs = {} if cls is DummyVectorEnv else {"context": "fork"}
    venv = cls([lambda: MoveToRightEnv(2), lambda: FlakyResetEnv(2)], **kwargs)
    _to_done(venv)
    with pytest.raises((ValueError, RuntimeError), match="flaky reset") as info:
        venv.reset()
    if cls is not DummyVectorEnv:
        assert str(info.value).startswith(f"{cls.__name__}: env 1 raised in its worker")
    obs, _ = venv.reset()  # raised once; the env resets again when asked
    assert obs.tolist() == [0, 0]
    venv.close()


@pytest.mark.parametrize("cls", CLASSES)
def test_eager_reset_error_is_raised_for_its_env_only(cls: type) -> None:
    venv = cls([lambda: MoveToRightEnv(2), lambda: FlakyResetEnv(2)], context="fork")
    _to_done(venv)
    obs, _ = venv.reset(env_id=[0])  # env 0's eager reset went fine
    assert obs.tolist() == [0]
    with pytest.raises(RuntimeError, match=r"env 1 raised in its worker: ValueError: flaky"):
        venv.step([1], env_id=[1])  # stepped on without a reset: raised as well
    venv.close()
