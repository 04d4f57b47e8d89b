"""Renderers of the benchmark tables in the README and docs, each from a committed results file.

Registered in ``scripts/render_tables.py`` (``RENDERERS``); every renderer is a pure function
of the files under ``benchmarks/results/``:

* ``micro``: ``python -m benchmarks batch buffer ... compile`` ->
  ``benchmarks/results/micro/results.jsonl`` (one record per printed row);
* ``train`` / ``zoo``: ``python -m benchmarks train`` / ``train_zoo`` ->
  ``benchmarks/results/train/results.jsonl`` / ``benchmarks/results/zoo/results.jsonl``;
* ``walltime``: ``benchmarks/walltime_side_by_side.py`` -> its JSON records
  (``benchmarks/results/walltime/results.jsonl``) or, before those existed, its printed
  log ``benchmarks/results/walltime-hopper-2026-11-23.txt``;
* ``mujoco-short`` / ``mujoco-short-libraries``: ``tdrl report`` of
  ``benchmarks/results/mujoco-2026-11-23-short/`` (its ``report.md``);
* ``gpu-update`` / ``gpu-e2e``: ``bash benchmarks/gpu_check.sh`` ->
  ``benchmarks/results/gpu-2026-11-28/`` (``update.csv``, ``e2e.csv``, ``env.json``);
* ``recipes-classic``: the seed sweep ``sweeps/results.jsonl`` for docs/recipes.md;
* ``roofline``: ``python -m benchmarks roofline`` -> ``benchmarks/results/roofline/results.jsonl``;
* ``floor``: ``python -m benchmarks floor`` -> ``benchmarks/results/floor/results.jsonl``;
* ``first-contact``: ``benchmarks/first_contact.py`` (a fresh clone's nox log, the README's
  first training command timed) -> ``benchmarks/results/first-contact/results.jsonl``.

A table takes, per benchmark module, the records of the newest invocation that ran it
(records of one ``python -m benchmarks`` command share its ``invocation``), and says under
it the command, the dates, the commit, the machine and the 1-minute load.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MICRO = RESULTS / "micro" / "results.jsonl"
TRAIN = RESULTS / "train" / "results.jsonl"
ZOO = RESULTS / "zoo" / "results.jsonl"
WALLTIME = RESULTS / "walltime" / "results.jsonl"
WALLTIME_TXT = RESULTS / "walltime-hopper-2026-11-23.txt"
MUJOCO_SHORT = RESULTS / "mujoco-2026-11-23-short" / "report.md"
GPU = RESULTS / "gpu-2026-11-28"
ROOFLINE = RESULTS / "roofline" / "results.jsonl"
FLOOR = RESULTS / "floor" / "results.jsonl"
FIRST_CONTACT = RESULTS / "first-contact" / "results.jsonl"
ATARI = RESULTS / "atari" / "results.jsonl"

Record = dict[str, Any]


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def load_jsonl(path: Path, how: str) -> list[Record]:
    """The records of a results file (one JSON object a line); a clear ``SystemExit`` when
    the file is missing or empty (``how``: the command that writes it)."""
    if not path.is_file():
        raise SystemExit(f"{_rel(path)}: expected a results file (written by `{how}`), not found")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not records:
        raise SystemExit(f"{_rel(path)}: expected records (written by `{how}`), found none")
    return records


def newest(records: Sequence[Record]) -> list[Record]:
    """Per module, the records of the newest invocation that ran it (file order kept)."""
    last: dict[str, str] = {}
    for r in records:
        last[r["module"]] = max(last.get(r["module"], ""), r["invocation"])
    return [r for r in records if r["invocation"] == last[r["module"]]]


def provenance(records: Sequence[Record], extra: str = "") -> str:
    """The italic line under a table: commands, dates, commits, machine and load."""
    commands = sorted({r["command"].replace("-m benchmarks.__main__", "-m benchmarks")
                       for r in records})  # fmt: skip
    dates = sorted(r["date"] for r in records)
    day = dates[0][:10] if dates[0][:10] == dates[-1][:10] else f"{dates[0][:10]}–{dates[-1][:10]}"
    span = f"{day} {dates[0][11:16]}–{dates[-1][11:16]} UTC"
    commits = ", ".join(sorted({r["commit"][:10] + ("+dirty" if "+dirty" in r["commit"] else "")
                                for r in records}))  # fmt: skip
    machines = ", ".join(sorted({f"{r['machine']['cpu']} ({r['machine']['cores']} cores)"
                                 for r in records}))  # fmt: skip
    loads = [r["load1"] for r in records]
    cmd = "; ".join(f"`{c}`" for c in commands)
    return (
        f"_{cmd}{extra}; {span}; commit {commits}; {machines}; 1-min load "
        f"{min(loads):.1f}–{max(loads):.1f} while timing._\n"
    )


# ---------------------------------------------------------------- micro-benchmarks


def _num(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 100 else f"{x:,.0f}"


def _time(r: Record, value: float) -> tuple[str, str]:
    unit = r.get("unit", "us")
    return _num(value * (1e6 if unit == "us" else 1e3)), "µs" if unit == "us" else "ms"


def _joined(cells: list[tuple[str, str]]) -> str:
    if len({u for _, u in cells}) == 1:
        return " / ".join(v for v, _ in cells) + f" {cells[0][1]}"
    return " / ".join(f"{v} {u}" for v, u in cells)


def _goal(ratios: list[float], goal: float | None, pct: bool = False) -> str:
    if goal is None:
        return ""
    met = all(x >= goal for x in ratios)
    g = f"{goal:.0%}" if pct else f"{goal:g}×"
    return f"≥ {g} {'**met**' if met else '**not met**'}"


def _pick(records: Sequence[Record], module: str, prefix: str) -> list[Record]:
    rs = [r for r in records if r["module"] == module and r["name"].startswith(prefix)]
    if not rs:
        src = records[0].get("_source", _rel(MICRO)) if records else _rel(MICRO)
        raise SystemExit(f"{src}: expected a {module} record named {prefix!r}..., none")
    return rs


# (label, [(module, name prefix)], goal the README states for it, or None: the record's)
MICRO_TIMINGS: list[tuple[str, list[tuple[str, str]], float | None]] = [
    ("Build a `Batch` from 8 envs' numpy arrays (6 keys, `info={}`)",
     [("bench_step", "build Batch, 8 envs (6 arrays")], None),
    ("Build that `Batch` + `VectorReplayBuffer.add`, capacity 1e4 / 1e6",
     [("bench_step", "build Batch + add, float64, best (cap 1e+04)"),
      ("bench_step", "build Batch + add, float64, best (cap 1e+06)")], 3.0),
    ("`VectorReplayBuffer.add`, 8 envs, dict of numpy, 1e4 / 1e6",
     [("bench_buffer", "add 8 envs, dict of numpy (cap 1e+04)"),
      ("bench_buffer", "add 8 envs, dict of numpy (cap 1e+06)")], None),
    ("`sample(256)`, 1e4 / 1e6",
     [("bench_buffer", "sample(256) (cap 1e+04"), ("bench_buffer", "sample(256) (cap 1e+06")],
     None),
    ("`prev` + `next` + `unfinished_index`, whole 1e5 buffer",
     [("bench_buffer", "prev+next+unfinished, full buffer")], None),
    ("`PrioritizedVectorReplayBuffer.sample(256)`, 1e4 / 1e6",
     [("bench_prio", "sample(256) (")], None),
    ("GAE, 8 × 2048 steps, through the algorithm's `Batch` path",
     [("bench_returns", "GAE 8x2048, algorithm's Batch path")], None),
    ("n-step (3) returns, 256 of 1e5", [("bench_returns", "n-step 3, 256 of 1e5 (own")], None),
    ("Vector env step, Hopper-v5 × 8 (shared-memory subprocesses)",
     [("bench_env", "Hopper x8 step, vs tianshou")], None),
    ("DQN / SAC / PPO update",
     [("bench_algorithm", "DQN update"), ("bench_algorithm", "SAC update"),
      ("bench_algorithm", "PPO update")], None),
    ("`algorithm.compile()` (inductor) vs eager: SAC Hopper-sized / DQN / PPO update",
     [("bench_compile", "SAC update"), ("bench_compile", "DQN update"),
      ("bench_compile", "PPO update")], None),
    ("`Batch.cat` of 10 × 1000 rows / `Batch.stack` of 100",
     [("bench_batch", "cat 10 Batches"), ("bench_batch", "stack 100 one-row")], None),
    ("Read a `Batch` attribute / slice 256 rows",
     [("bench_batch", "attribute read"), ("bench_batch", "slice 256 rows")], None),
]  # fmt: skip


def _timing_row(label: str, rs: list[Record], goal: float | None) -> str:
    ratios = [r["peer_s"] / r["tdrl_s"] for r in rs]
    goals = [r.get("goal") for r in rs]
    if goal is not None or len(set(goals)) == 1:
        goal_cell = _goal(ratios, goal if goal is not None else goals[0])
    else:  # each record its own goal (or none)
        goal_cell = " / ".join(_goal([x], g) or "–" for x, g in zip(ratios, goals))
    peer_label = rs[0]["labels"][1]
    peer = _joined([_time(r, r["peer_s"]) for r in rs])
    if peer_label != "tianshou":
        peer = f"{peer_label} {peer}"
    return (
        f"| {label} | {_joined([_time(r, r['tdrl_s']) for r in rs])} | {peer} "
        f"| {' / '.join(f'{x:.2f}×' for x in ratios)} | {goal_cell} |"
    )


def _collector_rows(records: Sequence[Record]) -> list[str]:
    def one(prefix: str) -> Record:
        return _pick(records, "bench_collector", prefix)[0]

    out = []
    for what, sps_name, share_name in (
        ("random actions", "CartPole-v1 x8 in-process, random", "tdrl / raw loop, random"),
        ("the same MLP policy", "CartPole-v1 x8 in-process, MLP", "tdrl / raw loop, same MLP"),
    ):
        s, share = one(sps_name), one(share_name)
        out.append(
            f"| Collector, CartPole-v1 × 8, {what} | {s['tdrl']:,.0f} steps/s "
            f"| {s['peer']:,.0f} steps/s | {s['tdrl'] / s['peer']:.2f}× | |"
        )
        out.append(
            f"| ↳ share of a raw gymnasium loop ({s['raw']:,.0f} steps/s) | {share['share']:.1%} "
            f"| {s['peer'] / s['raw']:.0%} | | {_goal([share['share']], share['goal'], True)} |"
        )
        if what == "random actions":  # tdrl driven by a policy function that costs nothing
            cheap = one("tdrl / raw loop, cheap policy")
            out.append(
                f"| ↳ share with a cheap policy function (random torch actions) "
                f"| {cheap['share']:.1%} | | | {_goal([cheap['share']], cheap['goal'], True)} |"
            )
    split = one("tdrl per vector step")["parts"]
    out.append(
        f"| ↳ tdrl per vector step (MLP policy): {' / '.join(split)} "
        f"| {' / '.join(_num(v) for v in split.values())} µs | | | |"
    )
    return out


def render_micro(path: Path | None = None) -> str:
    """The README's micro-benchmark table: the rows of :data:`MICRO_TIMINGS` and the
    collector's, from the newest run of each module."""
    src = path or MICRO
    records = newest(load_jsonl(src, "python -m benchmarks batch buffer ..."))
    records = [{**r, "_source": _rel(src)} for r in records]
    lines = ["| What | tdrl | Tianshou | speed-up | goal |", "|---|---|---|---|---|"]
    for label, picks, goal in MICRO_TIMINGS[:8]:
        lines.append(_timing_row(label, [r for m, p in picks for r in _pick(records, m, p)], goal))
    lines += _collector_rows(records)
    for label, picks, goal in MICRO_TIMINGS[8:]:
        lines.append(_timing_row(label, [r for m, p in picks for r in _pick(records, m, p)], goal))
    return "\n".join(lines) + "\n\n" + provenance(records, ", best-of-N timings interleaved")


def render_micro_all(path: Path | None = None) -> str:
    """Every timed row of the newest run of each micro-benchmark module."""
    records = newest(load_jsonl(path or MICRO, "python -m benchmarks batch buffer ..."))
    lines = ["| module | row | tdrl | peer | speed-up | goal |", "|---|---|---|---|---|---|"]
    for r in records:
        if "tdrl_s" not in r:
            continue
        ratio = r["peer_s"] / r["tdrl_s"]
        lines.append(
            f"| {r['module'].removeprefix('bench_')} | {r['name']} "
            f"| {_joined([_time(r, r['tdrl_s'])])} "
            f"| {r['labels'][1]} {_joined([_time(r, r['peer_s'])])} | {ratio:.2f}× "
            f"| {_goal([ratio], r.get('goal'))} |"
        )
    return "\n".join(lines) + "\n\n" + provenance(records)


# ---------------------------------------------------------------- time to threshold


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _per_kstep(runs: Sequence[Record]) -> float:
    steps = sum(r["steps"] for r in runs)
    return sum(r["collect"] + r["update"] for r in runs) / steps if steps else float("nan")


NAMES = {"c51": "C51", "qrdqn": "QR-DQN", "iqn": "IQN", "rainbow": "Rainbow", "td3": "TD3",
         "ddpg": "DDPG", "a2c": "A2C", "trpo": "TRPO", "dqn": "DQN", "ppo": "PPO",
         "sac": "SAC"}  # fmt: skip


def _to_threshold(path: Path, how: str) -> str:
    records = newest(load_jsonl(path, how))
    lines = [
        "| algorithm | task | threshold | tdrl s (steps) | Tianshou s (steps) | ratio "
        "| per step | reached (tdrl, Tianshou) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ours, peer = r["tdrl"], r["tianshou"]
        w_o, w_p = _mean([x["wall"] for x in ours]), _mean([x["wall"] for x in peer])
        s_o, s_p = _mean([x["steps"] for x in ours]), _mean([x["steps"] for x in peer])
        reached = (
            f"{sum(x['reached'] for x in ours)}/{len(ours)}, "
            f"{sum(x['reached'] for x in peer)}/{len(peer)}"
        )
        lines.append(
            f"| {NAMES.get(r['algo'], r['algo'])} | {r['task']} | {r['threshold']:g} "
            f"| {w_o:.1f} ({s_o:,.0f}) | {w_p:.1f} ({s_p:,.0f}) | {w_o / w_p:.2f} "
            f"| {_per_kstep(ours) / _per_kstep(peer):.2f} | {reached} |"
        )
    seeds = sorted({s for r in records for s in r["seeds"]})
    extra = f", seeds {', '.join(map(str, seeds))} (means over them)"
    return "\n".join(lines) + "\n\n" + provenance(records, extra)


def render_train(path: Path | None = None) -> str:
    """Classic control, time to threshold: ``python -m benchmarks train``."""
    return _to_threshold(path or TRAIN, "python -m benchmarks train")


def render_zoo(path: Path | None = None) -> str:
    """The rest of the zoo, time to threshold: ``python -m benchmarks train_zoo``."""
    return _to_threshold(path or ZOO, "python -m benchmarks train_zoo")


# ---------------------------------------------------------------- wall time side by side

_ROUND = re.compile(
    r"^(?P<algo>\w+) (?P<library>tdrl|tianshou)\s+round (?P<round>\d+):\s+(?P<wall>[\d.]+) s"
)


def walltime_from_txt(path: Path) -> tuple[list[Record], list[str], int]:
    """The runs, the ``#`` header lines and the env steps per run of a printed log."""
    if not path.is_file():
        raise SystemExit(f"{_rel(path)}: expected walltime_side_by_side.py's log, not found")
    text = path.read_text()
    runs = [
        {**m.groupdict(), "wall_s": float(m["wall"])}
        for m in map(_ROUND.match, text.splitlines())
        if m
    ]
    header = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    steps = re.search(r"(\d+) env steps per run", text)
    if not runs or not steps:
        raise SystemExit(f"{_rel(path)}: expected 'ALGO LIBRARY round R: S s' lines, none")
    return runs, header, int(steps.group(1))


def render_walltime(path: Path | None = None, txt: Path | None = None) -> str:
    """SAC/TD3/PPO wall time, tdrl beside Tianshou: the newest invocation's JSON records,
    or the committed log when no record exists."""
    path = path or WALLTIME
    if path.is_file():
        records = newest(load_jsonl(path, "python -m benchmarks.walltime_side_by_side"))
        runs, steps = records, records[0]["env_steps"]
        note = provenance(records, f", {steps:,} env steps per run")
    else:
        runs, header, steps = walltime_from_txt(txt or WALLTIME_TXT)
        note = "_" + "; ".join(f"`{h}`" if i == 0 else h.rstrip(";.") for i, h in enumerate(header))
        note += f" (log: `{_rel(txt or WALLTIME_TXT)}`; commit not recorded)._\n"
    algos = list(dict.fromkeys(r["algo"] for r in runs))
    lines = [
        "| algorithm | tdrl | Tianshou 2.0.1 | tdrl / Tianshou (speed-up) | goal |",
        "|---|---|---|---|---|",
    ]
    for algo in algos:
        a = statistics.mean(
            r["wall_s"] for r in runs if r["algo"] == algo and r["library"] == "tdrl"
        )
        b = statistics.mean(
            r["wall_s"] for r in runs if r["algo"] == algo and r["library"] == "tianshou"
        )
        n = sum(r["algo"] == algo and r["library"] == "tdrl" for r in runs)
        met = "**met**" if a / b <= 0.5 else "**not met**"
        lines.append(
            f"| {algo.upper()} | {a:.1f} s ({steps / a:,.0f} env steps/s) "
            f"| {b:.1f} s ({steps / b:,.0f} env steps/s) | {a / b:.2f} ({b / a:.2f}×) "
            f"| ≤ 0.5 {met} |"
        )
    return "\n".join(lines) + f"\n\nMeans of {n} rounds. " + note


# ---------------------------------------------------------------- MuJoCo report tables


def _report_tables(path: Path) -> tuple[str, list[list[str]]]:
    if not path.is_file():
        raise SystemExit(f"{_rel(path)}: expected `tdrl report`'s report.md, not found")
    tables: list[list[str]] = []
    previous = ""
    for line in path.read_text().splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    made = next((ln for ln in path.read_text().splitlines() if ln.startswith("Generated by")), "")
    return made, tables


def _mujoco_note(path: Path, made: str) -> str:
    return (
        f"_From [`{_rel(path)}`]({_rel(path)}): {made.removesuffix('.')} "
        "(commit not recorded by these runs)._\n"
    )


def _report_table(path: Path, header: str, what: str) -> tuple[str, str]:
    """``(the first table of report.md whose header starts with header, its made-line)``."""
    made, tables = _report_tables(path)
    found = [t for t in tables if t[0].startswith(header)]
    if not found:
        raise SystemExit(f"{_rel(path)}: expected a {what} table, none")
    return "\n".join(found[0]) + "\n", made


def render_mujoco_short(path: Path | None = None) -> str:
    """The side-by-side table of ``tdrl report``'s report.md (tdrl beside Tianshou)."""
    path = path or MUJOCO_SHORT
    table, made = _report_table(path, "| algorithm | task | tdrl | peer", "side-by-side")
    return table + "\n" + _mujoco_note(path, made)


def render_mujoco_short_libraries(path: Path | None = None) -> str:
    """The per-library table of ``tdrl report``'s report.md."""
    path = path or MUJOCO_SHORT
    return _report_table(path, "| library | algorithm | task", "per-library")[0]


# ---------------------------------------------------------------- GPU check


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise SystemExit(f"{_rel(path)}: expected gpu_check.sh's results, not found")
    with path.open() as f:
        return list(csv.DictReader(f))


def _gpu_note(folder: Path) -> str:
    env = json.loads((folder / "env.json").read_text()) if (folder / "env.json").is_file() else {}
    return (
        f"_`bash benchmarks/gpu_check.sh`, {env.get('date', 'date not recorded')}, commit "
        f"{env.get('commit', 'not recorded')}; {env.get('gpu', 'GPU not recorded')}, "
        f"{env.get('cpus', '?')}-core host, torch {env.get('torch', '?')} "
        f"(results: `{_rel(folder)}/`)._\n"  # a path, not a link: valid in README and docs
    )


def render_gpu_update(folder: Path | None = None) -> str:
    """Updates/s of the SAC Hopper-sized update per mode (``update.csv``)."""
    folder = folder or GPU
    csv_rows = _csv(folder / "update.csv")
    rows = {(r["mode"], r["device"]): float(r["updates_per_s"]) for r in csv_rows}
    cols = [("eager", "cpu", "CPU eager"), ("eager", "cuda", "GPU eager"),
            ("compile", "cuda", "GPU compile"),
            ("cudagraphs", "cuda", "GPU compile + CUDA graphs")]  # fmt: skip
    present = [c for c in cols if c[:2] in rows]
    env = json.loads((folder / "env.json").read_text()) if (folder / "env.json").is_file() else {}
    lines = [
        "| SAC Hopper-sized update (batch 256), updates/s | "
        + " | ".join(c[2] for c in present)
        + " |",
        "|---" * (len(present) + 1) + "|",
        f"| {env.get('gpu', 'GPU')} machine ({env.get('cpus', '?')}-core host) | "
        + " | ".join(f"{rows[c[:2]]:,.0f}" for c in present)
        + " |",
    ]
    return "\n".join(lines) + "\n\n" + _gpu_note(folder)


def render_gpu_e2e(folder: Path | None = None) -> str:
    """End-to-end training speed on the GPU (``e2e.csv``)."""
    folder = folder or GPU
    lines = [
        "| algorithm | task | mode | env steps (+ warm-up) | env steps/s | updates/s | compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in _csv(folder / "e2e.csv"):
        lines.append(
            f"| {r['algo'].upper()} | {r['task']} | {r['mode']} ({r['device']}) "
            f"| {int(r['env_steps']):,} (+ {int(r['warmup_steps']):,}) "
            f"| {float(r['env_steps_per_s']):,.0f} | {float(r['updates_per_s']):,.0f} "
            f"| {float(r['compile_s']):.1f} |"
        )
    return "\n".join(lines) + "\n\n" + _gpu_note(folder)


# ---------------------------------------------------------------- recipes

RECIPES_CLASSIC: list[tuple[str, str, str, str]] = [
    ("classic_dqn.py", "DQN on CartPole-v1", "dqn", "CartPole-v1"),
    ("classic_c51.py", "C51 on CartPole-v1", "c51", "CartPole-v1"),
    ("classic_rainbow.py", "Rainbow on CartPole-v1", "rainbow", "CartPole-v1"),
    ("classic_ppo.py", "PPO on CartPole-v1", "ppo", "CartPole-v1"),
    ("classic_a2c.py", "A2C on CartPole-v1", "a2c", "CartPole-v1"),
    ("classic_sac.py", "SAC on Pendulum-v1", "sac", "Pendulum-v1"),
    ("classic_td3.py", "TD3 on Pendulum-v1", "td3", "Pendulum-v1"),
    ("recurrent_drqn.py", "DRQN (LSTM Q-network) on CartPole-v1; shows the hidden state "
     "flowing", "drqn", "CartPole-v1"),
]  # fmt: skip


RECIPES_TORCHRL_ROW = (
    "| `torchrl_sac.py` | `python recipes/torchrl_sac.py` | tdrl's SAC loss in a plain TorchRL "
    "loop (TorchRL collector, replay buffer, `SoftUpdate`, logger) on Pendulum-v1 | -250 "
    "| see below | |"
)
"""The last row: not in the seed sweep (no ``tdrl train`` name), so no measured cells."""


def render_recipes_classic_links(path: Path | None = None) -> str:
    """recipes/README.md's copy of :func:`render_recipes_classic`, each recipe a link."""
    text = render_recipes_classic(path)
    return re.sub(r"^\| `(\w+\.py)` \|", r"| [\1](\1) |", text, flags=re.M)


def render_recipes_classic(path: Path | None = None) -> str:
    """docs/recipes.md's classic-control table: seeds reaching the threshold and the median
    env steps of those, from the seed sweep of the same preset (``sweeps/results.jsonl``)."""
    from tdrl.benchmark.seed_sweep import DEFAULT_OUT, load_records, reached_runs

    src = path or ROOT / DEFAULT_OUT
    if not src.is_file():
        raise SystemExit(f"{_rel(src)}: expected the seed sweep's results, not found")
    records = load_records(src)
    lines = [
        "| recipe | command | trains | threshold | seeds | env steps |",
        "|---|---|---|---|---|---|",
    ]
    for recipe, trains, algo, task in RECIPES_CLASSIC:
        rs = [r for r in records if r["algo"] == algo and r["task"] == task]
        if not rs:
            raise SystemExit(f"{_rel(src)}: expected records of {algo} on {task}, found none")
        ok = reached_runs(rs)
        steps = f"{statistics.median(r['env_step'] for r in ok):,.0f}" if ok else "–"
        lines.append(
            f"| `{recipe}` | `python recipes/{recipe}` | {trains} | {rs[0]['threshold']:g} "
            f"| {len(ok)}/{len(rs)} | {steps} |"
        )
    lines.append(RECIPES_TORCHRL_ROW)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- roofline


def render_roofline(path: Path | None = None) -> str:
    """Each family's update against the bare matrix products it makes (its FLOP floor) and
    against all its ATen operations replayed bare (its eager floor), and the large SAC
    update with 1 and 2 intra-op threads. Records from before the ATen replay existed show
    "–" in its two columns."""
    records = newest(load_jsonl(path or ROOFLINE, "python -m benchmarks roofline"))
    lines = [
        "| update (preset) | threads | update ms | matmul GFLOP | achieved GFLOP/s "
        "| bare matmuls GFLOP/s | × floor | ATen ops replayed, ms | × ops |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ops = f"{r['ops_ms']:.2f} | {r['x_ops']:.2f}" if "ops_ms" in r else "– | –"
        lines.append(
            f"| {r['row']} | {r['threads']} | {r['update_ms']:.2f} | {r['gflop']:.4f} "
            f"| {r['achieved']:.1f} | {r['bare']:.1f} | {r['x_floor']:.1f} | {ops} |"
        )
    by_threads = {r["threads"]: r for r in records if r["row"] == "sac-hopper"}
    extra = ""
    if 1 in by_threads and 2 in by_threads:
        gain = by_threads[1]["update_ms"] / by_threads[2]["update_ms"]
        extra = f", sac-hopper with 2 threads: {gain:.2f}× the 1-thread update rate"
    return "\n".join(lines) + "\n\n" + provenance(records, extra)


def render_floor(path: Path | None = None) -> str:
    """tdrl's and Tianshou's updates against the same math in bare PyTorch (no sampling):
    ``python -m benchmarks floor``."""
    records = newest(load_jsonl(path or FLOOR, "python -m benchmarks floor"))
    lines = [
        "| update (preset) | bare PyTorch ms | tdrl ms | Tianshou ms | tdrl / Tianshou "
        "| bare / Tianshou |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['algo']} {r['task']} | {r['floor_ms']:.2f} | {r['tdrl_ms']:.2f} "
            f"| {r['tianshou_ms']:.2f} | {r['tdrl_over_tianshou']:.2f} "
            f"| {r['floor_over_tianshou']:.2f} |"
        )
    return "\n".join(lines) + "\n\n" + provenance(records)


# ---------------------------------------------------------------- atari


def render_atari(path: Path | None = None) -> str:
    """DQN on Pong, env steps per second of each library's trainer and its split, and the
    DeepMind wrappers alone: ``python -m benchmarks atari``."""
    records = newest(load_jsonl(path or ATARI, "python -m benchmarks atari"))
    train = next((r for r in records if r.get("kind") == "train"), None)
    wrap = next((r for r in records if r.get("kind") == "wrapper"), None)
    if train is None or wrap is None:
        raise SystemExit(f"{_rel(path or ATARI)}: expected a train and a wrapper record "
                         "(written by `python -m benchmarks atari`)")  # fmt: skip
    sides = train["tdrl"], train["tianshou"]
    rate = [s["steps"] / s["total"] for s in sides]
    core = [s["steps"] / (s["collect"] + s["update"]) for s in sides]
    split = [
        f"{s['collect']:.1f} / {s['update']:.1f} / {s['total'] - s['collect'] - s['update']:.1f} s"
        for s in sides
    ]
    lines = [
        "| what | tdrl | Tianshou 2.0.1 | speed-up |",
        "|---|---|---|---|",
        f"| DQN on {train['task']}, {train['envs']} envs, {sides[0]['steps']:,.0f} training "
        f"env steps: env steps/s | {rate[0]:,.0f} | {rate[1]:,.0f} | {rate[0] / rate[1]:.2f}× |",
        f"| ↳ collects / updates / rest of the trainer | {split[0]} | {split[1]} | |",
        f"| ↳ collects + updates alone: env steps/s | {core[0]:,.0f} | {core[1]:,.0f} "
        f"| {core[0] / core[1]:.2f}× |",
        f"| `wrap_deepmind` alone, 1 env, random actions ({wrap['steps']:,} steps): env "
        f"steps/s | {wrap['tdrl_sps']:,.0f} | {wrap['peer_sps']:,.0f} "
        f"| {wrap['tdrl_sps'] / wrap['peer_sps']:.2f}× |",
    ]
    return "\n".join(lines) + "\n\n" + provenance(records)


# ---------------------------------------------------------------- first contact


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def render_first_contact(path: Path | None = None) -> str:
    """The README's cost paragraph: the newest fresh-clone nox run and the newest timing of
    the first training command (``benchmarks/first_contact.py``)."""
    how = "python benchmarks/first_contact.py"
    records = load_jsonl(path or FIRST_CONTACT, how)
    runs = [r for r in records if r["name"] == "nox_run"]
    trains = [r for r in records if r["name"] == "readme_train"]
    if not runs or not trains:
        raise SystemExit(f"{_rel(path or FIRST_CONTACT)}: expected a nox_run and a readme_train "
                         f"record (written by `{how} log` / `{how} train`)")  # fmt: skip
    run, train = runs[-1], trains[-1]
    sessions, env = run["sessions"], run.get("env_mb", {})
    secs = sorted(train["seconds"])
    workers = run.get("pytest_workers", 1)
    how_run = "in one process" if workers == 1 else f"on {workers} workers"
    shared = ", other jobs sharing the machine" if run["load1"] >= 1.5 else ""
    total = f"; {_minutes(run['total_s'])} in all" if "total_s" in run else ""
    parts = [
        f"What it costs, measured on a fresh clone ({run['date'][:10]}, commit "
        f"`{run['clone_commit'][:7]}`, {run['machine']['cores']} cores, 1-min load "
        f"{run['load1']:.1f} when recorded{shared}): the `tests` "
        f"session took {_minutes(sessions['tests'])} as nox reports it, building its "
        f"environment included ({run['tests_passed']:,} tests passed, {run['tests_skipped']} "
        f"skipped, in {_minutes(run['pytest_s'])} of pytest {how_run}); `lint` "
        f"{_minutes(sessions['lint'])}, `typecheck` {_minutes(sessions['typecheck'])}{total}.",
    ]
    if "tests" in env:
        lint = f", `lint` installs ruff alone ({env['lint']:,} MB)" if "lint" in env else ""
        parts.append(
            f"One environment of torch and the project (`.nox/tests`, {env['tests'] / 1024:.1f} "
            f"GB on disk) serves both `tests` and `typecheck`{lint}."
        )
    parts.append(
        f"The first command (PPO on CartPole-v1 to a test return of 500, process start "
        f"included) took {secs[0]:.0f}–{secs[-1]:.0f} s over {len(secs)} runs "
        f"({train['date'][:10]}, commit `{train['commit'][:7]}`, 1-min load "
        f"{train['load1']:.1f})."
    )
    examples = [r for r in records if r["name"] == "readme_example"]
    if examples:
        ex = examples[-1]
        parts.append(
            f"The 20-line example below, run as a script with no thread variables set, took "
            f"{ex['example_median']:.1f} s against {ex['cli_median']:.1f} s for `tdrl train "
            f"ppo CartPole-v1 --stop-reward 195` (medians of {ex['rounds']} alternating "
            f"rounds: {ex['ratio']:.2f}×, goal ≤ 1.5×; `python benchmarks/readme_example.py`, "
            f"{ex['date'][:10]}, commit `{ex['commit'][:7]}`, 1-min load {ex['load1']:.1f})."
        )
    return " ".join(parts) + "\n"


RENDERERS: dict[str, Callable[[], str]] = {
    "micro": render_micro,
    "micro-all": render_micro_all,
    "train": render_train,
    "zoo": render_zoo,
    "walltime": render_walltime,
    "mujoco-short": render_mujoco_short,
    "mujoco-short-libraries": render_mujoco_short_libraries,
    "gpu-update": render_gpu_update,
    "gpu-e2e": render_gpu_e2e,
    "recipes-classic": render_recipes_classic,
    "recipes-classic-links": render_recipes_classic_links,
    "roofline": render_roofline,
    "floor": render_floor,
    "first-contact": render_first_contact,
    "atari": render_atari,
}
"""The renderers this module adds to ``scripts/render_tables.py``."""
