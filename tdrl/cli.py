"""The ``tdrl`` command: ``tdrl train ALGO TASK [options]`` and ``tdrl plot RUN_DIR...``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the subcommand; return the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "plot":
        from tdrl.utils.plot import plot_main

        return plot_main(argv[1:])
    parser = argparse.ArgumentParser(prog="tdrl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train an agent with a tested preset")
    train.add_argument("algo", choices=["dqn", "ppo", "sac"])
    train.add_argument("task", nargs="?", default=None, help="gymnasium id")
    sub.add_parser("plot", help="draw learning curves: tdrl plot RUN_DIR... --out curve.png")
    from tdrl.launch import add_train_arguments, config_from_args, run_experiment

    add_train_arguments(train)
    args = parser.parse_args(argv)
    run_experiment(config_from_args(args.algo, args.task, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
