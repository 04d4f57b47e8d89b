"""Medians, ratios and the tables of the peer benchmark, from its result records.

Pure Python (no torch, no peer imported): ``scripts/render_tables.py`` renders the README's
``peers`` table with it from ``benchmarks/results/peers/results.jsonl``.

A record is one run (one library, one row, one round): ``status`` ``"ok"`` with
``steps_per_s`` and, when a test reached the threshold, ``time_to_threshold_s``; or
``"n/a"`` with the ``reason``. Per row the newest invocation (``run_id``) that ran it counts.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.peers.core import LABELS, LIBRARIES, ROWS

ROW_LABELS: dict[str, str] = {
    "dqn-cartpole": "DQN CartPole-v1",
    "ppo-cartpole": "PPO CartPole-v1",
    "sac-pendulum": "SAC Pendulum-v1",
    "sac-hopper": "SAC Hopper-v5",
}


def load(path: str | Path) -> list[dict[str, Any]]:
    """The records of a results file (JSON lines); none when it does not exist."""
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def latest(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row, the records of the newest ``run_id`` that has that row.

    >>> rs = [{"run_id": "a", "row": "x"}, {"run_id": "b", "row": "x"}, {"run_id": "a", "row": "y"}]
    >>> [(r["run_id"], r["row"]) for r in latest(rs)]
    [('b', 'x'), ('a', 'y')]
    """
    records = list(records)
    newest: dict[str, str] = {}
    for r in records:
        if r["run_id"] > newest.get(r["row"], ""):
            newest[r["row"]] = r["run_id"]
    return [r for r in records if r["run_id"] == newest[r["row"]]]


def ratio(tdrl: float | None, peer: float | None) -> float | None:
    """tdrl's env steps per second over the peer's (above 1: tdrl is faster).

    >>> ratio(300.0, 150.0), ratio(None, 1.0), ratio(1.0, None)
    (2.0, None, None)
    """
    if tdrl is None or peer is None or peer <= 0:
        return None
    return tdrl / peer


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{row: {lib: cell}}``: per row and library the median env steps per second over
    the rounds that ran, the median time to threshold over the rounds that reached it,
    how many reached it, and the reason when no round ran (``na``).

    >>> ok = {"run_id": "a", "row": "r", "lib": "tdrl", "status": "ok", "threshold": 1.0}
    >>> rs = [dict(ok, steps_per_s=s, time_to_threshold_s=t) for s, t in
    ...       [(100.0, 5.0), (300.0, None), (200.0, 7.0)]]
    >>> rs.append({"run_id": "a", "row": "r", "lib": "sb3", "status": "n/a", "reason": "x"})
    >>> cells = summarize(rs)["r"]
    >>> cells["tdrl"]["sps"], cells["tdrl"]["ttt"], cells["tdrl"]["reached"], cells["sb3"]["na"]
    (200.0, 6.0, '2/3', 'x')
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["row"], r["lib"]), []).append(r)
    for (row, lib), rs in groups.items():
        ok = [r for r in rs if r["status"] == "ok"]
        cell: dict[str, Any] = {"rounds": len(ok), "na": None}
        if not ok:
            reasons = sorted({str(r.get("reason") or "no run") for r in rs})
            cell.update(sps=None, ttt=None, reached=None, na="; ".join(reasons))
        else:
            cell["sps"] = statistics.median(r["steps_per_s"] for r in ok)
            times = [
                r["time_to_threshold_s"] for r in ok if r.get("time_to_threshold_s") is not None
            ]
            has_threshold = ok[0].get("threshold") is not None
            cell["ttt"] = statistics.median(times) if times else None
            cell["reached"] = f"{len(times)}/{len(ok)}" if has_threshold else None
            failed = len(rs) - len(ok)
            if failed:
                cell["failed"] = failed
        out.setdefault(row, {})[lib] = cell
    return out


def _rows_in(records: list[dict[str, Any]]) -> list[str]:
    names = {r["row"] for r in records}
    return [n for n in ROWS if n in names] + sorted(names - set(ROWS))


def _budget(records: list[dict[str, Any]], row: str) -> str:
    for r in records:
        b = r.get("budget")
        if r["row"] == row and b:
            warm = f"{b['warmup']:,} + " if b["warmup"] else ""
            return f"{warm}{b['train_steps']:,}"
    return "?"


def _sps_cell(cell: dict[str, Any] | None, tdrl: dict[str, Any] | None, lib: str) -> str:
    if cell is None:
        return "not run"
    if cell["sps"] is None:
        return f"n/a: {cell['na']}"
    text = f"{cell['sps']:,.0f}"
    if lib != "tdrl":
        r = ratio(tdrl["sps"] if tdrl else None, cell["sps"])
        text += f" ({r:.2f}×)" if r is not None else ""
    return text


def _ttt_cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "not run"
    if cell["sps"] is None:
        return "n/a"
    if cell["reached"] is None:
        return "–"
    if cell["ttt"] is None:
        return f"not reached ({cell['reached']})"
    return f"{cell['ttt']:.1f} s ({cell['reached']})"


def markdown(records: Iterable[dict[str, Any]]) -> str:
    """The README's peer tables: env steps per second (median of the rounds; in brackets
    tdrl / peer), then the training seconds to the threshold, with provenance."""
    recs = latest(records)
    if not recs:
        return "(no peer benchmark has been recorded yet)\n"
    cells = summarize(recs)
    rows = _rows_in(recs)
    head = "| row | env steps (warm-up + training) | " + " | ".join(LABELS[x] for x in LIBRARIES)
    lines = [
        "Env steps per second at a fixed budget (median of the rounds; in brackets tdrl's "
        "rate / the peer's, above 1 = tdrl faster):",
        "",
        head + " |",
        "|---|---|" + "---|" * len(LIBRARIES),
    ]
    for row in rows:
        c = cells[row]
        vals = [_sps_cell(c.get(lib), c.get("tdrl"), lib) for lib in LIBRARIES]
        lines.append(
            f"| {ROW_LABELS.get(row, row)} | {_budget(recs, row)} | " + " | ".join(vals) + " |"
        )
    lines += [
        "",
        "Training seconds to the threshold (median of the rounds that reached it; reached / "
        "rounds). This mixes in how many steps each library's algorithm needed, not only its "
        "speed:",
        "",
        "| row | threshold | " + " | ".join(LABELS[x] for x in LIBRARIES) + " |",
        "|---|---|" + "---|" * len(LIBRARIES),
    ]
    for row in rows:
        c = cells[row]
        th = next((r.get("threshold") for r in recs if r["row"] == row), None)
        vals = [_ttt_cell(c.get(lib)) for lib in LIBRARIES]
        th_text = "–" if th is None else f"{th:g}"
        lines.append(f"| {ROW_LABELS.get(row, row)} | {th_text} | " + " | ".join(vals) + " |")
    lines += ["", provenance(recs)]
    return "\n".join(lines) + "\n"


def provenance(records: list[dict[str, Any]]) -> str:
    """One line: rounds, commits, machine, load and thread checks of the records."""
    ok = [r for r in records if r["status"] == "ok"]
    commits = sorted(
        {(r.get("commit") or "?")[:10] + ("+dirty" if r.get("dirty") else "") for r in records}
    )
    rounds = max((r.get("round", 0) for r in records), default=0) + 1
    m = records[0].get("machine", {})
    loads = [r["machine"]["loadavg"][0] for r in records if r.get("machine", {}).get("loadavg")]
    cpu_wall = [r["threads"]["cpu_per_wall"] for r in ok if "cpu_per_wall" in r.get("threads", {})]
    busy = max((r["threads"].get("busy_threads", 0) for r in ok if r.get("threads")), default=0)
    parts = [
        f"{rounds} round(s), libraries alternating, one process per run pinned to one CPU",
        f"commit {', '.join(commits)}",
        f"{m.get('cpu', '?')} ({m.get('cores', '?')} cores)",
    ]
    if loads:
        parts.append(f"1-min load {min(loads):.1f}–{max(loads):.1f} at the runs' starts")
    if cpu_wall:
        parts.append(f"CPU/wall per run {min(cpu_wall):.2f}–{max(cpu_wall):.2f}")
    parts.append(f"at most {busy} busy thread(s) per run")
    return "_" + "; ".join(parts) + "._"
