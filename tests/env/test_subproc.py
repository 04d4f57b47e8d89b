"""Subprocess vector envs: failures, cleanup, contexts, shared-memory fallbacks."""

from __future__ import annotations

import gc
import os
import signal
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tdrl.env import ShmemVectorEnv, SubprocVectorEnv
from tdrl.env.testing import FailingEnv, MoveToRightEnv


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); read its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pids: list[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("cls", [SubprocVectorEnv, ShmemVectorEnv])
def test_worker_that_raises(cls: type) -> None:
    venv = cls([lambda: MoveToRightEnv(9), lambda: FailingEnv(fail_at=2)], context="fork")
    venv.reset()
    venv.step([1, 1])
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"env 1 raised in its worker.*deliberate failure"):
        venv.step([1, 1])
    assert time.monotonic() - start < 5
    # the protocol stayed in sync: the healthy env still answers
    obs, *_ = venv.step([1], env_id=[0])
    assert obs.tolist() == [3]
    pids = venv.pids
    venv.close()
    assert _wait_gone(pids)


def test_worker_killed_sigkill() -> None:
    venv = ShmemVectorEnv([lambda: MoveToRightEnv(9) for _ in range(2)], context="fork")
    venv.reset()
    pids = venv.pids
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker of env 1 .* died .*exit code -9"):
        venv.step([1, 1])
    assert time.monotonic() - start < 5
    venv.close()
    assert _wait_gone(pids)


def test_worker_exits_async() -> None:
    fns = [lambda: MoveToRightEnv(1000, sleep=0.01), lambda: FailingEnv(fail_at=1, exit_code=3)]
    venv = SubprocVectorEnv(fns, wait_num=1, context="fork")
    venv.reset()
    with pytest.raises(RuntimeError, match=r"worker of env 1 .* died .*exit code 3"):
        for _ in range(100):
            ready = venv.ready_id
            venv.step([1] * len(ready) if ready else None, ready)
    venv.close()


def test_factory_that_raises() -> None:
    def bad() -> gym.Env:
        raise OSError("no such env")

    with pytest.raises(RuntimeError, match=r"env 1 raised.*no such env"):
        ShmemVectorEnv([lambda: MoveToRightEnv(2), bad], context="fork")


def test_close_on_gc_leaves_no_process_or_file() -> None:
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    venv = ShmemVectorEnv([lambda: MoveToRightEnv(3) for _ in range(2)], context="fork")
    venv.reset()
    pids = venv.pids
    del venv
    gc.collect()
    assert _wait_gone(pids)
    if os.path.isdir("/dev/shm"):
        assert not [f for f in set(os.listdir("/dev/shm")) - before if f.startswith("tdrl-venv")]


def test_spawn_context() -> None:
    venv = ShmemVectorEnv([lambda: MoveToRightEnv(2, dict_state=True)] * 2, context="spawn")
    obs, _ = venv.reset()
    obs, rew, term, _, _ = venv.step([1, 1])
    obs, rew, term, _, _ = venv.step([1, 1])
    assert obs["index"][:, 0].tolist() == [2, 2] and term.all() and rew.tolist() == [1.0, 1.0]
    venv.close()


class _TupleEnv(gym.Env):
    observation_space = spaces.Tuple((spaces.Discrete(3), spaces.Box(0, 1, (2,))))
    action_space = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(2)))

    def reset(self, *, seed=None, options=None):
        return (0, np.zeros(2, np.float32)), {}

    def step(self, action):
        return (int(action[0]), np.ones(2, np.float32)), 1.0, bool(action[1]), False, {}


def test_shmem_falls_back_to_pipes_for_tuple_spaces() -> None:
    venv = ShmemVectorEnv([_TupleEnv, _TupleEnv], context="fork")
    venv.reset()
    act = np.empty(2, dtype=object)
    act[0], act[1] = (1, 0), (2, 1)
    obs, rew, term, _, _ = venv.step(act)
    assert obs[0].tolist() == [1, 2] and obs[1].shape == (2, 2)
    assert rew.tolist() == [1.0, 1.0] and term.tolist() == [False, True]
    venv.close()


def test_shmem_bad_obs_shape_is_reported() -> None:
    class Bad(MoveToRightEnv):
        def reset(self, *, seed=None, options=None):
            return np.zeros(3, np.float32), {}

    venv = ShmemVectorEnv([lambda: Bad(3, array_state=True)], context="fork")
    with venv, pytest.raises(RuntimeError, match=r"observation 'obs': expected shape \(4,\)"):
        venv.reset()


def _rollout(venv, steps: int = 300) -> list:
    """Random actions; reset finished envs (two at a time with a seed now and then)."""
    rng = np.random.default_rng(1)
    venv.seed(5)
    obs, _ = venv.reset()
    out = [obs]
    for t in range(steps):
        obs, rew, term, trunc, info = venv.step(rng.integers(0, 2, size=len(venv)))
        out += [obs, rew, term, trunc, [d["env_id"] for d in info]]
        done = np.flatnonzero(term | trunc)
        if len(done):
            seed = int(t) if t % 3 == 0 else None
            obs, info = venv.reset(done, seed=seed)
            out += [done, obs, [d["env_id"] for d in info]]
    return out


@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize("share", [True, False])
def test_subproc_matches_dummy_trajectories(eager: bool, share: bool) -> None:
    from tdrl.env import DummyVectorEnv

    fns = [lambda: gym.make("CartPole-v1") for _ in range(3)]
    ref = _rollout(DummyVectorEnv(fns))
    venv = SubprocVectorEnv(fns, share_memory=share, context="fork", eager_reset=eager)
    got = _rollout(venv)
    venv.close()
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_eager_reset_dict_obs_partial() -> None:
    fns = [lambda i=i: MoveToRightEnv(1 + i, dict_state=True) for i in range(3)]
    venv = ShmemVectorEnv(fns, context="fork")
    venv.reset()
    obs, _, term, _, _ = venv.step([1, 1, 1])
    assert term.tolist() == [True, False, False] and obs["index"][:, 0].tolist() == [1, 1, 1]
    obs, info = venv.reset([1, 0])  # env 1 has no eager reset, env 0 has
    assert obs["index"][:, 0].tolist() == [0, 0] and [d["env_id"] for d in info] == [1, 0]
    venv.close()


_ORPHAN_SCRIPT = """
import os, signal, sys
from tdrl.env import ShmemVectorEnv
from tdrl.env.testing import MoveToRightEnv
venv = ShmemVectorEnv([lambda: MoveToRightEnv(3) for _ in range(2)], context="fork")
venv.reset()
print(" ".join(map(str, venv.pids)), flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_no_orphans_after_parent_exit_or_sigkill(how: str) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _ORPHAN_SCRIPT, how], capture_output=True, text=True, timeout=60
    )
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2, proc.stderr
    assert _wait_gone(pids)


def test_async_timeout_returns_ready_envs_only() -> None:
    fns = [lambda: MoveToRightEnv(9), lambda: MoveToRightEnv(9, sleep=0.5)]
    venv = ShmemVectorEnv(fns, timeout=0.05, context="fork")
    assert venv.is_async
    venv.reset()
    start = time.monotonic()
    obs, _, _, _, info = venv.step([1, 1])
    assert time.monotonic() - start < 0.45
    assert [d["env_id"] for d in info] == [0] and obs.tolist() == [1]
    assert venv.waiting_id == [1]
    obs, _, _, _, info = venv.step([1], env_id=[0])  # env 0 again, env 1 still pending
    assert 0 in [d["env_id"] for d in info]
    while venv.waiting_id:
        obs, _, _, _, info = venv.step(None)
        assert [d["env_id"] for d in info] == [1] and obs.tolist() == [1]
    venv.close()


def test_shmem_rejects_float_actions_for_discrete() -> None:
    venv = ShmemVectorEnv([lambda: MoveToRightEnv(3)] * 2, context="fork")
    venv.reset()
    with pytest.raises(TypeError, match=r"expected integer actions .* got dtype float64"):
        venv.step(np.array([0.7, 1.0]))
    obs, *_ = venv.step(np.array([1, 1]))  # still usable
    assert obs.tolist() == [1, 1]
    venv.close()
