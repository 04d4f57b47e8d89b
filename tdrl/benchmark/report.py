"""The report of a benchmark directory: ``report.md`` (a table) and ``curves.png``.

:func:`write_report` reads every run under ``OUT`` (``ALGO/TASK/seedS/test.csv``; a peer
library's runs under ``OUT/LIBRARY/ALGO/TASK/seedS/`` or in other directories given as
``peers``) and writes:

* ``OUT/report.md``: one row per library x algorithm x task: the average test return at
  the budget (the last test) and the best one over the run (mean ± std over seeds), the
  interquartile mean (IQM) with its 95% bootstrap confidence interval (:func:`iqm_ci`),
  training env steps, wall time per run and env steps per second; when several libraries
  ran the same algorithm and task, a side-by-side table of their returns at the budget;
* ``OUT/curves.png``: one panel per task, one colour per algorithm (dashed: a peer
  library), the mean test return over seeds with a band of ± one standard deviation.

Command line: ``tdrl report OUT [--peer DIR2] [--last-k K]``.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tdrl.benchmark.plan import DONE_FILE, PROGRESS_FILE, SPEC_FILE, read_json
from tdrl.benchmark.published import published_table

__all__ = [
    "LAST_K",
    "RunLog",
    "Summary",
    "iqm_ci",
    "load_runs",
    "plot_curves",
    "summarize",
    "write_report",
]

LAST_K = 5
"""Default number of final test points per run pooled into the IQM."""

CURVE_KEY = "test/returns_stat/mean"


@dataclass
class RunLog:
    """The test curve and bookkeeping of one run."""

    library: str
    algo: str
    task: str
    seed: int
    steps: np.ndarray
    returns: np.ndarray
    finished: bool
    env_step: int
    wall_s: float
    budget: int | None = None


def _read_curve(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Steps and mean test returns of a ``test.csv``; one row per step (the last logged)."""
    from tdrl.utils.logger.csv import read_csv_log

    columns = read_csv_log(path)
    if CURVE_KEY not in columns or not columns:
        return np.zeros(0), np.zeros(0)
    steps = np.asarray(next(iter(columns.values())), dtype=float)
    values = np.asarray(columns[CURVE_KEY], dtype=float)
    keep = ~np.isnan(values)
    by_step = dict(zip(steps[keep].tolist(), values[keep].tolist()))  # last row per step wins
    order = sorted(by_step)
    return np.asarray(order, dtype=float), np.asarray([by_step[s] for s in order], dtype=float)


def load_runs(dirs: Iterable[str | os.PathLike[str]]) -> list[RunLog]:
    """Every run (a directory with a ``test.csv``) under the given directories.

    A run's library, algorithm, task and seed come from its ``run.json``, else from its
    path: ``[LIBRARY/]ALGO/TASK/seedS``.
    """
    runs: list[RunLog] = []
    for base in map(Path, dirs):
        for path in sorted(base.rglob("test.csv")):
            d = path.parent
            parts = d.relative_to(base).parts
            if len(parts) < 3 or not parts[-1].startswith("seed") or "wandb" in parts:
                continue
            info = read_json(d / SPEC_FILE) or {}
            spec = info.get("spec", {})
            library = info.get("library") or (parts[-4] if len(parts) >= 4 else "tdrl")
            steps, returns = _read_curve(path)
            if not len(steps):
                continue
            done = read_json(d / DONE_FILE)
            progress = done or read_json(d / PROGRESS_FILE) or {}
            runs.append(
                RunLog(
                    library=str(library),
                    algo=str(spec.get("algo", parts[-3])),
                    task=str(spec.get("task", parts[-2])),
                    seed=int(spec.get("seed", parts[-1][4:] or 0)),
                    steps=steps,
                    returns=returns,
                    finished=done is not None,
                    env_step=int(progress.get("env_step", steps[-1])),
                    wall_s=float(progress.get("wall_s", float("nan"))),
                    budget=spec.get("env_steps"),
                )
            )
    return runs


def iqm_ci(scores: np.ndarray, reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """IQM of a ``[seeds, K]`` score matrix and its 95% bootstrap confidence interval.

    The K columns are a run's last K test points: rliable's stratified bootstrap resamples
    the seeds (with replacement) independently for each column, and the IQM (the mean of
    the middle 50% of all seeds x K scores) is taken over the whole matrix; the interval is
    the percentile interval over ``reps`` resamples. With 3 seeds the IQM over seeds alone
    is their plain mean and its interval [min, max]; pooling the last test points gives
    the estimate more values and an interval that reflects the variation between seeds
    and between the last tests.

    >>> s = np.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [10.0, 11.0, 12.0]])  # middle: 2 3 3 4 10
    >>> iqm, lo, hi = iqm_ci(s, reps=500)
    >>> round(iqm, 3), bool(lo <= iqm <= hi)
    (4.4, True)
    """
    from rliable import library as rly
    from rliable import metrics

    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.size == 0:
        raise ValueError(
            f"scores: expected a non-empty [seeds, K] matrix, got shape {scores.shape}"
        )
    with warnings.catch_warnings():  # rliable passes arch a RandomState (deprecated there)
        warnings.simplefilter("ignore", FutureWarning)
        point, interval = rly.get_interval_estimates(
            {"x": scores},
            lambda s: np.array([metrics.aggregate_iqm(s)]),
            reps=reps,
            random_state=np.random.RandomState(seed),
        )
    return float(point["x"][0]), float(interval["x"][0, 0]), float(interval["x"][1, 0])


@dataclass
class Summary:
    """One row of the report: a library's algorithm on a task over its seeds."""

    library: str
    algo: str
    task: str
    seeds: int
    finished: int
    final: tuple[float, float]
    best: tuple[float, float]
    iqm: tuple[float, float, float] | None
    last_k: int
    env_step: float
    wall_s: float
    steps_per_s: float


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def summarize(runs: Sequence[RunLog], last_k: int = LAST_K) -> list[Summary]:
    """One :class:`Summary` per library x algorithm x task (sorted: task, algorithm,
    tdrl first)."""
    groups: dict[tuple[str, str, str], list[RunLog]] = {}
    for r in runs:
        groups.setdefault((r.library, r.algo, r.task), []).append(r)
    out = []
    for (lib, algo, task), rs in groups.items():
        rs = sorted(rs, key=lambda r: r.seed)
        k = max(1, min(last_k, *(len(r.returns) for r in rs)))
        try:
            iqm: tuple[float, float, float] | None = iqm_ci(np.stack([r.returns[-k:] for r in rs]))
        except ImportError:
            iqm = None
        walls = [r.wall_s for r in rs if not math.isnan(r.wall_s)]
        steps = [r.env_step for r in rs]
        total_wall = sum(walls)
        out.append(
            Summary(
                library=lib,
                algo=algo,
                task=task,
                seeds=len(rs),
                finished=sum(r.finished for r in rs),
                final=_mean_std([r.returns[-1] for r in rs]),
                best=_mean_std([r.returns.max() for r in rs]),
                iqm=iqm,
                last_k=k,
                env_step=float(np.mean(steps)),
                wall_s=float(np.mean(walls)) if walls else float("nan"),
                steps_per_s=(
                    sum(r.env_step for r in rs if not math.isnan(r.wall_s)) / total_wall
                    if total_wall > 0
                    else float("nan")
                ),
            )
        )
    return sorted(out, key=lambda s: (s.task, s.algo, s.library != "tdrl", s.library))


def _duration(seconds: float) -> str:
    """``"1h 02m"``, ``"3m 05s"`` or ``"12.3 s"``.

    >>> _duration(3725), _duration(185), _duration(12.34)
    ('1h 02m', '3m 05s', '12.3 s')
    """
    if math.isnan(seconds):
        return "–"
    if seconds >= 3600:
        return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"
    if seconds >= 60:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{seconds:.1f} s"


def _pm(ms: tuple[float, float]) -> str:
    return f"{ms[0]:.1f} ± {ms[1]:.1f}"


def _markdown(summaries: list[Summary], runs: list[RunLog], last_k: int, title: str) -> str:
    libraries = sorted({s.library for s in summaries}, key=lambda x: (x != "tdrl", x))
    lines = [
        f"# {title}",
        "",
        f"Generated by `tdrl report` on {time.strftime('%Y-%m-%d %H:%M')} from {len(runs)} "
        f"runs ({sum(r.finished for r in runs)} finished); libraries: {', '.join(libraries)}.",
        "",
        "| library | algorithm | task | seeds (done) | return at budget | max return | "
        f"IQM [95% CI] (last {last_k} tests) | env steps | wall time / run | env steps/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        iqm = f"{s.iqm[0]:.1f} [{s.iqm[1]:.1f}, {s.iqm[2]:.1f}]" if s.iqm else "n/a (rliable)"
        if s.iqm and s.last_k != last_k:
            iqm += f" (last {s.last_k})"
        lines.append(
            f"| {s.library} | {s.algo} | {s.task} | {s.seeds} ({s.finished}) | {_pm(s.final)} "
            f"| {_pm(s.best)} | {iqm} | {s.env_step:,.0f} | {_duration(s.wall_s)} "
            f"| {s.steps_per_s:,.0f} |"
        )
    lines += [
        "",
        "How to read it:",
        "",
        "* *return at budget*: each run's average test return (mean over its test episodes) "
        "at its last test, then the mean ± standard deviation over seeds; *max return*: each "
        "run's best average test return over the whole run (tests after every epoch, and one "
        "before training), then mean ± std over seeds.",
        f"* *IQM [95% CI]*: the interquartile mean of the average test returns of the last "
        f"{last_k} tests of every seed (a seeds x {last_k} matrix pooled into one IQM), with a "
        "95% percentile confidence interval from rliable's stratified bootstrap (2000 "
        "resamples of the seeds, drawn independently for each of the last tests). With 3 "
        "seeds an IQM over seeds alone would be their plain mean with the interval [min, "
        "max]; pooling the last tests also smooths the test noise of a single evaluation.",
        "* *env steps*: training env steps per run (random warm-up steps not counted, as in "
        "Tianshou); *wall time / run*: the mean over seeds of each run's wall time (building, "
        "warm-up, training, tests and checkpoints; summed over sessions for a resumed run); "
        "*env steps/s*: the training env steps of all seeds over their wall time. Runs share "
        "the machine's cores, so wall times depend on the load.",
        "* *seeds (done)*: runs found (of them finished); an unfinished run counts at its last "
        "finished epoch.",
    ]
    peers = [lib for lib in libraries if lib != "tdrl"]
    by_key = {(s.library, s.algo, s.task): s for s in summaries}
    pairs = [
        (s, by_key[(p, s.algo, s.task)])
        for s in summaries
        if s.library == "tdrl"
        for p in peers
        if (p, s.algo, s.task) in by_key
    ]
    if pairs:
        lines += [
            "",
            "## Side by side",
            "",
            "Return at the budget (mean ± std over seeds); *within spread*: whether the "
            "difference of the means is at most the sum of the two standard deviations.",
            "",
            "| algorithm | task | tdrl | peer | peer return | difference | within spread |",
            "|---|---|---|---|---|---|---|",
        ]
        for t, p in pairs:
            diff = t.final[0] - p.final[0]
            within = "yes" if abs(diff) <= t.final[1] + p.final[1] else "no"
            lines.append(
                f"| {t.algo} | {t.task} | {_pm(t.final)} | {p.library} | {_pm(p.final)} "
                f"| {diff:+.1f} | {within} |"
            )
    published = published_table(runs)
    if published:
        lines += ["", *published]
    lines += ["", "![learning curves](curves.png)", ""]
    return "\n".join(lines)


def _seeds_phrase(runs: Sequence[RunLog]) -> str:
    """``"mean over 3 seeds"``, or ``"mean over each curve's seeds (1-3)"`` when the curves
    (one per task, algorithm and library) have different numbers of seeds.

    >>> import numpy as np
    >>> def run(task, seed):
    ...     return RunLog("tdrl", "ppo", task, seed, np.zeros(1), np.zeros(1), True, 0, 1.0)
    >>> _seeds_phrase([run("A", 0), run("A", 1)])
    'mean over 2 seeds'
    >>> _seeds_phrase([run("A", 0), run("A", 1), run("B", 0)])
    "mean over each curve's seeds (1-2)"
    """
    groups: dict[tuple[str, str, str], set[int]] = {}
    for r in runs:
        groups.setdefault((r.task, r.algo, r.library), set()).add(r.seed)
    counts = sorted({len(s) for s in groups.values()})
    if len(counts) == 1:
        n = counts[0]
        return f"mean over {n} seed{'s' if n != 1 else ''}"
    return f"mean over each curve's seeds ({counts[0]}-{counts[-1]})"


def _mean_curve(rs: Sequence[RunLog]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps common to the runs (up to the shortest) and the mean and std there."""
    end = min(r.steps[-1] for r in rs)
    grid = np.unique(np.concatenate([r.steps[r.steps <= end] for r in rs]))
    ys = np.stack([np.interp(grid, r.steps, r.returns) for r in rs])
    return grid, ys.mean(0), ys.std(0)


def plot_curves(runs: Sequence[RunLog], out: str | os.PathLike[str], title: str = "") -> Path:
    """Draw the learning-curve grid (one panel per task) to ``out``; return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r.task for r in runs})
    algos = sorted({r.algo for r in runs})
    libraries = sorted({r.library for r in runs}, key=lambda x: (x != "tdrl", x))
    colours = {a: plt.get_cmap("tab10")(i % 10) for i, a in enumerate(algos)}
    styles = {lib: ("-", "--", ":", "-.")[i % 4] for i, lib in enumerate(libraries)}
    cols = min(3, max(1, len(tasks)))
    rows = -(-len(tasks) // cols) if tasks else 1
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, task in zip(axes.flat, tasks):
        for lib in libraries:
            for algo in algos:
                rs = [r for r in runs if (r.task, r.algo, r.library) == (task, algo, lib)]
                if not rs:
                    continue
                x, mean, std = _mean_curve(rs)
                label = algo.upper() if lib == "tdrl" else f"{algo.upper()} ({lib})"
                marker = "o" if len(x) <= 30 else None  # sparse tests: mark the points
                (line,) = ax.plot(
                    x, mean, styles[lib], color=colours[algo], lw=1.6, marker=marker, ms=3,
                    label=label,
                )  # fmt: skip
                ax.fill_between(x, mean - std, mean + std, color=colours[algo], alpha=0.15, lw=0)
                handles.setdefault(label, line)
        ax.set_title(task)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("average test return")
        ax.grid(alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
    for ax in list(axes.flat)[len(tasks) :]:
        ax.axis("off")
    fig.suptitle(title or f"Average test return: {_seeds_phrase(runs)}, band ± one std",
                 fontsize=11)  # fmt: skip
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=min(6, len(handles)),
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.08 if rows == 1 else 0.05, 1, 1))
    path = Path(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(
    out: str | os.PathLike[str],
    peers: Sequence[str | os.PathLike[str]] = (),
    last_k: int = LAST_K,
    title: str = "Benchmark report",
) -> tuple[Path, Path]:
    """Write ``OUT/report.md`` and ``OUT/curves.png`` from the runs under ``out`` (and
    ``peers``); return their paths. ``FileNotFoundError`` if there is no run."""
    if last_k < 1:
        raise ValueError(f"last_k: expected an int >= 1, got {last_k}")
    out = Path(out)
    runs = load_runs([out, *peers])
    if not runs:
        raise FileNotFoundError(
            f"{out}: expected benchmark runs (ALGO/TASK/seedS/test.csv), found none"
        )
    summaries = summarize(runs, last_k)
    report = out / "report.md"
    report.write_text(_markdown(summaries, runs, last_k, title))
    png = plot_curves(runs, out / "curves.png")
    return report, png
