"""Distributed collection: env steps per second with M = 1, 2, 4 Ray collector workers.

Hopper-v5, the SAC MuJoCo preset's actor (256x256, random weights), one env per worker (the
preset's ``training_num``), a :class:`~tdrl.data.distributed.RayCollector` feeding one
learner ``VectorReplayBuffer`` of ``M`` sub-buffers. A round pushes the weights and collects
``STEPS`` steps per worker (``collect(n_step=M * STEPS)``), so the steps per second include
the weight push, the transfer of the transitions and the learner's ``buffer.add``; the
learner does no gradient step here (collection throughput only). Scaling efficiency is
``speed(M) / (M * speed(1))``. Also printed: the in-process ``Collector`` on one env (the
baseline a single process gets) and the fixed cost of one round (1 step per worker).

The learner beside it: one update of the same preset's SAC (``algorithm.update`` at the
preset's batch size of 256: sample, preprocess, the critic, actor and temperature steps) and
``buffer.sample(256)`` alone, on a buffer of random Hopper transitions, one torch thread;
each the median over ``--learner-rounds`` rounds after a warm-up. With one update per env
step (the MuJoCo presets) the updates per second cap the env steps per second of training.

The workers reserve one CPU each in a local Ray instance of ``max(4, cpu_count)`` CPUs: on
a machine with fewer cores than workers they share them, and the efficiency says so.

    python -m benchmarks scaling
    python benchmarks/bench_scaling.py --steps 500 --rounds 4 --workers 1 2 4
    python benchmarks/bench_scaling.py --learner-rounds 0   # collection only
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from benchmarks.timing import record

STEPS = 400
ROUNDS = 3
WORKERS = (1, 2, 4)
TASK = "Hopper-v5"
LEARNER_ROUNDS = 7
LEARNER_FILL = 10_000
"""Random Hopper transitions in the buffer the learner samples from."""


def _algorithm() -> tuple[Any, Any]:
    """The SAC Hopper-v5 preset and its algorithm, built as ``tdrl train`` builds them."""
    from tdrl import presets
    from tdrl.presets import make_algorithm

    preset = presets.preset("sac", TASK)
    env = gym.make(TASK)
    alg = make_algorithm(
        "sac",
        TASK,
        preset,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device="cpu",
        dataset=None,
    )
    env.close()
    return alg, preset


def _policy() -> Any:
    alg, _ = _algorithm()
    alg.policy.is_within_training_step = True  # stochastic actions, as in training
    return alg.policy


def _medians(fns: list[tuple[Callable[[], object], int]], rounds: int) -> list[float]:
    """Median seconds per call of each ``(fn, calls per round)``, their rounds interleaved."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, (fn, number) in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[i].append((time.perf_counter() - start) / number)
    return [statistics.median(t) for t in times]


def _learner(rounds: int, fill: int = LEARNER_FILL) -> dict[str, Any]:
    """Seconds of one SAC update and of ``sample(batch)`` (medians), and the update's size."""
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    torch.manual_seed(0)
    alg, preset = _algorithm()
    buf = VectorReplayBuffer(10**5, 1)
    c = Collector(alg.policy, DummyVectorEnv([lambda: gym.make(TASK)]), buf)
    c.reset(seed=0)
    c.collect(n_step=fill, random=True)
    c.env.close()
    batch = preset.batch_size
    for _ in range(5):  # warm-up: lazy state, allocator, caches
        alg.update(buf, batch)
    update_s, sample_s = _medians(
        [(lambda: alg.update(buf, batch), 10), (lambda: buf.sample(batch), 200)], rounds
    )
    params = [p for p in alg.parameters() if p.requires_grad]
    return {
        "update_s": update_s,
        "sample_s": sample_s,
        "batch_size": batch,
        "params": sum(p.numel() for p in params),
        "grad_bytes": sum(p.numel() * p.element_size() for p in params),
        "rounds": rounds,
        "filled": fill,
    }


def _local_speed(policy: Any, steps: int, rounds: int) -> float:
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    c = Collector(policy, DummyVectorEnv([lambda: gym.make(TASK)]), VectorReplayBuffer(10**5, 1))
    c.reset(seed=0)
    c.collect(n_step=steps)  # warm-up
    start = time.perf_counter()
    for _ in range(rounds):
        c.collect(n_step=steps)
    c.env.close()
    return steps * rounds / (time.perf_counter() - start)


def _ray_speed(policy: Any, m: int, steps: int, rounds: int) -> tuple[float, float]:
    """(env steps/s over ``rounds`` rounds, seconds of a 1-step-per-worker round)."""
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.distributed import RayCollector

    buf = VectorReplayBuffer(10**5 * m, m)
    with RayCollector(policy, lambda: gym.make(TASK), m, 1, buffer=buf, num_cpus=1) as rc:
        rc.reset(seed=0)
        rc.collect(n_step=m * steps)  # warm-up: the workers import torch, build the net
        start = time.perf_counter()
        for _ in range(rounds):
            rc.collect(n_step=m * steps)
        speed = m * steps * rounds / (time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(10):
            rc.collect(n_step=m)
        round_s = (time.perf_counter() - start) / 10
    return speed, round_s


def _print_learner(rounds: int) -> None:
    m = _learner(rounds)
    name = f"SAC {TASK} update (batch {m['batch_size']})"
    record(name, kind="learner", **m)
    print(
        f"{name:<32} {m['update_s'] * 1e3:9.2f} ms ({1 / m['update_s']:.0f} updates/s)   "
        f"sample({m['batch_size']}) {m['sample_s'] * 1e6:6.1f} us   "
        f"{m['params']:,} trainable parameters, {m['grad_bytes'] / 1e6:.2f} MB of gradients"
    )


def main(argv: list[str] | None = None) -> None:
    """Print env steps/s and scaling efficiency for each number of workers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=STEPS, help="steps per worker per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKERS))
    parser.add_argument(
        "--learner-rounds", type=int, default=LEARNER_ROUNDS, help="0 skips the learner"
    )
    args = parser.parse_args([] if argv is None else argv)
    torch.set_num_threads(1)
    if args.learner_rounds:
        _print_learner(args.learner_rounds)
    try:
        import ray
    except ImportError:
        print("ray is not installed: collection skipped")
        return
    policy = _policy()
    started = not ray.is_initialized()
    if started:
        cpus = max(max(args.workers), os.cpu_count() or 1)
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    print(
        f"{TASK}, SAC actor, 1 env per worker, {args.steps} steps per worker per round, "
        f"{args.rounds} rounds; machine: {os.cpu_count()} cores (shared)"
    )
    local = _local_speed(policy, args.steps, args.rounds)
    print(f"{'in-process Collector (1 env)':<32} {local:9.0f} env steps/s")
    record(
        "in-process Collector (1 env)",
        kind="collect",
        steps_per_s=local,
        steps=args.steps,
        rounds=args.rounds,
    )
    base = None
    try:
        for m in args.workers:
            speed, round_s = _ray_speed(policy, m, args.steps, args.rounds)
            base = base or (speed if m == 1 else None)
            eff = f"{speed / (m * base):6.1%}" if base else "   n/a"
            record(
                f"RayCollector M={m}",
                kind="collect",
                workers=m,
                steps_per_s=speed,
                efficiency=speed / (m * base) if base else None,
                round_s=round_s,
                steps=args.steps,
                rounds=args.rounds,
            )
            print(
                f"{f'RayCollector M={m}':<32} {speed:9.0f} env steps/s   "
                f"efficiency {eff}   round of 1 step/worker {round_s * 1e3:6.1f} ms"
            )
    finally:
        if started:
            ray.shutdown()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
