"""Learning curves of ``tdrl train`` runs: one band per algorithm and task, mean ± std over
seeds.

A *run* is a directory holding ``<scope>.csv`` logs (every ``tdrl train`` run writes them,
whatever its logger) or TensorBoard event files. ``tdrl plot`` takes runs, or directories
to search for runs (``tdrl plot runs/``), and groups them by algorithm and task (read from
each run's ``config.yaml``, else from its name ``ALGO-TASK-seedS[-N]``; runs with neither are
grouped by the directory given on the command line). Each group is drawn as the mean over
its runs ± one standard deviation: every run is interpolated linearly onto the union of all
its group's logged steps, inside its own range only (a run that stopped early counts up to
its last point; nothing is cut to the shortest run). Axes and legend are in words ("test
return", "env steps", "dqn on CartPole-v1 (5 runs)").

Command line (``tdrl plot ...``: :func:`tdrl.cli.plot.main`)::

    tdrl plot runs/ --out curves.png                          # every run under runs/
    tdrl plot runs/dqn-CartPole-v1-seed* runs/ppo-CartPole-v1-seed* --out compare.png
    tdrl plot results/tdrl_ppo results/tianshou_ppo --key train/returns_stat/mean
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tdrl.utils.logger.csv import read_csv_log

__all__ = ["DEFAULT_KEY", "align", "discover_runs", "group_runs", "load_curve", "plot_runs"]

DEFAULT_KEY = "test/returns_stat/mean"
_RUN_NAME = re.compile(r"^(?P<algo>[A-Za-z0-9_]+)-(?P<task>.+)-seed(?P<seed>\d+)(?:-\d+)?$")
_SCOPES = ("train", "test", "update", "info", "save")
_STEP_WORDS = {"env_step": "env steps", "gradient_step": "gradient steps", "epoch": "epochs"}
_KEY_WORDS = {
    "test/returns_stat/mean": "test return",
    "train/returns_stat/mean": "training return",
    "test/lens_stat/mean": "test episode length",
    "train/lens_stat/mean": "training episode length",
}


def _scope_file(run_dir: Path, key: str) -> Path:
    scope = key.split("/", 1)[0]
    return run_dir / f"{scope}.csv"


def _events(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("events.out.tfevents.*"))


def _is_run(path: Path) -> bool:
    return path.is_dir() and (
        any((path / f"{s}.csv").is_file() for s in _SCOPES) or bool(_events(path))
    )


def load_curve(
    run_dir: str | os.PathLike[str], key: str = DEFAULT_KEY
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of ``key`` in one run, from its CSV log (or, without one, its
    TensorBoard event files); rows where the key is missing are dropped."""
    run = Path(run_dir)
    path = _scope_file(run, key)
    if not path.is_file() and _events(run):
        from tdrl.utils.logger.tensorboard import read_tensorboard_scalars

        scalars = read_tensorboard_scalars(run)
        if key not in scalars:
            raise KeyError(f"run {run_dir}: key {key!r} not logged; logged keys: {list(scalars)}")
        series = scalars[key]
        return (
            np.asarray([s for s, _ in series], dtype=np.float64),
            np.asarray([v for _, v in series], dtype=np.float64),
        )
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


def discover_runs(paths: Sequence[str | os.PathLike[str]]) -> dict[Path, list[Path]]:
    """``{path given: its runs}``: the path itself if it is a run, else the runs found in
    it (searched down to three levels), sorted."""
    found: dict[Path, list[Path]] = {}
    for p in map(Path, paths):
        if _is_run(p):
            found[p] = [p]
            continue
        runs: list[Path] = []
        if p.is_dir():
            for pattern in ("*", "*/*", "*/*/*"):
                runs += [d for d in p.glob(pattern) if _is_run(d)]
        if not runs:
            raise FileNotFoundError(
                f"{p}: expected a run directory (CSV logs or TensorBoard event files) or a "
                "directory of runs, found none"
            )
        found[p] = sorted(set(runs))
    return found


_NOT_CONFIG = {"algo", "task", "seed", "logdir", "log_dir", "run_dir", "checkpoint", "logger"}
"""``config.yaml`` keys that do not make a different configuration (where and how a run
logs, its seed)."""


def _config(run: Path) -> dict[str, object]:
    """A run's ``config.yaml`` as a dict (empty without one or when unreadable)."""
    cfg = run / "config.yaml"
    if not cfg.is_file():
        return {}
    try:
        import yaml

        data = yaml.safe_load(cfg.read_text())
    except Exception:  # a hand-edited file: fall back to the name
        return {}
    return data if isinstance(data, dict) else {}


def _identity(run: Path) -> tuple[str, str] | None:
    """``(algo, task)`` of a run: its ``config.yaml``, else its directory name."""
    data = _config(run)
    if data.get("algo") and data.get("task"):
        return str(data["algo"]), str(data["task"])
    m = _RUN_NAME.match(run.name)
    return (m.group("algo"), m.group("task")) if m else None


def _by_configuration(label: str, runs: list[Path]) -> dict[str, list[Path]]:
    """Split one algorithm-and-task group by configuration (``config.yaml`` beside the
    seed and the log settings); each part's label names the values that differ."""
    configs = [{k: v for k, v in _config(r).items() if k not in _NOT_CONFIG} for r in runs]
    keys = sorted({k for c in configs for k in c})
    differ = [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]
    if not differ:
        return {label: runs}
    parts: dict[str, list[Path]] = {}
    for run, c in zip(runs, configs):
        what = ", ".join(f"{k}={c.get(k)}" for k in differ)
        parts.setdefault(f"{label} [{what}]", []).append(run)
    return parts


def group_runs(paths: Sequence[str | os.PathLike[str]]) -> dict[str, list[Path]]:
    """Runs grouped by algorithm, task and configuration (``"ALGO on TASK"``, with the
    differing settings in brackets when runs of one algorithm and task were configured
    differently); runs without algorithm and task are grouped by the command-line path
    they were found under.

    >>> import tempfile
    >>> from tdrl.utils.logger import CSVLogger
    >>> root = Path(tempfile.mkdtemp())
    >>> for name in ("dqn-CartPole-v1-seed0", "dqn-CartPole-v1-seed1", "ppo-CartPole-v1-seed0"):
    ...     CSVLogger(root / name).log_test_data({"returns_stat": {"mean": 1.0}}, 10)
    >>> for label, runs in group_runs([root]).items():
    ...     print(label, [r.name for r in runs])
    dqn on CartPole-v1 ['dqn-CartPole-v1-seed0', 'dqn-CartPole-v1-seed1']
    ppo on CartPole-v1 ['ppo-CartPole-v1-seed0']
    """
    found = discover_runs(paths)
    loose = [p for p, runs in found.items() if runs == [p]]
    groups: dict[str, list[Path]] = {}
    for given, runs in found.items():
        for run in runs:
            ident = _identity(run)
            if ident is not None:
                label = f"{ident[0]} on {ident[1]}"
            elif runs == [given]:  # a loose run: grouped with the other loose runs
                label = Path(os.path.commonpath(loose)).name or "runs"
            else:
                label = given.name or str(given)
            groups.setdefault(label, []).append(run)
    out: dict[str, list[Path]] = {}
    for label, runs in groups.items():
        out.update(_by_configuration(label, runs))
    return out


def align(
    curves: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(grid, mean, std, count)`` over runs: each run interpolated linearly onto the union
    of all steps, inside its own range (``count``: the runs covering each step).

    >>> a = (np.array([0, 10]), np.array([0.0, 10.0]))
    >>> b = (np.array([0, 5]), np.array([2.0, 2.0]))  # stopped at step 5
    >>> grid, mean, std, n = align([a, b])
    >>> grid.tolist(), mean.tolist(), std.tolist(), n.tolist()
    ([0.0, 5.0, 10.0], [1.0, 3.5, 10.0], [1.0, 1.5, 0.0], [2, 2, 1])
    """
    grid = np.unique(np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in curves]))
    ys = np.full((len(curves), len(grid)), np.nan)
    for i, (s, v) in enumerate(curves):
        s = np.asarray(s, dtype=np.float64)
        inside = (grid >= s[0]) & (grid <= s[-1])
        ys[i, inside] = np.interp(grid[inside], s, np.asarray(v, dtype=np.float64))
    count = (~np.isnan(ys)).sum(axis=0)
    mean = np.nanmean(ys, axis=0)
    std = np.sqrt(np.nanmean((ys - mean) ** 2, axis=0))
    return grid, mean, std, count


def mean_std(
    curves: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std over runs on the steps inside the range *all* runs cover (the common
    range; :func:`align`, which :func:`plot_runs` uses, keeps every run's whole range).

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


OfflineTest = Callable[[str, str], bool]
"""``is_offline(algo, task)``: whether a run of ``algo`` on ``task`` logs its tests at
gradient steps (an offline algorithm's), for the x axis's words."""


def _x_words(run: Path, key: str, is_offline: OfflineTest | None = None) -> str:
    """The x axis of ``key`` in words: the CSV's step column (offline runs: their tests are
    logged at gradient steps)."""
    ident = _identity(run)
    if ident is not None and is_offline is not None and key.startswith("test/"):
        try:
            if is_offline(*ident):
                return "gradient steps"
        except Exception:  # an algorithm this install lacks
            pass
    path = _scope_file(run, key)
    if path.is_file():
        with open(path) as f:
            first = f.readline().split(",", 1)[0].strip()
        return _STEP_WORDS.get(first, first or "step")
    scope = key.split("/", 1)[0]
    return {"update": "gradient steps", "info": "epochs", "save": "epochs"}.get(scope, "env steps")


SPARSE_POINTS = 30
"""A curve with at most this many points is drawn with a marker at each."""


def _task_of(label: str) -> str:
    """The task of a group label ``"ALGO on TASK [...]"`` (``""`` for other labels)."""
    rest = label.split(" on ", 1)[1] if " on " in label else ""
    return rest.split(" [", 1)[0]


def plot_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    key: str = DEFAULT_KEY,
    out: str | os.PathLike[str] = "curve.png",
    title: str | None = None,
    is_offline: OfflineTest | None = None,
) -> Path:
    """Draw one mean ± std band of ``key`` per algorithm, task and configuration, one
    panel per task, markers on sparse curves; save a PNG to ``out``.

    :param run_dirs: run directories, or directories to search for runs.
    :param key: the logged key, e.g. ``"test/returns_stat/mean"``.
    :param out: the PNG path.
    :param title: the figure title (default: the key in words).
    :param is_offline: tells which runs log their tests at gradient steps (offline
        algorithms), for the x axis's words; the command line passes the registry's.
    :return: the path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not run_dirs:
        raise ValueError("run_dirs: expected at least one run directory, got none")
    groups = group_runs(run_dirs)
    y_words = _KEY_WORDS.get(key, key)
    # one panel per task (a group's task: the text after " on ", else one shared panel)
    tasks = sorted({_task_of(label) for label in groups})
    cols = min(3, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7 if cols == 1 else 5.2 * cols, 4.5 * rows),
                             squeeze=False)  # fmt: skip
    panels = dict(zip(tasks, axes.flat))
    x_words = "env steps"
    drawn = 0
    for label, runs in groups.items():
        curves = [load_curve(r, key) for r in runs]
        curves = [c for c in curves if len(c[0])]
        if not curves:
            continue
        ax = panels[_task_of(label)]
        x_words = _x_words(runs[0], key, is_offline)
        steps, mean, std, _ = align(curves)
        n = len(curves)
        # sparse tests (a few per run) get markers: a straight segment between two far
        # points would otherwise read as measured progress in between
        marker = "o" if len(steps) <= SPARSE_POINTS else None
        (line,) = ax.plot(
            steps, mean, marker=marker, ms=3, label=f"{label} ({n} run{'s' if n > 1 else ''})"
        )
        ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.25)
        drawn += 1
    for task, ax in panels.items():
        ax.set_xlabel(x_words)
        ax.set_ylabel(y_words + (" (mean ± std over runs)" if drawn else ""))
        ax.set_title(task if len(panels) > 1 else (title or f"{y_words} vs {x_words}"))
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    if len(panels) > 1:
        fig.suptitle(title or f"{y_words} vs {x_words}")
    fig.tight_layout()
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, format="png", dpi=120)
    plt.close(fig)
    return out_path
