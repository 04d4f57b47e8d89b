"""The ``tdrl`` command: ``tdrl train ALGO [TASK] [flags]``, ``eval``, ``plot``, ``gather``,
``bench`` and ``report``.

Each subcommand is a module of :mod:`tdrl.cli` with a ``main(argv) -> exit status`` that
parses its own flags; ``tdrl train`` is :func:`tdrl.cli.train.train_main`. Help and argument
errors load no torch and are fast. A user error exits with status 2 and one line on stderr
naming the flag or file; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from tdrl.cli.args import ArgumentParser

__all__ = ["COMMANDS", "DESCRIPTION", "EPILOG", "main"]

DESCRIPTION = (
    "Train, evaluate and benchmark RL agents with tested presets: Tianshou's building "
    "blocks on TorchRL and TensorDict."
)
"""``tdrl --help``'s description: plain text (argparse shows docstrings' markup raw)."""
EPILOG = (
    "Start with: tdrl train ppo CartPole-v1. Every subcommand has --help (tdrl train ALGO "
    "TASK --help lists each preset field as a flag). A user error exits with status 2 and "
    "one line; --debug shows the traceback."
)

COMMANDS = {
    "plot": ("tdrl.cli.plot:main", "draw learning curves: tdrl plot RUN_DIR... --out X.png"),
    "eval": ("tdrl.cli.eval:main", "play a trained run's policy: tdrl eval RUN_DIR"),
    "gather": (
        "tdrl.cli.gather:main",
        "train an expert, then save its transitions: tdrl gather EXPERT TASK",
    ),
    "bench": ("tdrl.cli.bench:main", "a multi-seed benchmark sweep with a report"),
    "report": ("tdrl.cli.report:main", "the report of a benchmark directory"),
}
"""Subcommands beside ``train``: name -> (``"module:function"`` taking the remaining
arguments and returning the exit status, help line)."""


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the subcommand; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        module, _, name = COMMANDS[argv[0]][0].partition(":")
        command: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
        return command(argv[1:])
    if argv and argv[0] == "train":
        from tdrl.cli.train import train_main

        return train_main(argv[1:])
    parser = ArgumentParser(prog="tdrl", description=DESCRIPTION, epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("train", help="train an agent with a tested preset: tdrl train ALGO [TASK]")
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text)
    parser.parse_args(argv)  # --help, or an error: exits
    return 2
