"""Plot learning curves from :class:`~tdrl.utils.logger.CSVLogger` run directories.

A *run* is a directory holding ``<scope>.csv`` files. A directory without them whose
sub-directories are runs is a *group* (e.g. one sub-directory per seed). Each group is drawn as
its mean over runs ± one standard deviation against the scope's step (``env_step`` for the
``train`` and ``test`` scopes), on the steps common to all its runs (linear interpolation).

Command line (``tdrl plot ...`` calls :func:`plot_main`)::

    tdrl plot runs/seed0 runs/seed1 --key test/returns_stat/mean --out curve.png
    tdrl plot results/tdrl_ppo results/tianshou_ppo --out compare.png   # two groups
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tdrl.utils.logger.csv import read_csv_log

__all__ = ["load_curve", "plot_main", "plot_runs"]

DEFAULT_KEY = "test/returns_stat/mean"


def _scope_file(run_dir: Path, key: str) -> Path:
    scope = key.split("/", 1)[0]
    return run_dir / f"{scope}.csv"


def load_curve(
    run_dir: str | os.PathLike[str], key: str = DEFAULT_KEY
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of ``key`` in one run (rows where the key is missing are dropped)."""
    path = _scope_file(Path(run_dir), key)
    if not path.is_file():
        raise FileNotFoundError(f"run {run_dir}: expected a log file {path.name}, none found")
    columns = read_csv_log(path)
    if key not in columns:
        keys = [k for k in columns if "/" in k]
        raise KeyError(f"run {run_dir}: key {key!r} not logged; logged keys: {keys}")
    step_name = next(iter(columns))
    steps, values = np.asarray(columns[step_name]), np.asarray(columns[key])
    keep = ~np.isnan(values)
    return steps[keep], values[keep]


def _groups(paths: Sequence[str | os.PathLike[str]], key: str) -> dict[str, list[Path]]:
    """Map each command-line path to its label and runs (itself, or its run sub-dirs)."""
    groups: dict[str, list[Path]] = {}
    loose: list[Path] = []
    for p in map(Path, paths):
        if _scope_file(p, key).is_file():
            loose.append(p)
            continue
        runs = sorted(d for d in p.iterdir() if _scope_file(d, key).is_file()) if p.is_dir() else []
        if not runs:
            raise FileNotFoundError(
                f"{p}: expected a run directory with {_scope_file(p, key).name} "
                "(or sub-directories that are runs)"
            )
        groups[p.name] = runs
    if loose:
        groups = {Path(os.path.commonpath(loose)).name or "runs": loose, **groups}
    return groups


def mean_std(
    curves: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std over runs, on the union of steps inside the range all runs cover.

    >>> a = (np.array([0, 10]), np.array([0.0, 10.0]))
    >>> b = (np.array([0, 5, 10]), np.array([2.0, 2.0, 2.0]))
    >>> steps, mean, std = mean_std([a, b])
    >>> steps.tolist(), mean.tolist(), std.tolist()
    ([0.0, 5.0, 10.0], [1.0, 3.5, 6.0], [1.0, 1.5, 4.0])
    """
    lo = max(float(s[0]) for s, _ in curves)
    hi = min(float(s[-1]) for s, _ in curves)
    grid = np.unique(np.concatenate([s for s, _ in curves]).astype(np.float64))
    grid = grid[(grid >= lo) & (grid <= hi)]
    ys = np.stack([np.interp(grid, s, v) for s, v in curves])
    return grid, ys.mean(axis=0), ys.std(axis=0)


def plot_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    key: str = DEFAULT_KEY,
    out: str | os.PathLike[str] = "curve.png",
    title: str | None = None,
) -> Path:
    """Draw mean ± std over runs of ``key`` against the scope's step; save a PNG to ``out``.

    :param run_dirs: run directories, or group directories whose sub-directories are runs.
    :param key: the logged key, e.g. ``"test/returns_stat/mean"``.
    :param out: the PNG path.
    :param title: the figure title (default: the key).
    :return: the path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not run_dirs:
        raise ValueError("run_dirs: expected at least one run directory, got none")
    groups = _groups(run_dirs, key)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    x_label = "step"
    for label, runs in groups.items():
        curves = [load_curve(r, key) for r in runs]
        curves = [c for c in curves if len(c[0])]
        if not curves:
            continue
        x_label = next(iter(read_csv_log(_scope_file(runs[0], key))))
        steps, mean, std = mean_std(curves)
        (line,) = ax.plot(steps, mean, label=f"{label} (n={len(curves)})")
        ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.25)
    ax.set_xlabel(x_label)
    ax.set_ylabel(key)
    ax.set_title(title or key)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, format="png", dpi=120)
    plt.close(fig)
    return out_path


def plot_main(argv: list[str] | None = None) -> int:
    """The ``tdrl plot`` subcommand: parse ``argv``, draw, return an exit status (0 = ok)."""
    parser = argparse.ArgumentParser(
        prog="tdrl plot", description="Plot mean ± std learning curves of CSV-logged runs."
    )
    parser.add_argument("run_dirs", nargs="+", help="run directories (or groups of runs)")
    parser.add_argument("--key", default=DEFAULT_KEY, help=f"logged key (default {DEFAULT_KEY})")
    parser.add_argument("--out", default="curve.png", help="output PNG (default curve.png)")
    parser.add_argument("--title", default=None, help="figure title (default: the key)")
    args = parser.parse_args(argv)
    try:
        path = plot_runs(args.run_dirs, key=args.key, out=args.out, title=args.title)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"tdrl plot: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(plot_main())
