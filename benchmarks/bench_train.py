"""End-to-end training: time to reach the preset threshold, tdrl vs Tianshou 2.0.1.

Three configurations, each trained from scratch by both libraries with the hyperparameters
of :mod:`tdrl.presets`:

=====  ===========  =========  ==========================================================
algo   task         threshold  budget (max epochs x env steps per epoch)
=====  ===========  =========  ==========================================================
DQN    CartPole-v1  195        10 x 10,000 (+ 640 random warm-up steps)
PPO    CartPole-v1  195        10 x 50,000
SAC    Pendulum-v1  -250       20 x 1,000 (+ 1,000 random warm-up steps)
=====  ===========  =========  ==========================================================

tdrl runs through :func:`tdrl.experiment.run_experiment` (``logger="none"``, no progress bar,
no plot). Tianshou runs the same recipe written against its 2.0.1 API: the same network
shapes and activations (plain PyTorch initialisation on both sides), optimizers, learning
rates, discounts, n-step horizons, target-update schedules, epsilons, buffer sizes, numbers
of in-process (``DummyVectorEnv``) training and test envs, warm-up steps, steps per collect,
gradient steps per env step / repeats per collect, batch sizes, test episodes, epochs, and
the same early stopping: ``stop_fn(best mean test return) >= threshold`` checked after every
test, with test-in-train (a test is run as soon as the mean return of the episodes finished in
a training collect reaches the threshold). Both sides seed ``random``, NumPy and torch with
the run's seed, seed training env ``i`` with ``seed + i`` and test env ``i`` with
``seed + 100000 + i``, and run with ``torch.set_num_threads(1)``.

Before the timed runs every configuration runs once per library on a tiny budget, untimed,
so that one-time per-process costs (lazy imports, first torch calls, Tianshou's numba JIT
compilation of its buffer and n-step helpers: about 5 s) are not charged to the first run;
their total is printed. Per run: ``wall`` is the whole run -- envs, networks, buffers,
collectors, random warm-up steps and training (``run_experiment`` as a whole for tdrl, the
same steps for Tianshou); ``train`` is the trainer's ``run()`` alone (initial test
included); ``steps`` are the training env steps the trainer collected when it stopped
(random warm-up steps excluded); ``best`` is the best mean test return. Per configuration
the mean phase split follows: training collects, updates and tests (tdrl: its trainer's own
timers; Tianshou: the ``collect`` and ``update`` calls timed from outside, because 2.0.1's
collectors do not accumulate ``collect_time``) and tdrl's per-epoch checkpoints. The summary
gives the mean wall time and steps to the threshold over the seeds and their ratio
tdrl / Tianshou (below 1: tdrl is faster; the goal is <= 0.5; in brackets the same with
tdrl's checkpoint time taken out), plus a per-step ratio of
collect + update seconds per training env step. Each side learns with its own random
streams, so the two reach the threshold after different numbers of steps; the per-step
ratio separates the speed of the code from that luck.

Unavoidable differences:

* ``run_experiment`` writes a full checkpoint (networks, optimizers, buffer, envs, RNGs) at
  the end of every epoch; the Tianshou side saves nothing. It is counted in tdrl's time
  (and shown in its phase line).
* Tianshou's trainer scans the whole replay buffer for NaNs after every collect
  (``buffer.hasnull()``, not optional); it is counted in Tianshou's time.
* Tianshou's ``SAC`` keeps one Adam per critic, tdrl one Adam over both critics (Adam is
  per-parameter, so the updates are the same). Tianshou's discrete actor outputs
  probabilities by default; here it outputs logits (``softmax_output=False``) into a
  ``Categorical(logits=...)``, as tdrl's does.
* PPO's ``max_batchsize`` (the chunk size for computing values before an update, no effect
  on the result) is 1024 on both sides (tdrl's default; Tianshou's default is 256).
* The phase timers sit at slightly different places (tdrl's include its trainer's
  bookkeeping around the calls), so small phase differences mean little.

    /opt/tsenv/bin/python -m benchmarks train
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import tempfile
import time
import warnings

import torch

from benchmarks.tianshou_builders import (
    Run,
    preset,
    run_tianshou,
    small_budget,
    timed,
)
from benchmarks.timing import record

SEEDS: tuple[int, ...] = tuple(
    int(s) for s in os.environ.get("BENCH_TRAIN_SEEDS", "0,1,2").split(",") if s.strip()
)
"""Seeds each configuration is trained with (per side): ``BENCH_TRAIN_SEEDS`` (default
``0,1,2``)."""

CONFIGS: tuple[tuple[str, str], ...] = (
    ("dqn", "CartPole-v1"),
    ("ppo", "CartPole-v1"),
    ("sac", "Pendulum-v1"),
)


# ----------------------------------------------------------------------------------- tdrl
def run_tdrl(algo: str, task: str, seed: int, small: bool = False) -> Run:
    """Train with :func:`tdrl.experiment.run_experiment`; time the whole call.

    ``small``: the tiny budget of :func:`small_budget` (for the untimed warm-up).
    """
    from tdrl.experiment import ExperimentConfig, run_experiment

    p = preset(algo)
    threshold = p.threshold
    budget = small_budget(p) if small else {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ExperimentConfig(
            algo,
            task,
            seed=seed,
            epochs=budget.get("max_epochs"),
            step_per_epoch=budget.get("step_per_epoch"),
            test_num=budget.get("test_num"),
            logger="none",
            show_progress=False,
            plot=False,
            log_dir=tmp,
        )
        import tdrl.trainer.base as trainer_base

        # time the per-epoch checkpoints that run_experiment writes (reported separately)
        phases = {"checkpoint": 0.0}
        save = trainer_base.save_checkpoint
        timed(trainer_base, "save_checkpoint", phases, "checkpoint")
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                start = time.perf_counter()
                result, _ = run_experiment(cfg)
                wall = time.perf_counter() - start
        finally:
            trainer_base.save_checkpoint = save  # type: ignore[attr-defined]
    t = result.timing
    return Run(
        wall=wall,
        train=t.total_time,
        steps=result.env_step,
        best=result.best_reward,
        reached=result.best_reward >= threshold,
        collect=t.train_collect_time,
        update=t.update_time,
        test=t.test_time,
        checkpoint=phases["checkpoint"],
    )


# ---------------------------------------------------------------------------------- table
def _cell(r: Run) -> str:
    head = f"wall {r.wall:6.1f} s  train {r.train:6.1f} s  {r.steps:6d} steps"
    if r.reached:
        return f"{head}  best {r.best:7.1f}"
    return f"{head}  not reached (best {r.best:.1f}, {r.wall:.1f} s spent)"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _per_kstep(runs: list[Run]) -> float:
    """Seconds of training collects + updates per 1000 training env steps (pooled)."""
    steps = sum(r.steps for r in runs)
    return 1000 * sum(r.collect + r.update for r in runs) / steps if steps else math.nan


def _phases(label: str, runs: list[Run]) -> str:
    out = (
        f"{'':<28} {label:<8} mean phases: collect {_mean([r.collect for r in runs]):5.2f} s"
        f"  update {_mean([r.update for r in runs]):5.2f} s"
        f"  test {_mean([r.test for r in runs]):5.2f} s"
    )
    if label == "tdrl":
        out += f"  checkpoints {_mean([r.checkpoint for r in runs]):5.2f} s"
    return out + f"  | collect+update {_per_kstep(runs):5.2f} s per 1k steps"


def train_both(
    name: str, algo: str, task: str, seeds: tuple[int, ...]
) -> tuple[list[Run], list[Run]]:
    """Train ``algo`` on ``task`` with both libraries for every seed, alternating which goes
    first (so drifts in machine load hit both); print each run and the mean phases; return
    (tdrl's runs, Tianshou's runs)."""
    ours: list[Run] = []
    peer: list[Run] = []
    for i, seed in enumerate(seeds):
        order = (run_tdrl, run_tianshou) if i % 2 == 0 else (run_tianshou, run_tdrl)
        for fn in order:
            (ours if fn is run_tdrl else peer).append(fn(algo, task, seed))
        print(f"{name:<28} tdrl     seed {seed}  {_cell(ours[-1])}", flush=True)
        print(f"{name:<28} tianshou seed {seed}  {_cell(peer[-1])}", flush=True)
    print(_phases("tdrl", ours), flush=True)
    print(_phases("tianshou", peer), flush=True)
    record(
        name,
        kind="train",
        algo=algo,
        task=task,
        threshold=preset(algo).threshold,
        seeds=list(seeds),
        tdrl=[dataclasses.asdict(r) for r in ours],
        tianshou=[dataclasses.asdict(r) for r in peer],
    )
    return ours, peer


def _warm_up() -> tuple[float, float]:
    """Run every configuration once on a tiny budget with both libraries, untimed.

    This pays the one-time per-process costs (lazy imports, first torch calls, Tianshou's
    numba JIT compilation of its buffer and return helpers) before the timed runs; returns
    the seconds each side spent here.
    """
    import tianshou.trainer  # noqa: F401

    import tdrl.experiment.build  # noqa: F401

    spent = {run_tdrl: 0.0, run_tianshou: 0.0}
    for algo, task in CONFIGS:
        for fn in spent:
            start = time.perf_counter()
            fn(algo, task, 0, small=True)
            spent[fn] += time.perf_counter() - start
    return spent[run_tdrl], spent[run_tianshou]


def main() -> None:
    """Train every configuration for every seed with both libraries and print the table."""
    begin = time.perf_counter()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="No target network updater")
    w_ours, w_peer = _warm_up()
    print(
        f"untimed warm-up (tiny runs of every config; one-time JIT/lazy-init costs): "
        f"tdrl {w_ours:.1f} s, tianshou {w_peer:.1f} s",
        flush=True,
    )
    print(
        f"wall = whole run (setup, warm-up steps, training); train = trainer.run() only; "
        f"steps = training env steps (warm-up excluded); seeds {SEEDS}",
        flush=True,
    )
    summaries: list[str] = []
    for algo, task in CONFIGS:
        threshold = preset(algo).threshold
        name = f"{algo.upper()} {task} >= {threshold:g}"
        ours, peer = train_both(name, algo, task, SEEDS)
        w_ours, w_peer = _mean([r.wall for r in ours]), _mean([r.wall for r in peer])
        no_ckpt = (w_ours - _mean([r.checkpoint for r in ours])) / w_peer
        s_ours, s_peer = _mean([r.steps for r in ours]), _mean([r.steps for r in peer])
        reached = (
            f"reached {sum(r.reached for r in ours)}/{len(ours)} "
            f"vs {sum(r.reached for r in peer)}/{len(peer)}"
        )
        summaries.append(
            f"{name:<28} tdrl {w_ours:6.1f} s {s_ours:7.0f} steps | "
            f"tianshou {w_peer:6.1f} s {s_peer:7.0f} steps | "
            f"ratio {w_ours / w_peer:5.2f}x ({no_ckpt:4.2f}x w/o tdrl ckpts) | per-step ratio "
            f"{_per_kstep(ours) / _per_kstep(peer):5.2f}x | {reached}"
        )
    print(
        "\nmean time to threshold over the seeds; ratio = tdrl / tianshou wall (goal <= 0.50x); "
        "per-step ratio = the same for collect+update seconds per env step"
    )
    for line in summaries:
        print(line, flush=True)
    print(f"(bench_train took {time.perf_counter() - begin:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
