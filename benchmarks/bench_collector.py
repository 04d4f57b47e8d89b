"""Collector throughput: tdrl vs Tianshou vs raw gymnasium, same envs, same step budget.

* CartPole-v1 x 8, in-process: a raw gymnasium ``SyncVectorEnv`` loop with random actions
  (no storage at all); tdrl's ``Collector(DummyVectorEnv)`` into a ``VectorReplayBuffer``
  with ``random=True`` (the collector's own sampler) and with a cheap policy function
  (random torch actions: :func:`random_torch_policy`); Tianshou's ``Collector`` with
  ``random=True``. All four run in alternating rounds (raw, tdrl, tdrl, Tianshou, raw,
  ...); the rows give the medians.
* The same with a small MLP policy (64 hidden) on all sides, against a raw loop that calls
  the same MLP on the same observations; then tdrl's time per vector step split into the
  policy call, the env step, the buffer add and the collector's own bookkeeping.
* The cost of tdrl's NaN/inf check at the env boundary: ``Collector(check_finite=True)``
  (the default) against ``check_finite=False``, the two measured in alternation, and the
  check itself timed bare on one step's arrays (the difference of the two rates is mostly
  the machine's noise).

Goals (issue 28): tdrl's collector reaches >= 70% of the raw loop's steps/s with the cheap
policy function and with the same MLP; with ``random=True`` >= 75% (issue 17).

    python -m benchmarks collector
"""

from __future__ import annotations

import os
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from benchmarks.timing import record
from tdrl.data.batch import Batch  # bound once: the policies below build one per call

N_ENVS = 8
N_STEPS = 4000  # per round: 500 vector steps
ROUNDS = 15
GOAL_RANDOM = 0.75
GOAL_POLICY = 0.70

Run = tuple[Callable[[], int], Callable[[], None]]
"""A benchmark contender: ``(run, close)``; ``run()`` collects and returns its steps."""


def _steps_per_s(fn: Callable[[], int], repeat: int = 3) -> float:
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        steps = fn()
        best = max(best, steps / (time.perf_counter() - start))
    return best


def alternating_steps_per_s(runs: dict[str, Run], rounds: int = ROUNDS) -> dict[str, float]:
    """Median steps/s of every contender over ``rounds`` rounds; each round runs every
    contender once, in order (a slow phase of the shared machine hits all alike)."""
    for run, _ in runs.values():  # warm-up
        run()
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (run, _) in runs.items():
            start = time.perf_counter()
            steps = run()
            rates[name].append(steps / (time.perf_counter() - start))
    for _, close in runs.values():
        close()
    return {name: statistics.median(r) for name, r in rates.items()}


def raw_loop(task: str, n_steps: int, net: torch.nn.Module | None = None) -> Run:
    """A bare loop over gymnasium's ``SyncVectorEnv``: random actions, or (with ``net``)
    the same MLP the collectors call, on the same observations."""
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make(task) for _ in range(N_ENVS)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    obs, _ = envs.reset(seed=0)
    envs.action_space.seed(0)

    def run() -> int:
        nonlocal obs
        for _ in range(n_steps // N_ENVS):
            if net is None:
                act = envs.action_space.sample()
            else:
                with torch.inference_mode():
                    act = net(torch.as_tensor(obs, dtype=torch.float32)).argmax(-1).numpy()
            obs = envs.step(act)[0]
        return n_steps // N_ENVS * N_ENVS

    return run, envs.close


class _Timer:
    """Wraps a callable and sums the seconds spent in it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def overhead_split(task: str, n_steps: int) -> dict[str, float]:
    """tdrl's collector with the MLP policy, its time per vector step (us) split into the
    policy call, the env step, the buffer add and the rest (bookkeeping: batching,
    episode counters, the NaN check, resets)."""
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(N_ENVS)])
    pol = _TdrlMLP(4, 2)
    c = Collector(pol, envs, VectorReplayBuffer(100_000, N_ENVS))
    c.reset(seed=0)
    c.collect(n_step=n_steps)  # warm
    timers = {
        "policy": _Timer(pol.forward),
        "env": _Timer(envs._step_ids),  # what the collector calls for a DummyVectorEnv
        "buffer": _Timer(c.buffer.add),
    }
    pol.forward = timers["policy"]  # type: ignore[method-assign]
    envs._step_ids = timers["env"]  # type: ignore[method-assign]
    c.buffer.add = timers["buffer"]  # type: ignore[method-assign]
    start = time.perf_counter()
    steps = c.collect(n_step=n_steps).n_collected_steps
    total = time.perf_counter() - start
    envs.close()
    vsteps = steps / N_ENVS
    out = {k: t.seconds / vsteps * 1e6 for k, t in timers.items()}
    out["bookkeeping"] = total / vsteps * 1e6 - sum(out.values())
    out["total"] = total / vsteps * 1e6
    return out


class _TdrlMLP(torch.nn.Module):
    def __init__(self, obs_dim: int, n_act: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, 64), torch.nn.Tanh(), torch.nn.Linear(64, n_act)
        )

    def forward(self, batch, state=None):  # type: ignore[no-untyped-def]
        logits = self.net(batch["obs"].float())
        n = logits.shape[0]
        return Batch({"act": logits.argmax(-1)}, batch_size=[n])


def random_torch_policy(batch: Any, state: Any = None) -> Any:
    """The cheap policy function of the goal row: uniform CartPole actions drawn with
    torch, returned as a ``Batch`` (what a user's own random policy looks like)."""
    n = len(batch)
    return Batch({"act": torch.randint(0, 2, (n,))}, batch_size=[n])


def tdrl_collect(
    task: str, n_steps: int, policy: Any, random: bool = False, check_finite: bool = True
) -> Run:
    """tdrl's ``Collector(DummyVectorEnv)`` into a ``VectorReplayBuffer(100_000, 8)``."""
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(N_ENVS)])
    c = Collector(policy, envs, VectorReplayBuffer(100_000, N_ENVS), check_finite=check_finite)
    c.reset(seed=0)

    def run() -> int:
        return c.collect(n_step=n_steps, random=random).n_collected_steps

    return run, envs.close


def _tdrl_collect_fn(
    task: str, n_steps: int, policy: bool, check_finite: bool = True
) -> tuple[Callable[[], int], Callable[[], None]]:
    pol = _TdrlMLP(4, 2) if policy else None
    return tdrl_collect(task, n_steps, pol, random=not policy, check_finite=check_finite)


def check_finite_cost(task: str, n_steps: int) -> tuple[float, float, float]:
    """tdrl's collector with ``check_finite`` on and off: median steps/s of alternating
    rounds (as every other row), and the check's own cost in µs per vector step, timed
    bare on one real step's reward and observation arrays (the steps/s difference of two
    such close rates is mostly the machine's noise)."""
    from tdrl.data.collector_step import _step_finite

    rates = alternating_steps_per_s(
        {
            "on": _tdrl_collect_fn(task, n_steps, False, check_finite=True),
            "off": _tdrl_collect_fn(task, n_steps, False, check_finite=False),
        }
    )
    env = gym.vector.SyncVectorEnv([lambda: gym.make(task) for _ in range(N_ENVS)])
    env.reset(seed=0)
    obs, rew = env.step(env.action_space.sample())[:2]
    env.close()
    number = 20_000
    check = min(timeit.repeat(lambda: _step_finite(rew, obs), number=number, repeat=5))
    return rates["on"], rates["off"], check / number * 1e6


def tianshou_collect(task: str, n_steps: int, net: torch.nn.Module | None) -> Run:
    """Tianshou's ``Collector(DummyVectorEnv)``: ``random=True`` without ``net``, else a
    DQN policy over ``net`` (greedy, the same MLP)."""
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv

    envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(N_ENVS)])
    model_net = net if net is not None else torch.nn.Linear(4, 2)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = model_net

        def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
            return self.net(torch.as_tensor(obs, dtype=torch.float32)), state

    pol = DiscreteQLearningPolicy(model=Model(), action_space=envs.action_space[0])
    c: Any = Collector(pol, envs, VectorReplayBuffer(100_000, N_ENVS))
    c.reset()

    def run() -> int:
        with torch.no_grad():
            return c.collect(n_step=n_steps, random=net is None).n_collected_steps

    return run, envs.close


def _report(name: str, tdrl_sps: float, ts_sps: float, raw_sps: float | None) -> None:
    record(name, kind="steps_per_s", tdrl=tdrl_sps, peer=ts_sps, raw=raw_sps)
    line = (
        f"{name:<40} tdrl {tdrl_sps:9.0f} steps/s   tianshou {ts_sps:9.0f} steps/s   "
        f"speed-up {tdrl_sps / ts_sps:5.2f}x"
    )
    if raw_sps is not None:
        per_step_us = (1 / tdrl_sps - 1 / raw_sps) * 1e6 * N_ENVS
        line += (
            f"   raw gymnasium {raw_sps:9.0f} steps/s: tdrl {tdrl_sps / raw_sps:4.0%}, "
            f"tianshou {ts_sps / raw_sps:4.0%}; tdrl overhead {per_step_us:5.1f} us/vector step"
        )
    print(line, flush=True)


def _goal(name: str, share: float, goal: float) -> None:
    record(name.strip(), kind="share", share=share, goal=goal, rounds=ROUNDS)
    print(
        f"{name:<58} {share:6.1%}   goal >= {goal:.0%} {'met' if share >= goal else 'NOT met'}"
        f"   (medians of {ROUNDS} alternating rounds; load {os.getloadavg()[0]:.2f})",
        flush=True,
    )


def main() -> None:
    """Print the side-by-side rows, the goals, the overhead split and the NaN-check cost."""
    torch.set_num_threads(1)
    task, n = "CartPole-v1", N_STEPS
    sps = alternating_steps_per_s(
        {
            "raw": raw_loop(task, n),
            "tdrl random": tdrl_collect(task, n, None, random=True),
            "tdrl cheap": tdrl_collect(task, n, random_torch_policy),
            "tianshou random": tianshou_collect(task, n, None),
        }
    )
    _report(
        "CartPole-v1 x8 in-process, random", sps["tdrl random"], sps["tianshou random"], sps["raw"]
    )
    _goal(
        "  tdrl / raw loop, random actions (random=True)",
        sps["tdrl random"] / sps["raw"],
        GOAL_RANDOM,
    )
    _goal(
        "  tdrl / raw loop, cheap policy fn (random torch actions)",
        sps["tdrl cheap"] / sps["raw"],
        GOAL_POLICY,
    )

    torch.manual_seed(0)
    net = _TdrlMLP(4, 2)
    sps = alternating_steps_per_s(
        {
            "raw": raw_loop(task, n, net.net),
            "tdrl": tdrl_collect(task, n, net),
            "tianshou": tianshou_collect(task, n, net.net),
        }
    )
    _report("CartPole-v1 x8 in-process, MLP policy", sps["tdrl"], sps["tianshou"], sps["raw"])
    _goal("  tdrl / raw loop, same MLP policy", sps["tdrl"] / sps["raw"], GOAL_POLICY)

    split = overhead_split(task, 20_000)
    record("tdrl per vector step (us), MLP policy", kind="split_us", parts=split)
    print(
        f"{'  tdrl per vector step (us), MLP policy':<40} "
        + "   ".join(f"{k} {v:5.1f}" for k, v in split.items()),
        flush=True,
    )
    on, off, check_us = check_finite_cost(task, 20_000)
    record(
        "CartPole-v1 x8, check_finite on vs off",
        kind="check_finite",
        on=on,
        off=off,
        check_us=check_us,
    )
    print(
        f"{'CartPole-v1 x8, check_finite on vs off':<40} on {on:9.0f} steps/s   "
        f"off {off:9.0f} steps/s   ({on / off:6.1%}; medians of {ROUNDS} alternating rounds)"
        f"   the check itself {check_us:4.1f} us/vector step",
        flush=True,
    )
    np.random.seed(0)


if __name__ == "__main__":
    main()
