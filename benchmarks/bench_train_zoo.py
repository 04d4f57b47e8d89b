"""End-to-end training of more algorithms: time to threshold, tdrl vs Tianshou 2.0.1.

The same protocol as :mod:`benchmarks.bench_train` (read its docstring: whole-run wall
time, phase timers, untimed warm-up runs, seeding, test-in-train early stopping), for the
remaining classic-control presets of :func:`tdrl.presets.preset`:

=======  ===========  =========
algo     task         threshold
=======  ===========  =========
C51      CartPole-v1  195
QRDQN    CartPole-v1  195
IQN      CartPole-v1  195
Rainbow  CartPole-v1  195
TD3      Pendulum-v1  -250
DDPG     Pendulum-v1  -250
A2C      CartPole-v1  195
TRPO     Pendulum-v1  -250
=======  ===========  =========

tdrl runs through :func:`tdrl.experiment.run_experiment` (``bench_train.run_tdrl``); Tianshou
runs the same recipe built from its 2.0.1 classes with the preset's hyperparameters (the
builders in ``tdrl/presets/<algo>.py``; the Tianshou side is
:mod:`benchmarks.tianshou_builders`, shared with ``bench_train``):

* C51 / QRDQN: ``Net(num_atoms=..., softmax=True for C51)`` on the preset's trunk, the
  same atoms/quantiles, epsilons, n-step, target sync; QRDQN and IQN get the preset's
  quantile counts.
* IQN: ``ImplicitQuantileNetwork`` on a ``Net(obs -> hidden[:-1] -> hidden[-1])`` feature
  net (tdrl: the same ``psi``, a linear head, the same cosine embedding).
* Rainbow: ``Net`` with a dueling pair of ``NoisyLinear`` heads (no hidden layers, as
  tdrl's ``RainbowNet`` with ``head_hidden_sizes=()``), a ``PrioritizedVectorReplayBuffer``
  with the preset's ``alpha``/``beta`` (constant beta on both sides).
* TD3 / DDPG: ``ContinuousActorDeterministic`` (tanh, ``max_action=1``, scaled to the
  action space by the policy), ``ContinuousCritic`` on concatenated ``(obs, act)``,
  ``GaussianNoise(sigma)``.
* A2C: separate ReLU trunks (``DiscreteActor`` with logits, ``DiscreteCritic``),
  ``collection_step_num_episodes`` = the preset's ``episode_per_collect``,
  ``max_batchsize=1024`` (tdrl's default).
* TRPO: tanh ``ContinuousActorProbabilistic`` (free log-std, unbounded mean) and critic,
  orthogonal weights and zero biases on both sides, ``Independent(Normal)``.

Both sides use plain PyTorch initialisation otherwise; each learns from its own random
streams, so the env steps to threshold differ by luck; the per-step ratio (collect +
update seconds per training env step) separates the code's speed from that luck.
``BENCH_ZOO_SEEDS`` (default ``0``: one seed; e.g. ``0,1,2``) and ``BENCH_ZOO_ALGOS``
(comma-separated subset) select the runs.

Results (2026-11-23, 2-core AMD EPYC VM shared with a CI run, load average ~5, torch 1
thread; ``BENCH_ZOO_SEEDS=0,1,2 python -m benchmarks train_zoo``)::

    untimed warm-up (tiny runs of every config): tdrl 2.7 s, tianshou 13.2 s;
    seeds (0, 1, 2)
    mean over the seeds: wall s and env steps to threshold; ratio = tdrl / tianshou wall
    (goal <= 0.50x); per-step = the same for collect+update seconds per env step;
    reached = runs that hit the threshold (tdrl, tianshou)
    algo     task           thr |   tdrl   steps |  tshou   steps | ratio | per-step | reached
    C51      CartPole-v1    195 |    4.6    3485 |   10.8    4256 | 0.42x | 0.60x | 3/3 3/3
    QRDQN    CartPole-v1    195 |    8.0    4667 |   11.5    4667 | 0.70x | 0.83x | 3/3 3/3
    IQN      CartPole-v1    195 |    4.7    3667 |    9.4    4000 | 0.50x | 0.71x | 3/3 3/3
    RAINBOW  CartPole-v1    195 |    6.6    8363 |    6.9    5176 | 0.96x | 0.80x | 3/3 3/3
    TD3      Pendulum-v1   -250 |    6.5    2333 |   11.9    2333 | 0.55x | 0.58x | 3/3 3/3
    DDPG     Pendulum-v1   -250 |    9.2    2333 |   17.4    2667 | 0.53x | 0.64x | 3/3 3/3
    A2C      CartPole-v1    195 |    2.6   34063 |    6.3   22367 | 0.42x | 0.35x | 3/3 3/3
    TRPO     Pendulum-v1   -250 |    7.4   42667 |   13.8   52907 | 0.54x | 0.75x | 3/3 3/3
    (bench_train_zoo took 429 s)

The Rainbow wall ratio is dominated by one tdrl seed needing 12k steps (per step tdrl is
0.80x); A2C/TRPO/C51 wall ratios also move with step-count luck. Per step, tdrl is
0.35x-0.83x of Tianshou: the 0.5x goal is met per step only by A2C.

    python -m benchmarks train_zoo
"""

from __future__ import annotations

import os
import time
import warnings

import torch

from benchmarks.bench_train import _mean, _per_kstep, run_tdrl, train_both
from benchmarks.tianshou_builders import preset, run_tianshou

SEEDS: tuple[int, ...] = tuple(
    int(s) for s in os.environ.get("BENCH_ZOO_SEEDS", "0").split(",") if s.strip()
)
"""Seeds each configuration is trained with (per side)."""

CONFIGS: tuple[tuple[str, str], ...] = (
    ("c51", "CartPole-v1"),
    ("qrdqn", "CartPole-v1"),
    ("iqn", "CartPole-v1"),
    ("rainbow", "CartPole-v1"),
    ("td3", "Pendulum-v1"),
    ("ddpg", "Pendulum-v1"),
    ("a2c", "CartPole-v1"),
    ("trpo", "Pendulum-v1"),
)

SKIPPED: dict[str, str] = {}
"""Algorithms left out, with the reason (printed)."""

LEGEND = (
    "mean over the seeds: wall s and env steps to threshold; ratio = tdrl / tianshou wall",
    "(goal <= 0.50x); per-step = the same for collect+update seconds per env step;",
    "reached = runs that hit the threshold (tdrl, tianshou)",
)


def _configs() -> list[tuple[str, str]]:
    wanted = [a for a in os.environ.get("BENCH_ZOO_ALGOS", "").split(",") if a.strip()]
    return [(a, t) for a, t in CONFIGS if (not wanted or a in wanted) and a not in SKIPPED]


def main() -> None:
    """Train every configuration for every seed with both libraries and print the table."""
    begin = time.perf_counter()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="No target network updater")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for algo, why in SKIPPED.items():
        print(f"{algo.upper():<8} left out: {why}", flush=True)
    configs = _configs()
    spent = {run_tdrl: 0.0, run_tianshou: 0.0}
    for algo, task in configs:
        for fn in spent:
            t0 = time.perf_counter()
            fn(algo, task, 0, small=True)
            spent[fn] += time.perf_counter() - t0
    print(
        f"untimed warm-up (tiny runs of every config): tdrl {spent[run_tdrl]:.1f} s, "
        f"tianshou {spent[run_tianshou]:.1f} s; seeds {SEEDS}",
        flush=True,
    )
    summaries: list[str] = []
    for algo, task in configs:
        threshold = preset(algo).threshold
        name = f"{algo.upper()} {task} >= {threshold:g}"
        ours, peer = train_both(name, algo, task, SEEDS)
        w_ours, w_peer = _mean([r.wall for r in ours]), _mean([r.wall for r in peer])
        s_ours, s_peer = _mean([r.steps for r in ours]), _mean([r.steps for r in peer])
        reached = (
            f"{sum(r.reached for r in ours)}/{len(ours)} {sum(r.reached for r in peer)}/{len(peer)}"
        )
        summaries.append(
            f"{algo.upper():<8} {task:<12} {threshold:>5g} | {w_ours:6.1f} {s_ours:7.0f} | "
            f"{w_peer:6.1f} {s_peer:7.0f} | {w_ours / w_peer:4.2f}x | "
            f"{_per_kstep(ours) / _per_kstep(peer):4.2f}x | {reached}"
        )
    print("\n" + "\n".join(LEGEND))
    print(
        f"{'algo':<8} {'task':<12} {'thr':>5} | {'tdrl':>6} {'steps':>7} | "
        f"{'tshou':>6} {'steps':>7} | ratio | per-step | reached"
    )
    for line in summaries:
        print(line, flush=True)
    print(f"(bench_train_zoo took {time.perf_counter() - begin:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
