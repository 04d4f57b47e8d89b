"""Roofline: each family's update against the matmuls it cannot avoid.

For every row, one update of the preset's algorithm (its networks, its batch size) is run
under a recording dispatch mode that notes the shape of every matrix product (``mm``,
``addmm``, ``bmm``) it makes: forward, backward and target computations. Those products
are then replayed bare (random operands of the same shapes, the same order) and timed.
The bare replay is the update's FLOP floor on this machine: what the update would cost if
everything but its matmuls were free. Printed per row:

* ``update ms``: one eager update (median of alternating rounds);
* ``mm GFLOP``: the FLOPs of its matrix products (``2 m k n`` each);
* ``achieved``: those FLOPs over the update's time (GFLOP/s);
* ``bare mm``: the same FLOPs over the bare replay's time (GFLOP/s), the roofline;
* ``x floor``: update time / bare replay time (1.0 = nothing but matmuls);
* ``ops ms``: every ATen operation of the update (forward, backward, optimizer, target and
  sampling ops alike: what reaches the dispatcher below autograd), recorded with its actual
  arguments and replayed in order without Python, modules or autograd bookkeeping; the
  kernels an eager update cannot avoid for this math;
* ``x ops``: update time / ``ops ms``; what is above 1 is Python, TensorDict, module calls
  and building the autograd graph, the part a library can still cut (two consecutive
  updates are recorded and timed, so TD3's every-other-step actor update is in both).

Small classic-control networks are overhead-bound (``x floor`` far above 1: Python,
TensorDict and autograd bookkeeping); SAC on Hopper's 256x256 networks at batch 256 is
close to its floor. The large row is also timed with 2 intra-op threads (``--threads``;
default ``1 2`` on a machine with two cores or more): the measurement behind
``tdrl.utils.threads``' rule (docs/scaling.md).

    python -m benchmarks roofline
    python -m benchmarks.bench_roofline --rows sac-hopper --threads 1 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import gymnasium as gym
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.timing import record

ROWS: dict[str, tuple[str, str]] = {
    "dqn": ("dqn", "CartPole-v1"),
    "c51": ("c51", "CartPole-v1"),
    "qrdqn": ("qrdqn", "CartPole-v1"),
    "iqn": ("iqn", "CartPole-v1"),
    "rainbow": ("rainbow", "CartPole-v1"),
    "ddpg": ("ddpg", "Pendulum-v1"),
    "td3": ("td3", "Pendulum-v1"),
    "sac": ("sac", "Pendulum-v1"),
    "a2c": ("a2c", "CartPole-v1"),
    "trpo": ("trpo", "Pendulum-v1"),
    "sac-hopper": ("sac", "Hopper-v5"),
}
"""Row name -> (algorithm, task): the zoo benchmark's families and the large SAC update."""

_MM = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default}


class _MatmulShapes(TorchDispatchMode):
    """Records ``(op, operand shapes)`` of every matrix product dispatched inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, list[torch.Size]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func in _MM:
            mats = [a.shape for a in args if isinstance(a, torch.Tensor)]
            self.calls.append((func, mats))
        return func(*args, **(kwargs or {}))


class _AllOps(TorchDispatchMode):
    """Records every ATen call ``(op, args, kwargs)`` dispatched inside it, for a replay."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.calls.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def _replay_ops(calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]) -> float:
    """Seconds of the recorded ATen calls made again, in order, below autograd (on the
    recorded tensors: the values drift, the shapes and kernels do not)."""
    with torch.no_grad(), torch._C._AutoDispatchBelowADInplaceOrView():
        start = time.perf_counter()
        for f, args, kwargs in calls:
            f(*args, **kwargs)
        return time.perf_counter() - start


def _flops(func: Any, shapes: list[torch.Size]) -> int:
    a, b = shapes[-2], shapes[-1]
    if func is torch.ops.aten.bmm.default:
        return 2 * a[0] * a[1] * a[2] * b[2]
    return 2 * a[0] * a[1] * b[1]


def preset_algorithm(algo: str, task: str) -> Any:
    """The preset's algorithm for ``task`` on the CPU (its spaces from ``gym.make(task)``)."""
    from tdrl import presets
    from tdrl.presets.make import make_algorithm

    env = gym.make(task)
    alg = make_algorithm(
        algo, task, presets.preset(algo, task), observation_space=env.observation_space,
        action_space=env.action_space, device="cpu", dataset=None,
    )  # fmt: skip
    env.close()
    return alg


def _setup(algo: str, task: str) -> tuple[Any, Any, int | None]:
    """The preset's algorithm and a buffer of random transitions to update from."""
    from tdrl import presets
    from tdrl.data import Collector, VectorReplayBuffer
    from tdrl.env import DummyVectorEnv

    preset = presets.preset(algo, task)
    alg = preset_algorithm(algo, task)
    n = 4
    envs = DummyVectorEnv([lambda: gym.make(task)] * n)
    steps = int(getattr(preset, "step_per_collect", None) or 0) if alg.on_policy else 2000
    buf = VectorReplayBuffer(max(steps, 2000), n)
    collector = Collector(alg, envs, buf)
    collector.reset(seed=0)
    collector.collect(n_step=max(steps, 1000), random=True)
    envs.close()
    return alg, buf, getattr(preset, "batch_size", None)


def _one_update(alg: Any, buf: Any, batch_size: int | None) -> float:
    start = time.perf_counter()
    alg.update(buf, batch_size, repeat=1)
    return time.perf_counter() - start


def _replay(calls: list[tuple[Any, list[torch.Size]]]) -> float:
    """Seconds of the recorded matrix products made bare, in order."""
    operands = [(f, [torch.randn(s) for s in shapes]) for f, shapes in calls]
    start = time.perf_counter()
    for f, ts in operands:
        f(*ts)
    return time.perf_counter() - start


def measure(row: str, rounds: int = 15) -> dict[str, float]:
    """Update time, its matmul FLOPs and the bare-matmul floor of one row."""
    algo, task = ROWS[row]
    torch.manual_seed(0)
    alg, buf, batch_size = _setup(algo, task)
    _one_update(alg, buf, batch_size)  # warm caches and lazy state
    with _MatmulShapes() as rec:
        _one_update(alg, buf, batch_size)
    flops = sum(_flops(f, s) for f, s in rec.calls)
    with _AllOps() as ops:
        _one_update(alg, buf, batch_size)
        _one_update(alg, buf, batch_size)
    upd, bare, pairs, replays = [], [], [], []
    for _ in range(rounds):  # alternating, so load changes hit both
        upd.append(_one_update(alg, buf, batch_size))
        bare.append(_replay(rec.calls))
        pairs.append(_one_update(alg, buf, batch_size) + _one_update(alg, buf, batch_size))
        replays.append(_replay_ops(ops.calls))
    t_upd, t_bare = statistics.median(upd), statistics.median(bare)
    t_pair, t_ops = statistics.median(pairs), statistics.median(replays)
    return {
        "ops_ms": t_ops / 2 * 1e3,
        "x_ops": t_pair / t_ops,
        "aten_ops": len(ops.calls) / 2,
        "update_ms": t_upd * 1e3,
        "gflop": flops / 1e9,
        "achieved": flops / t_upd / 1e9,
        "bare": flops / t_bare / 1e9,
        "x_floor": t_upd / t_bare,
        "matmuls": float(len(rec.calls)),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the roofline table (one torch thread; the large row also with each count of
    ``--threads``);
    ``python -m benchmarks roofline`` also records each row
    (``benchmarks/results/roofline/results.jsonl``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    two = [1, 2] if (os.cpu_count() or 1) >= 2 else [1]
    parser.add_argument("--threads", nargs="*", type=int, default=two)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv or [])
    print(f"{'row':12s} {'thr':>3s} {'update ms':>10s} {'mm GFLOP':>9s} {'achieved':>9s} "
          f"{'bare mm':>8s} {'x floor':>8s} {'ops ms':>7s} {'x ops':>6s}"
          f"   (GFLOP/s; median of {args.rounds})")  # fmt: skip
    before = torch.get_num_threads()
    try:
        for row in args.rows:
            for threads in args.threads if row == "sac-hopper" else args.threads[:1]:
                torch.set_num_threads(threads)
                m = measure(row, args.rounds)
                record("roofline", row=row, threads=threads, rounds=args.rounds, **m)
                print(
                    f"{row:12s} {threads:3d} {m['update_ms']:10.2f} {m['gflop']:9.4f} "
                    f"{m['achieved']:9.2f} {m['bare']:8.2f} {m['x_floor']:8.2f} "
                    f"{m['ops_ms']:7.2f} {m['x_ops']:6.2f}",
                    flush=True,
                )
    finally:
        torch.set_num_threads(before)


if __name__ == "__main__":
    import sys

    torch.set_num_threads(1)
    main(sys.argv[1:])
