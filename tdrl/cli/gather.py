"""``tdrl gather EXPERT TASK``: train an expert, then save its transitions as a dataset.

::

    tdrl gather EXPERT TASK [--out FILE.hdf5] [--steps N] [--seed S] [--no-progress]

1. train EXPERT's registry preset on TASK (:func:`tdrl.experiment.build.build_experiment`, then
   :meth:`~tdrl.experiment.run.Experiment.run`) until it reaches the preset's stop threshold; a run
   that ends below it is an error (exit 1) and writes nothing;
2. roll the trained policy out in one training env, with the exploration it trained with
   (the registry entry's ``exploration_noise``, inside a training step: SAC samples its
   actions, DQN acts epsilon-greedily with its final training epsilon), for ``N``
   transitions (default 20,000, as Tianshou's gather scripts);
3. save them as a :class:`~tdrl.data.buffer.ReplayBuffer` in HDF5 (``--out``, default
   ``EXPERT-TASK.hdf5`` in the working directory) and print one line: transitions,
   episodes and the rollout's mean episode return.

The file is written under a temporary name and renamed when complete, so a failed or
interrupted run leaves nothing behind. Argument errors exit with status 2 and one line.

>>> main(["dqn", "CartPole-v1", "--steps", "0"])
2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

from tdrl.cli.args import positive_int
from tdrl.errors import PresetError

__all__ = ["DEFAULT_STEPS", "GatherError", "gather", "main", "parse_args"]

DEFAULT_STEPS = 20_000
"""Transitions gathered by default (Tianshou's gather scripts' buffer size)."""


class GatherError(RuntimeError):
    """The expert did not reach its threshold: no dataset was written."""


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tdrl gather: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tdrl gather",
        description="Train EXPERT's preset on TASK to its threshold, then save N transitions "
        "of the trained policy (with its training-time exploration) as an HDF5 replay buffer.",
    )
    p.add_argument("expert", help="an online algorithm with a preset for TASK (e.g. sac, dqn)")
    p.add_argument("task", help="gymnasium id (e.g. Pendulum-v1, CartPole-v1)")
    p.add_argument("--out", default=None, metavar="FILE.hdf5", help="default: EXPERT-TASK.hdf5")
    p.add_argument("--steps", type=positive_int, default=DEFAULT_STEPS, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse and check the arguments (registry entry, output path); exit 2 on an error.

    >>> parse_args(["sac", "Pendulum-v1"]).out
    'sac-Pendulum-v1.hdf5'
    """
    from tdrl.presets import registry

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        entry = registry.entry(args.expert, args.task)
    except PresetError as err:
        parser.error(f"EXPERT TASK: {err}")
    try:
        env = entry.make_env(args.task, training=False)
    except Exception as err:  # e.g. gymnasium.error.NameNotFound
        if type(err).__module__ != "gymnasium.error":
            raise
        parser.error(f"TASK: {str(err).splitlines()[0]}")
    space = env.action_space
    env.close()
    kind = "discrete" if type(space).__name__ == "Discrete" else "continuous"
    if entry.action_space not in ("any", kind) or type(space).__name__ not in ("Discrete", "Box"):
        parser.error(
            f"EXPERT TASK: {args.expert} handles {entry.action_space} action spaces, "
            f"got {type(space).__name__} actions on {args.task}"
        )
    if entry.trainer == "offline" or entry.needs_dataset:
        parser.error(
            f"EXPERT: expected an algorithm that trains online, got {args.expert!r}, "
            "which learns from a dataset"
        )
    if getattr(entry.preset, "obs_norm", False) or getattr(entry.preset, "frames_stack", 1) > 1:
        parser.error(
            f"EXPERT: expected a preset on raw observations, got {args.expert!r} on "
            f"{args.task}, which normalizes or stacks them"
        )
    if args.out is None:
        args.out = f"{args.expert}-{args.task.replace('/', '_')}.hdf5"
    out = Path(args.out)
    if out.is_dir():
        parser.error(f"--out: expected a file path, got the directory {args.out!r}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        parser.error(f"--out: expected a path in an existing directory, got {args.out!r}")
    if not os.access(parent, os.W_OK):
        parser.error(f"--out: expected a writable directory, got {str(parent)!r}")
    return args


def gather(
    expert: str,
    task: str,
    out: str | os.PathLike[str],
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Train ``expert`` on ``task`` to its threshold, roll it out for ``steps`` transitions
    and save them to ``out``; return what was written (``transitions``, ``episodes``,
    ``mean_return``, ``best_reward``, ``out``). Raises :class:`GatherError` (and writes
    nothing) if the expert misses its threshold."""
    import torch

    from tdrl.algorithm import within_training_step
    from tdrl.data.buffer import ReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.data.datasets import describe
    from tdrl.env import DummyVectorEnv
    from tdrl.experiment import ExperimentConfig, build_experiment

    out = Path(out)
    with tempfile.TemporaryDirectory() as logs:
        cfg = ExperimentConfig(
            algo=expert,
            task=task,
            seed=seed,
            logger="none",
            log_dir=logs,
            show_progress=show_progress,
            plot=False,
        )
        exp = build_experiment(cfg)
        result = exp.run(summary=False)  # its logs go with the temporary directory
    threshold = exp.preset.threshold
    best = result.best_trained_reward  # a test after training began
    if threshold is not None and best < threshold:
        raise GatherError(
            f"{expert} on {task} reached {best:.1f}, below its threshold "
            f"{threshold}: no dataset written"
        )
    print(
        f"gather: the expert {expert} reached a test return of {best:.1f} in "
        f"{result.env_step} env steps (its training logs are not kept)",
        flush=True,
    )
    policy = exp.algorithm.policy
    preset, entry = exp.preset, exp.entry
    env = DummyVectorEnv([lambda: entry.make_env(task, preset, training=True)])
    buffer = ReplayBuffer(steps)
    collector = Collector(policy, env, buffer, exploration_noise=entry.exploration_noise)
    try:
        collector.reset(seed=seed)
        with within_training_step(policy), torch.no_grad():
            collector.collect(n_step=steps)
    finally:
        env.close()
    stats = describe(buffer)
    fd, tmp = tempfile.mkstemp(suffix=".hdf5.part", dir=out.parent if str(out.parent) else ".")
    os.close(fd)
    try:
        buffer.save_hdf5(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    return {**stats, "best_reward": best, "out": str(out)}


def main(argv: list[str]) -> int:
    """Run ``tdrl gather``; return the exit status (2: bad arguments, 1: threshold missed)."""
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or an argument error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        info = gather(
            args.expert,
            args.task,
            args.out,
            steps=args.steps,
            seed=args.seed,
            show_progress=not args.no_progress,
        )
    except GatherError as err:
        print(f"tdrl gather: {err}", file=sys.stderr)
        return 1
    print(
        f"gather: wrote {info['transitions']} transitions ({info['episodes']} finished "
        f"episodes, mean episode return {info['mean_return']:.1f}) of {args.expert} on "
        f"{args.task} to {info['out']}",
        flush=True,
    )
    return 0
