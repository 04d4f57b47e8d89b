"""Differential tests: tdrl vector envs against Tianshou's on the same envs and actions.

Run in the Tianshou venv: ``/opt/tsenv/bin/python -m pytest tests/env/test_vs_tianshou.py``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

ts_env = pytest.importorskip("tianshou.env")

from tdrl.env import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv  # noqa: E402
from tdrl.env.testing import MoveToRightEnv  # noqa: E402


def _drive(venv, steps: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    venv.seed(seed)
    obs, info = venv.reset()
    out = [obs, [d.get("step") for d in info]]
    for _ in range(steps):
        ids = np.flatnonzero(rng.random(len(venv)) < 0.7)
        if not len(ids):
            continue
        obs, rew, term, trunc, info = venv.step(rng.integers(0, 2, size=len(ids)), ids)
        out += [obs, rew, term, trunc, [d["env_id"] for d in info]]
        done = ids[term | trunc]
        if len(done):
            obs, info = venv.reset(done)
            out += [obs, [d.get("step") for d in info]]  # Tianshou's reset infos lack env_id
    venv.close()
    return out


@pytest.mark.parametrize(
    "make",
    [
        DummyVectorEnv,
        lambda fns: SubprocVectorEnv(fns, context="fork"),
        lambda fns: ShmemVectorEnv(fns, context="fork"),
    ],
    ids=["dummy", "subproc", "shmem"],
)
@pytest.mark.parametrize("task", ["CartPole-v1", "move"])
def test_same_trajectories_as_tianshou(make, task: str) -> None:
    if task == "move":
        fns = [lambda i=i: MoveToRightEnv(2 + i, max_steps=6) for i in range(3)]
    else:
        fns = [lambda: gym.make(task) for _ in range(3)]
    ours = _drive(make(fns), 200, seed=3)
    theirs = _drive(ts_env.DummyVectorEnv(fns), 200, seed=3)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
