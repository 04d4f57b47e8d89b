"""The ``tdrl`` command: ``tdrl train ALGO TASK [options]``, ``plot``, ``eval``, ``gather``,
``bench`` and ``report``.

Parsing needs only :mod:`tdrl.registry` (plain data): ``--help`` and argument errors never
import torch. A preset or space error (no preset for the task's family, a bad override, an
action space the algorithm cannot handle) exits with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from tdrl import registry

LOGGERS = ("csv", "console", "tensorboard", "wandb", "none")


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line flags of ``tdrl train`` and the recipes."""
    parser.add_argument("--task", default=None, help="gymnasium id (default: the preset's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--logger", choices=LOGGERS, default="csv")
    parser.add_argument("--logdir", default="runs")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--step-per-epoch", type=int, default=None)
    parser.add_argument("--training-num", type=int, default=None)
    parser.add_argument("--test-num", type=int, default=None)
    parser.add_argument("--stop-reward", type=float, default=None)
    parser.add_argument(
        "--checkpoint", action="store_true", help="save a full checkpoint after every epoch"
    )
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--dataset",
        default=None,
        metavar="FILE.hdf5",
        help="offline/imitation algorithms: the transitions to learn from (an HDF5 replay "
        "buffer, e.g. from tdrl gather, or minari:NAME)",
    )
    parser.add_argument(
        "--icm", action="store_true", help="add the intrinsic curiosity module's reward"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="FIELD=VALUE",
        help="override a preset field, e.g. --set lr=3e-4 (repeatable)",
    )


def _user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's mistake (reported in one line) rather than a bug."""
    return isinstance(exc, registry.PresetError) or type(exc).__module__ == "gymnasium.error"


def run_train(algo: str, task: str | None, args: argparse.Namespace) -> int:
    """Run ``tdrl train`` (or a recipe) for parsed flags; 2 on a preset or task error."""
    try:
        from tdrl.launch import config_from_args, run_experiment

        run_experiment(config_from_args(algo, task, args))
    except Exception as exc:
        if not _user_error(exc):
            raise
        print(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, file=sys.stderr)
        return 2
    return 0


COMMANDS = {
    "plot": ("tdrl.utils.plot:plot_main", "draw learning curves: tdrl plot RUN_DIR... --out X.png"),
    "eval": ("tdrl.commands.eval:main", "play a trained run's policy: tdrl eval RUN_DIR"),
    "gather": (
        "tdrl.commands.gather:main",
        "train an expert, then save its transitions: tdrl gather EXPERT TASK",
    ),
    "bench": ("tdrl.commands.bench:main", "a multi-seed benchmark sweep with a report"),
    "report": ("tdrl.commands.report:main", "the report of a benchmark directory"),
}
"""Subcommands beside ``train``: name -> (``"module:function"`` taking the remaining
arguments and returning the exit status, help line). Each module parses its own flags."""


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the subcommand; return the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        import importlib

        module, _, name = COMMANDS[argv[0]][0].partition(":")
        command: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
        return command(argv[1:])
    parser = argparse.ArgumentParser(prog="tdrl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an agent with a tested preset")
    train.add_argument("algo", choices=registry.algorithms())
    train.add_argument("task", nargs="?", default=None, help="gymnasium id")
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text)
    add_train_arguments(train)
    args = parser.parse_args(argv)
    return run_train(args.algo, args.task, args)


if __name__ == "__main__":
    raise SystemExit(main())
