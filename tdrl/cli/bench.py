"""``tdrl bench``: train every algorithm x task x seed with its preset, then report.

::

    tdrl bench --algos sac,td3 --tasks Hopper-v5,HalfCheetah-v5 --seeds 3 --env-steps N \\
        --out DIR [--logger wandb|tensorboard|csv] [--workers K] [--backend local|ray]

Each run (seeds ``0 .. S-1``) trains for ``N`` env steps with its preset (MuJoCo presets
for the v5 tasks), never stopping early, in its own process, ``K`` at a time (default: one
per CPU core); see :mod:`tdrl.benchmark`. Its logs go to ``DIR/ALGO/TASK/seedS/``: CSV
always, plus W&B (the default; offline unless ``WANDB_MODE=online``, as ``tdrl train``) or
TensorBoard.
Re-running the same command skips the finished runs and resumes the interrupted ones from
their checkpoints. At the end ``DIR/report.md`` and ``DIR/curves.png`` are written
(``tdrl report DIR`` rewrites them). A bad flag exits with status 2 and one line.

``tdrl bench --to-threshold ALGO:TASK ... [--seeds N] [--workers K] [--out FILE]
[--dataset D] [--threshold X] [--table]`` is the other kind of sweep: each run stops at its
task's threshold and one JSON line per run (reached or not, steps to the threshold) goes
to ``FILE`` (default ``sweeps/results.jsonl``), resumably; see
:mod:`tdrl.benchmark.seed_sweep` (``scripts/seed_sweep.py`` is the same command).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tdrl.cli.args import ArgumentParser, positive_int

__all__ = ["TO_THRESHOLD", "build_parser", "main", "parse_args"]

TO_THRESHOLD = "--to-threshold"
"""First flag of the seed sweep to a threshold (:mod:`tdrl.benchmark.seed_sweep`)."""


def _csv(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def _action_space(task: str) -> str:
    """``"discrete"`` or ``"continuous"``: the kind of ``task``'s action space (the env is
    made and closed; registry entries without a wrapper act on it as it is)."""
    import gymnasium

    env = gymnasium.make(task)
    try:
        return (
            "discrete" if isinstance(env.action_space, gymnasium.spaces.Discrete) else "continuous"
        )
    finally:
        env.close()


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``tdrl bench``."""
    p = ArgumentParser(
        prog="tdrl bench",
        description="Train every algorithm x task x seed with its preset (never stopping "
        "early), resumably, then write OUT/report.md and OUT/curves.png.",
        epilog=f"tdrl bench {TO_THRESHOLD} ALGO:TASK ...: the seed sweep to each task's "
        f"threshold instead (tdrl bench {TO_THRESHOLD} --help).",
    )
    p.add_argument("--algos", type=_csv, required=True, help="comma-separated: sac,td3,ppo")
    p.add_argument("--tasks", type=_csv, required=True, help="comma-separated gymnasium ids")
    p.add_argument("--seeds", type=positive_int, default=3, help="how many seeds: 3 = 0, 1, 2")
    p.add_argument(
        "--env-steps", type=positive_int, required=True, help="training env steps per run"
    )
    p.add_argument("--out", required=True, help="the sweep's directory")
    p.add_argument(
        "--logger",
        choices=("wandb", "tensorboard", "csv"),
        default="wandb",
        help="beside the CSV (W&B: offline unless WANDB_MODE=online, as tdrl train)",
    )
    p.add_argument(
        "--workers", type=positive_int, default=None, help="runs at a time (default: cores)"
    )
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local processes, or Ray tasks (RAY_ADDRESS, else a local instance)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="FIELD=VALUE",
        help="override a preset field in every run, e.g. --set test_num=5 (repeatable)",
    )
    p.add_argument("--wandb-project", default="tdrl-bench", help="W&B project")
    p.add_argument("--last-k", type=positive_int, default=5, help="last tests pooled in the IQM")
    p.add_argument(
        "--keep-checkpoints", action="store_true", help="keep finished runs' checkpoints"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[Any]]:
    """Parse and check the flags; return them and the sweep's run specs.

    Every problem (an unknown algorithm, a task without a preset, a bad override, a budget
    that differs from the one ``--out`` was started with) exits with status 2 and one line.

    >>> args, specs = parse_args(["--algos", "sac", "--tasks", "Pendulum-v1", "--seeds", "2",
    ...                           "--env-steps", "100", "--out", "/tmp/b", "--logger", "csv"])
    >>> [s.name for s in specs], args.backend
    (['sac-Pendulum-v1-0', 'sac-Pendulum-v1-1'], 'local')
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from pathlib import Path

    from tdrl import presets
    from tdrl.benchmark.plan import SPEC_FILE, plan_sweep, read_json
    from tdrl.experiment import parse_overrides

    try:
        overrides = parse_overrides(args.set)
    except ValueError as exc:
        parser.error(f"--set: {exc}")
    known = presets.algorithms()
    for algo in args.algos:
        if algo not in known:
            parser.error(f"--algos: expected names from {', '.join(known)}, got {algo!r}")
    import gymnasium

    spaces = {}
    for task in args.tasks:
        try:
            gymnasium.spec(task)
        except gymnasium.error.Error as exc:
            parser.error(f"--tasks: {task!r} is not a gymnasium id ({str(exc).splitlines()[0]})")
        spaces[task] = _action_space(task)
    for algo in args.algos:
        for task in args.tasks:
            try:
                entry = presets.entry(algo, task)
                presets.preset(algo, task, **overrides)
            except presets.PresetError as exc:
                parser.error(str(exc).splitlines()[0])
            if entry.needs_dataset:
                parser.error(f"--algos: {algo} learns from a dataset; tdrl bench trains online")
            if entry.action_space not in ("any", spaces[task]):
                parser.error(
                    f"--algos: {algo} needs a {entry.action_space} action space; {task} has "
                    f"a {spaces[task]} one"
                )
    specs = plan_sweep(
        args.algos,
        args.tasks,
        args.seeds,
        args.env_steps,
        str(Path(args.out).resolve()),
        logger=args.logger,
        overrides=overrides,
        wandb_project=args.wandb_project,
    )
    for spec in specs:
        old = (read_json(spec.dir / SPEC_FILE) or {}).get("spec")
        if old is not None and int(old.get("env_steps", args.env_steps)) != args.env_steps:
            parser.error(
                f"--env-steps: {spec.dir} was started with {old['env_steps']}, got "
                f"{args.env_steps} (use the same budget to resume, or another --out)"
            )
    return args, specs


def main(argv: list[str] | None = None) -> int:
    """Run ``tdrl bench``; 0 when every run finished, 1 when one failed, 2 on bad flags."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [TO_THRESHOLD]:
        from tdrl.benchmark.seed_sweep import main as seed_sweep

        return seed_sweep(argv[1:], prog=f"tdrl bench {TO_THRESHOLD}")
    args, specs = parse_args(argv)
    from tdrl.benchmark.pool import run_sweep
    from tdrl.benchmark.report import write_report

    result = run_sweep(
        specs,
        workers=args.workers,
        backend=args.backend,
        show_progress=not args.no_progress,
        keep_checkpoints=args.keep_checkpoints,
    )
    print(
        f"tdrl bench: {len(result.finished)} runs finished, {len(result.skipped)} already "
        f"done, {len(result.failed)} failed"
        + (f", {len(result.busy)} running in another process" if result.busy else ""),
        flush=True,
    )
    for spec, why in result.failed:
        print(f"  failed: {spec.name}: {why}", file=sys.stderr)
    try:
        report, png = write_report(args.out, last_k=args.last_k)
        print(f"report: {report}\ncurves: {png}", flush=True)
    except FileNotFoundError as exc:
        print(f"tdrl bench: no report: {exc}", file=sys.stderr)
    return 0 if result.ok else 1
