"""The command line of the scripts in ``recipes/``: a few run flags and the preset's fields.

A recipe's defaults are ``tdrl train``'s: the registry preset of its algorithm for the
chosen task, every field a flag (:func:`tdrl.cli.args.add_preset_flags`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from tdrl.cli import args as flags
from tdrl.errors import PresetError
from tdrl.experiment.config import LOGGERS
from tdrl.presets import registry

__all__ = ["parse_recipe_args"]


def parse_recipe_args(
    algo: str,
    task: str,
    argv: Sequence[str] | None = None,
    *,
    description: str | None = None,
    dataset: bool = False,
    loggers: Sequence[str] = LOGGERS,
) -> tuple[argparse.Namespace, Any]:
    """A recipe's command line: its run flags and the registry preset they select (typed
    ``Any``: its class, hence its fields, depends on ``algo`` and the task).

    The run flags are ``--task`` (default ``task``), ``--seed``, ``--logger`` (one of
    ``loggers``, default :data:`~tdrl.experiment.config.LOGGERS`), ``--logdir``,
    ``--no-progress`` and, with ``dataset=True``, a required ``--dataset
    FILE.hdf5|minari:NAME``. Every field of ``algo``'s preset for the chosen task is a flag,
    as in ``tdrl train``, and the preset returned is ``registry.preset(algo, args.task,
    **given_fields)``. ``--help`` lists each field with the preset's value; a bad value
    exits with status 2 and one line naming the flag, as ``tdrl train`` does.

    >>> args, p = parse_recipe_args("dqn", "CartPole-v1", ["--lr", "3e-4", "--seed", "3"])
    >>> args.task, args.seed, args.logger, args.logdir, p.lr, p.gamma
    ('CartPole-v1', 3, 'csv', 'runs', 0.0003, 0.9)
    >>> parse_recipe_args("sac", "Hopper-v5", [])[1].hidden_sizes  # the MuJoCo preset
    (256, 256)
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--task", default=task)
    chosen = pre.parse_known_args(argv)[0].task
    parser = flags.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--task", default=task, help=f"gymnasium id (default {task})")
    flags.add_run_flags(parser, only=("seed", "logdir", "no_progress"))
    parser.add_argument(
        "--logger",
        choices=loggers,
        default="csv",
        help="log backend beside the CSV files every run writes (default csv)",
    )
    if dataset:
        parser.add_argument(
            "--dataset",
            required=True,
            metavar="FILE.hdf5|minari:NAME",
            help="the transitions to learn from: an HDF5 replay buffer (e.g. from "
            "`tdrl gather`) or minari:NAME",
        )
    try:
        base = registry.preset(algo, chosen)
    except PresetError as exc:
        flags.fail(parser.prog, f"argument --task: {str(exc).splitlines()[0]}")
    flags.add_preset_flags(parser, base)  # --lr, --gamma, --hidden-sizes ...
    args = parser.parse_args(argv)
    fields, source = flags.given_fields(args)
    try:
        return args, registry.preset(algo, args.task, **fields)
    except PresetError as exc:
        flags.fail(parser.prog, str(flags.field_error(exc, source)))
