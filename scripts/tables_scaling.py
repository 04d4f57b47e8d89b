"""Renderers of docs/scaling.md's measured tables, each from a committed results file.

Registered in ``scripts/render_tables.py`` (``RENDERERS``) beside ``tables_bench``'s; both
benchmarks write ``benchmarks/results/scaling/results.jsonl`` (``benchmarks/__main__.py``):

* ``scaling-collect``: ``python -m benchmarks scaling``, its ``kind: collect`` records (env
  steps per second of the in-process ``Collector`` and of ``RayCollector`` with M workers);
* ``scaling-learner``: the same run's ``kind: learner`` record (the SAC Hopper-v5 update and
  ``sample(256)``), beside its one-worker collection rate;
* ``scaling-memory``: ``python -m benchmarks memory``, its ``kind: buffer`` records (bytes
  per transition of the Hopper and Atari replay buffers);
* ``scaling-memmap``: the same run's ``kind: memmap`` record (RSS while a memmap-backed
  Atari buffer fills).

Each table takes the newest invocation of its benchmark module and says under it the
command, the dates, the commit, the machine and the 1-minute load (``tables_bench``'s
:func:`~tables_bench.provenance`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tables_bench import RESULTS, Record, _rel, load_jsonl, newest, provenance

SCALING = RESULTS / "scaling" / "results.jsonl"
SCALING_HOW = "python -m benchmarks scaling"
MEMORY_HOW = "python -m benchmarks memory"

BUFFER_LABELS: list[tuple[str, str]] = [
    ("Hopper-v5", "Hopper-v5 (obs, obs_next 11 × float64; act 3 × float32; rew; 2 flags)"),
    ("Atari", "Atari (84×84 uint8, `stack_num=4`, `save_only_last_obs`, `ignore_obs_next`)"),
]
"""Record-name prefix -> what the memory table calls the buffer (the record's name if none)."""


def _records(path: Path | None, module: str, kind: str, how: str) -> list[Record]:
    """The newest invocation's records of ``module`` with this ``kind`` (a clear
    ``SystemExit`` naming the command that writes them when there are none)."""
    src = path or SCALING
    records = [r for r in newest(load_jsonl(src, how)) if r["module"] == module]
    found = [r for r in records if r.get("kind") == kind]
    if not found:
        raise SystemExit(f"{_rel(src)}: expected {kind} records (written by `{how}`), found none")
    return found


def _collect(path: Path | None) -> tuple[list[Record], Record | None, Record | None]:
    """The collection records, the in-process one and the one-worker ``RayCollector`` one."""
    rs = _records(path, "bench_scaling", "collect", SCALING_HOW)
    local = next((r for r in rs if "workers" not in r), None)
    one = next((r for r in rs if r.get("workers") == 1), None)
    return rs, local, one


def _count(n: int) -> str:
    return f"{n // 10**6:,}M" if n % 10**6 == 0 else f"{n:,}"


def _bytes(x: float) -> str:
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def render_scaling_collect(path: Path | None = None) -> str:
    """Env steps per second of the in-process collector and of M Ray workers, the scaling
    efficiency ``speed(M) / (M · speed(1))`` and the fixed cost of a round."""
    rs, _, one = _collect(path)
    lines = [
        "| collector | env steps/s | × one worker | efficiency | round of 1 step per worker |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rs:
        m = r.get("workers")
        if m is None:
            lines.append(f"| in-process `Collector`, 1 env | {r['steps_per_s']:,.0f} | — | — | — |")
            continue
        gain = r["steps_per_s"] / one["steps_per_s"] if one else None
        lines.append(
            f"| `RayCollector` M = {m} | {r['steps_per_s']:,.0f} "
            f"| {f'{gain:.2f}×' if gain else 'n/a'} | {f'{gain / m:.0%}' if gain else 'n/a'} "
            f"| {r['round_s'] * 1e3:.1f} ms |"
        )
    extra = f", {rs[0]['steps']:,} steps per worker per round, {rs[0]['rounds']} rounds"
    return "\n".join(lines) + "\n\n" + provenance(rs, extra)


def render_scaling_learner(path: Path | None = None) -> str:
    """The SAC Hopper-v5 update and ``sample(batch)`` (medians), the env-step rate they cap
    training at with one update per env step, and one Ray worker's collection rate."""
    learner = _records(path, "bench_scaling", "learner", SCALING_HOW)[-1]
    _, _, one = _collect(path)
    if one is None:
        raise SystemExit(
            f"{_rel(path or SCALING)}: expected a `RayCollector` M = 1 record (written by "
            f"`{SCALING_HOW}`), found none"
        )
    b, updates = learner["batch_size"], 1 / learner["update_s"]
    lines = [
        f"| SAC Hopper-v5 update (batch {b}) | `sample({b})` | updates/s = env steps/s cap at "
        "1 update per env step | one collector worker, env steps/s | worker ÷ learner cap "
        "| trainable parameters | fp32 gradients per step |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {learner['update_s'] * 1e3:.1f} ms | {learner['sample_s'] * 1e6:.0f} µs "
        f"| {updates:,.0f} | {one['steps_per_s']:,.0f} | {one['steps_per_s'] / updates:.0f}× "
        f"| {learner['params']:,} | {learner['grad_bytes'] / 1e6:.2f} MB |",
    ]
    extra = (
        f", the update (sampling included) and `sample` each the median of "
        f"{learner['rounds']} rounds after a warm-up, one torch thread; the worker: "
        "`RayCollector` M = 1 of the same run"
    )
    return "\n".join(lines) + "\n\n" + provenance([learner, one], extra)


def _label(name: str) -> str:
    return next((label for prefix, label in BUFFER_LABELS if name.startswith(prefix)), name)


def render_scaling_memory(path: Path | None = None) -> str:
    """Bytes per transition of each replay buffer: its columns, the anonymous memory the
    process gained filling it, the raw arrays; the total (extrapolated where measured
    smaller)."""
    rs = _records(path, "bench_memory", "buffer", MEMORY_HOW)
    lines = [
        "| buffer | transitions | columns, bytes/transition | RssAnon gained, bytes/transition "
        "| raw arrays, bytes/transition | total |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rs:
        n, at = r["size"], r["extrapolate"]
        per_col = r["columns_bytes"] / n
        size = f"{n:,}" if at == n else f"{n:,} (→ {_count(at)} extrapolated)"
        total = f"{per_col * at / 2**30:.2f} GiB" + ("" if at == n else f" at {_count(at)}")
        lines.append(
            f"| {_label(r['name'])} | {size} | {_bytes(per_col)} "
            f"| {_bytes(r['rss_anon_bytes'] / n)} | {_bytes(r['raw_bytes_per_transition'])} "
            f"| {total} |"
        )
    note = provenance(rs, ", filled through `VectorReplayBuffer.add`")
    return "\n".join(lines) + "\n\n" + note.replace(" while timing._", " while measuring._")


def render_scaling_memmap(path: Path | None = None) -> str:
    """RSS (anonymous and file-backed, against the start) while an Atari buffer with
    ``memmap_dir=`` fills."""
    r = _records(path, "bench_memory", "memmap", MEMORY_HOW)[-1]
    lines = [
        "| frames written | RssAnon (MiB, vs. start) | RssFile (MiB, vs. start) |",
        "|---:|---:|---:|",
    ]
    for s in r["samples"]:
        lines.append(
            f"| {s['frames']:,} | {s['RssAnon'] / 2**20:+,.1f} | {s['RssFile'] / 2**20:+,.0f} |"
        )
    extra = (
        f", a {r['size']:,}-frame Atari buffer with `memmap_dir=`: "
        f"{r['file_bytes'] / 2**30:.2f} GiB of files on {r['filesystem']}"
    )
    note = provenance([r], extra)
    return "\n".join(lines) + "\n\n" + note.replace(" while timing._", " while measuring._")


RENDERERS: dict[str, Callable[[], str]] = {
    "scaling-collect": render_scaling_collect,
    "scaling-learner": render_scaling_learner,
    "scaling-memory": render_scaling_memory,
    "scaling-memmap": render_scaling_memmap,
}
"""The renderers this module adds to ``scripts/render_tables.py``."""
