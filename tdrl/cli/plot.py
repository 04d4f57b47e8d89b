"""``tdrl plot RUN_DIR... [--key KEY] [--out X.png] [--title T]``: learning curves of runs,
one mean ± std band per algorithm and task (:func:`tdrl.utils.plot.plot_runs`)."""

from __future__ import annotations

import argparse
import sys

from tdrl.presets import registry
from tdrl.utils.plot import DEFAULT_KEY, plot_runs

__all__ = ["main"]


def _is_offline(algo: str, task: str) -> bool:
    """Whether ``algo`` trains on a dataset (its tests are logged at gradient steps)."""
    return registry.entry(algo, task).trainer == "offline"


def main(argv: list[str] | None = None) -> int:
    """The ``tdrl plot`` subcommand: parse ``argv``, draw, return an exit status (0 = ok)."""
    parser = argparse.ArgumentParser(
        prog="tdrl plot",
        description="Plot learning curves: one mean ± std band per algorithm and task, over "
        "the seeds found (CSV logs or TensorBoard event files).",
    )
    parser.add_argument("run_dirs", nargs="+", help="run directories, or directories of runs")
    parser.add_argument("--key", default=DEFAULT_KEY, help=f"logged key (default {DEFAULT_KEY})")
    parser.add_argument("--out", default="curve.png", help="output PNG (default curve.png)")
    parser.add_argument("--title", default=None, help="figure title (default: the key in words)")
    args = parser.parse_args(argv)
    try:
        path = plot_runs(
            args.run_dirs, key=args.key, out=args.out, title=args.title, is_offline=_is_offline
        )
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"tdrl plot: error: {str(exc).strip(chr(34) + chr(39))}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0
