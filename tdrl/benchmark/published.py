"""Tianshou's published MuJoCo table (1M env steps) and tdrl's runs beside it.

The anchor is the table in Tianshou's ``examples/mujoco`` README at v2.0.1, measured on
the ``-v3`` MuJoCo tasks; it cannot be rerun here. Its metric, per seed, is the best
10-episode test mean over the run (a test after every epoch); the table gives the mean ±
standard deviation of that over its seeds. :func:`best_test_mean` computes it the same
way for a tdrl run (the presets test 10 episodes), leaving out the test of the untrained
policy before the first epoch (a score no training produced).

A row *agrees* when, with several seeds, tdrl's mean lies within Tianshou's mean ± its
std; with one seed, when that seed's value lies within Tianshou's mean ± 2 std (the row
says it has one seed).

>>> TIANSHOU_MUJOCO_1M[("sac", "Hopper")]
(3542.0, 52.0)
>>> agreement([3000.0], *TIANSHOU_MUJOCO_1M[("sac", "Hopper")])
'no (one seed)'
>>> agreement([2500.0, 2700.0, 2650.0], *TIANSHOU_MUJOCO_1M[("ppo", "Hopper")])
'yes'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ENV_CHANGES",
    "PUBLISHED_BUDGET",
    "TIANSHOU_MUJOCO_1M",
    "agreement",
    "best_test_mean",
    "published_table",
    "task_name",
]

PUBLISHED_BUDGET = 1_000_000
"""The env steps of Tianshou's published MuJoCo runs."""

_TASKS = ("Ant", "HalfCheetah", "Hopper", "Walker2d")
_TABLE = {
    "ppo": ((3258, 1079), (5784, 1244), (2609, 701), (3589, 757)),
    "trpo": ((2867, 708), (4471, 805), (2046, 1038), (3827, 783)),
    "sac": ((5850, 476), (12139, 1049), (3542, 52), (5007, 252)),
    "td3": ((5116, 800), (10201, 773), (3472, 117), (3982, 275)),
}
TIANSHOU_MUJOCO_1M: dict[tuple[str, str], tuple[float, float]] = {
    (algo, task): (float(m), float(s))
    for algo, rows in _TABLE.items()
    for task, (m, s) in zip(_TASKS, rows)
}
"""``(algorithm, task name) -> (mean, std)`` of Tianshou 2.0.1's published 1M-step table
(``examples/mujoco`` README, the ``-v3`` tasks)."""


ENV_CHANGES: dict[str, str] = {
    "Walker2d": (
        "Walker2d-v5 gives both feet friction 1.9 (v2-v4: the left foot 1.9, the right 0.9), "
        "and pays the healthy reward only while healthy"
    ),
    "Ant": (
        "Ant-v5 always charges the contact cost (v4: only with `use_contact_forces`), pays "
        "the healthy reward only while healthy, and observes the contact forces (105 "
        "dimensions; v4: 27; v3 under mujoco-py: 111, the forces all zero)"
    ),
}
"""What a ``-v5`` task changed against the ``-v3`` one of Tianshou's table that moves the
returns (gymnasium's changelogs); printed under the table for a row that does not agree.
The ``-v4`` tasks keep the v3 physics and reward, so a ``-v4`` run tells an env change
from a bug (the long-run lane runs PPO on Walker2d-v4 and Ant-v4)."""


def task_name(task: str) -> str:
    """A gymnasium id without its version: ``"Hopper-v5"`` -> ``"Hopper"``.

    >>> task_name("HalfCheetah-v5"), task_name("Ant")
    ('HalfCheetah', 'Ant')
    """
    return task.rsplit("-v", 1)[0]


def best_test_mean(steps: np.ndarray, returns: np.ndarray) -> float:
    """Tianshou's metric for one run: its best test mean, tests after training began only.

    >>> best_test_mean(np.array([0, 10, 20]), np.array([900.0, 10.0, 50.0]))
    50.0
    """
    trained = np.asarray(returns, dtype=float)[np.asarray(steps) > 0]
    return float(trained.max()) if trained.size else float("nan")


def agreement(values: Sequence[float], mean: float, std: float) -> str:
    """``"yes"``/``"no"``, with ``" (one seed)"`` for a single run (see the module doc)."""
    if not values:
        return "–"
    if len(values) == 1:
        ok = abs(values[0] - mean) <= 2 * std
        return ("yes" if ok else "no") + " (one seed)"
    return "yes" if abs(float(np.mean(values)) - mean) <= std else "no"


def _mean_std(values: Sequence[float]) -> str:
    """``"m ± s"`` over the seeds (``s = 0`` for one), ``"–"`` for none."""
    if not values:
        return "–"
    s = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return f"{float(np.mean(values)):.0f} ± {s:.0f}"


def published_table(runs: Sequence[Any]) -> list[str]:
    """Markdown lines: tdrl's runs at the published budget (``budget >= 1M``) of the
    published algorithms and tasks beside Tianshou's table (``runs``:
    :class:`~tdrl.benchmark.report.RunLog`). Empty without such runs."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in runs:
        full_budget = (r.budget or 0) >= PUBLISHED_BUDGET
        if (
            r.library == "tdrl"
            and full_budget
            and (r.algo, task_name(r.task)) in TIANSHOU_MUJOCO_1M
        ):
            groups.setdefault((r.algo, r.task), []).append(r)
    if not groups:
        return []
    lines = [
        "## Beside Tianshou's published 1M-step table",
        "",
        "Per seed, the best 10-episode test mean over the run (tests after training began), "
        "then the mean ± std over seeds, as Tianshou's `examples/mujoco` README (v2.0.1) "
        "reports it for its `-v3` tasks. *Agrees*: tdrl's mean within Tianshou's mean ± std "
        "(one seed: within ± 2 std). A run short of 1M env steps is in progress: its row "
        "says how far it got, and its value can still rise.",
        "",
        "| algorithm | task (tdrl) | tdrl | seeds (at 1M) | env steps | Tianshou (v3) | agrees |",
        "|---|---|---|---|---|---|---|",
    ]
    disagreeing: set[str] = set()
    for (algo, task), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rs = sorted(rs, key=lambda r: r.seed)
        # a run that has not tested since training began has no value yet
        values = [v for v in (best_test_mean(r.steps, r.returns) for r in rs) if v == v]
        mean, std = TIANSHOU_MUJOCO_1M[(algo, task_name(task))]
        full = [r for r in rs if r.env_step >= PUBLISHED_BUDGET]
        steps = min(r.env_step for r in rs)
        verdict = agreement(values, mean, std) if len(full) == len(rs) else "in progress"
        lines.append(
            f"| {algo} | {task} | {_mean_std(values)} | {len(rs)} ({len(full)}) | "
            f"{steps:,} | {mean:.0f} ± {std:.0f} | {verdict} |"
        )
        if verdict.startswith("no") and not task.endswith("-v3"):
            disagreeing.add(task_name(task))
    notes = [f"* {ENV_CHANGES[t]}." for t in sorted(disagreeing) if t in ENV_CHANGES]
    if notes:
        lines += ["", "Where a row does not agree, the task changed since `-v3`:", "", *notes]
    return lines
