"""Vector-env stepping throughput: tdrl against Tianshou and gymnasium, same envs, same actions.

* CartPole-v1 x8: ``DummyVectorEnv`` vs Tianshou ``DummyVectorEnv`` vs gymnasium
  ``SyncVectorEnv`` (SAME_STEP autoreset).
* Hopper-v5 x8: ``ShmemVectorEnv`` vs Tianshou ``ShmemVectorEnv`` vs gymnasium
  ``AsyncVectorEnv`` (shared memory, SAME_STEP autoreset).

Each timed call is one vector step of all 8 envs plus the resets of the envs that finished
(gymnasium resets inside ``step``). The overhead column subtracts the cost of stepping the 8
raw envs in a plain loop.

    python -m benchmarks env
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.timing import best_of, record, row
from tdrl.env import DummyVectorEnv, ShmemVectorEnv

N = 8
CTX = "fork"


def _raw_loop(task: str) -> Callable[[], None]:
    envs = [gym.make(task) for _ in range(N)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
        e.action_space.seed(i)
    acts = [e.action_space.sample() for e in envs]

    def step() -> None:
        for e, a in zip(envs, acts):
            _, _, term, trunc, _ = e.step(a)
            if term or trunc:
                e.reset()

    return step


def _contract_loop(venv: Any) -> Callable[[], None]:
    """Step all envs; reset the finished ones with ``reset(env_id=...)``."""
    venv.seed(0)
    venv.reset()
    rng = np.random.default_rng(0)
    space = venv.action_space[0]
    acts = np.stack([space.sample() for _ in range(N)])
    if isinstance(space, gym.spaces.Discrete):
        acts = rng.integers(0, space.n, size=N)

    def step() -> None:
        _, _, term, trunc, _ = venv.step(acts)
        done = term | trunc
        if done.any():
            venv.reset(np.flatnonzero(done))

    return step


def _gym_loop(venv: gym.vector.VectorEnv) -> Callable[[], None]:
    venv.reset(seed=0)
    acts = venv.action_space.sample()

    def step() -> None:
        venv.step(acts)

    return step


def _interleaved(fns: dict[str, Callable[[], None]], number: int, rounds: int = 15) -> dict:
    """Best seconds per call of each function, timed in alternating rounds (fair under load)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], best_of(fn, number, repeat=1))
    return best


def _bench(task: str, envs: dict[str, Any], number: int, in_process: bool) -> None:
    fns = {"raw": _raw_loop(task)} if in_process else {}
    for name, env in envs.items():
        if env is not None:
            fns[name] = _gym_loop(env) if name == "gymnasium" else _contract_loop(env)
    t = _interleaved(fns, number)
    label = f"{task.split('-')[0]} x{N} step"
    if in_process:
        record(f"{task} raw loop", kind="raw_step", raw_s=t["raw"])
        print(f"{task}: the {N} raw envs in a plain loop take {t['raw'] * 1e6:.1f} us per step")
    for peer in ("tianshou", "gymnasium"):
        if peer not in t:
            continue
        print(row(f"{label}, vs {peer}", t["tdrl"], t[peer], labels=("tdrl", peer)))
        if in_process:
            over = (t["tdrl"] - t["raw"], t[peer] - t["raw"])
            print(row(f"{label} overhead, vs {peer}", *over, labels=("tdrl", peer)))
    for env in envs.values():
        if env is not None:
            env.close()


def main() -> None:
    """Print the CartPole (in-process) and Hopper (shared-memory subprocess) tables."""
    try:
        import tianshou.env as ts
    except ImportError:
        ts = None
        print("tianshou not importable: only tdrl and gymnasium are timed")
    mode = gym.vector.AutoresetMode.SAME_STEP

    fns = [lambda: gym.make("CartPole-v1") for _ in range(N)]
    cartpole = {
        "tdrl": DummyVectorEnv(fns),
        "tianshou": ts.DummyVectorEnv(fns) if ts else None,
        "gymnasium": gym.vector.SyncVectorEnv(fns, autoreset_mode=mode),
    }
    _bench("CartPole-v1", cartpole, number=500, in_process=True)
    if os.environ.get("TDRL_BENCH_SKIP_MUJOCO"):
        return
    hop = [lambda: gym.make("Hopper-v5") for _ in range(N)]
    hopper = {
        "tdrl": ShmemVectorEnv(hop, context=CTX),
        "tianshou": ts.SubprocVectorEnv(hop, share_memory=True, context=CTX) if ts else None,
        "gymnasium": gym.vector.AsyncVectorEnv(
            hop, shared_memory=True, context=CTX, autoreset_mode=mode
        ),
    }
    _bench("Hopper-v5", hopper, number=100, in_process=False)


if __name__ == "__main__":
    main()
