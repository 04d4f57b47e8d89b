"""Rows, budgets, the evaluation log and the one-thread checks shared by every peer.

A run trains one row with one library for a fixed budget of env steps: ``warmup`` random
steps (the off-policy presets' warm-up) then ``train_steps`` steps of the preset's own
collect/update schedule. The clock runs from the first warm-up step to the last update;
test episodes are timed separately and taken out (:class:`EvalLog`), so env steps per
second is ``(warmup + train_steps) / train_s`` for every library. A test (``eval_episodes``
episodes on as many envs, one episode each) runs after every ``eval_every`` training steps;
the time to threshold is the training time spent when a test first reaches the row's
threshold (tests of the trained policy only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

LIBRARIES: tuple[str, ...] = ("tdrl", "tianshou", "sb3", "sbx", "torchrl")
"""Every library of the benchmark, tdrl first (the ratios are tdrl / peer)."""

LABELS: dict[str, str] = {
    "tdrl": "tdrl",
    "tianshou": "Tianshou 2.0.1",
    "sb3": "SB3",
    "sbx": "SBX",
    "torchrl": "TorchRL",
}

XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
"""Set for every run before anything imports jax (SBX). On jax 0.10 these flags alone
leave XLA's CPU matmuls on three threads: the one-CPU affinity (:func:`pin_one_cpu`) is
what makes XLA size its thread pool to one."""


@dataclass(frozen=True)
class Row:
    """One row of the table: ``algo`` on ``task`` with tdrl's preset for it.

    ``warmup`` random env steps, then ``train_steps`` env steps of training, a test every
    ``eval_every`` of them; ``threshold`` is the mean test return of the time to threshold
    (``None``: no threshold within this budget).
    """

    name: str
    algo: str
    task: str
    warmup: int
    train_steps: int
    eval_every: int
    threshold: float | None
    eval_episodes: int = 10

    @property
    def env_steps(self) -> int:
        """The budget: warm-up plus training env steps."""
        return self.warmup + self.train_steps

    def scaled(self, train_steps: int, eval_every: int | None = None) -> Row:
        """This row with another training budget (warm-up kept at most ``train_steps``)."""
        return dataclasses.replace(
            self,
            warmup=min(self.warmup, train_steps),
            train_steps=train_steps,
            eval_every=eval_every or train_steps,
        )


ROWS: dict[str, Row] = {
    r.name: r
    for r in (
        Row("dqn-cartpole", "dqn", "CartPole-v1", 640, 10_000, 1000, 195.0),
        Row("ppo-cartpole", "ppo", "CartPole-v1", 0, 20_000, 2000, 195.0),
        Row("sac-pendulum", "sac", "Pendulum-v1", 1000, 5000, 1000, -250.0),
        Row("sac-hopper", "sac", "Hopper-v5", 1000, 10_000, 5000, None),
    )
}
"""The rows, tdrl's presets for them (``tdrl.presets.registry.preset(algo, task)``)."""


def preset(row: Row) -> Any:
    """tdrl's preset of the row (hyperparameters and network sizes every library uses)."""
    from tdrl.presets import registry

    return registry.preset(row.algo, row.task)


@dataclass
class EvalLog:
    """The clock of one run: training time with the tests taken out, and each test's result.

    ``start()`` before the first warm-up step, :meth:`evaluate` around every test,
    ``stop()`` after the last update. ``points`` holds ``(env_steps, train_s, mean)`` per
    test: the env steps collected and training seconds spent when it began.
    """

    threshold: float | None
    points: list[tuple[int, float, float]] = field(default_factory=list)
    eval_s: float = 0.0
    t0: float = 0.0
    train_s: float = 0.0
    ticks0: dict[str, int] = field(default_factory=dict)
    cpu0: float = 0.0
    threads: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        """Start the clock (and the per-thread CPU accounting)."""
        self.ticks0 = thread_ticks()
        self.cpu0 = time.process_time()
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        """Training seconds so far (tests excluded)."""
        return time.perf_counter() - self.t0 - self.eval_s

    def evaluate(self, env_steps: int, fn: Callable[[], float]) -> float:
        """Run ``fn`` (a test returning the mean return) off the clock; record it."""
        at = self.elapsed()
        begin = time.perf_counter()
        try:
            mean = float(fn())
        finally:
            self.eval_s += time.perf_counter() - begin
        self.points.append((int(env_steps), at, mean))
        return mean

    def stop(self) -> float:
        """Stop the clock; return the training seconds (tests excluded)."""
        wall = time.perf_counter() - self.t0
        self.train_s = wall - self.eval_s
        self.threads = thread_summary(self.ticks0, thread_ticks())
        self.threads["cpu_per_wall"] = round((time.process_time() - self.cpu0) / wall, 3)
        return self.train_s

    def to_threshold(self, after: int = 1) -> tuple[float, int] | None:
        """``(train_s, env_steps)`` at the first test at or past ``after`` env steps whose
        mean reaches the threshold; ``None`` when none did (or no threshold)."""
        if self.threshold is None:
            return None
        for steps, secs, mean in self.points:
            if steps >= after and mean >= self.threshold:
                return secs, steps
        return None


# ------------------------------------------------------------------- thread parity
def pin_one_cpu(cpu: int | None = None) -> int:
    """Bind this process (and every thread it starts later) to one CPU; return it.

    One torch thread is ``torch.set_num_threads(1)``; for XLA the flags of
    :data:`XLA_FLAGS` do not suffice on jax 0.10 (measured: a 1024x1024 jitted matmul
    keeps three threads busy with them set), while XLA sizes its CPU pool from the CPUs the
    process may run on. Every library is pinned the same way, so the rule is one for all.
    """
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {chosen})
    return chosen


def thread_ticks() -> dict[str, int]:
    """CPU clock ticks (user + system) of every thread of this process, by thread id."""
    out: dict[str, int] = {}
    task = Path("/proc/self/task")
    if not task.is_dir():
        return out
    for tid in os.listdir(task):
        try:
            parts = (task / tid / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[tid] = int(parts[11]) + int(parts[12])
    return out


def thread_summary(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """How the CPU time between two :func:`thread_ticks` spread over the threads:
    ``busy_threads`` (threads with at least 5% of it) and ``top_share`` (the busiest
    thread's share; 1.0 is one thread doing all the work).

    >>> thread_summary({"1": 0, "2": 0}, {"1": 95, "2": 5, "3": 0})
    {'busy_threads': 2, 'top_share': 0.95, 'ticks': 100}
    """
    deltas = sorted((after[k] - before.get(k, 0) for k in after), reverse=True)
    total = sum(deltas)
    if total <= 0:
        return {"busy_threads": 0, "top_share": 1.0, "ticks": 0}
    return {
        "busy_threads": sum(d >= 0.05 * total for d in deltas),
        "top_share": round(deltas[0] / total, 3),
        "ticks": total,
    }


# ------------------------------------------------------------------- provenance
def git_commit() -> dict[str, Any]:
    """The checkout's commit and whether its code had uncommitted changes: files outside
    ``benchmarks/results/`` (the records a benchmark and the long-run lane write while it
    runs are not the code that produced them)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    changed = git("status", "--porcelain", "--", ".", ":(exclude)benchmarks/results")
    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(changed)}


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory, OS and Python of this machine, and its load average."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gb = 0.0
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "mem_gib": round(mem_gb, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def versions(lib: str) -> dict[str, str]:
    """The versions of the packages a library's run used."""
    from importlib.metadata import PackageNotFoundError, version

    names = {
        "tdrl": ["tdrl", "torch", "tensordict"],
        "tianshou": ["tianshou", "torch"],
        "sb3": ["stable-baselines3", "torch"],
        "sbx": ["sbx-rl", "stable-baselines3", "jax", "jaxlib", "flax", "optax"],
        "torchrl": ["torchrl", "tensordict", "torch"],
    }[lib] + ["gymnasium", "numpy", "mujoco"]
    out = {}
    for name in names:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out
