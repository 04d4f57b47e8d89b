"""Regenerate every generated table in the README and docs from the committed results.

A generated table sits between two markers, and only there::

    <!-- generated: NAME (python scripts/render_tables.py) -->
    ...
    <!-- end generated: NAME -->

``NAME`` picks its renderer from :data:`RENDERERS`, each reading a committed results file:

* ``algorithms``: the seed sweep, ``sweeps/results.jsonl`` (``tdrl bench --to-threshold``);
* ``mujoco-1m``: the long-run lane, ``benchmarks/results/mujoco-1m/`` (``tdrl report``);
* ``conformance``: Tianshou's own tests, ``conformance/expected*.toml`` (what CI enforces);
* ``tianshou-scripts``: Tianshou's algorithm scripts at their default budget,
  ``conformance/results/default-budget.json`` (``conformance/run.py --default-budget``);
* ``peers``: tdrl beside Tianshou, SB3, SBX and TorchRL,
  ``benchmarks/results/peers/results.jsonl`` (``python -m benchmarks peers``).

    python scripts/render_tables.py           # rewrite the tables in place
    python scripts/render_tables.py --check   # exit 1 naming each stale table

``tests/test_readme.py`` runs the check: a table edited by hand, or results committed
without rendering, fails the default suite.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", ROOT / "recipes" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+) \(python scripts/render_tables.py\) -->\n)"
    r"(?P<body>.*?)"
    r"(<!-- end generated: (?P=name) -->)",
    re.S,
)

# the README's algorithm table: (sweep record name, task, what the row calls it)
ALGORITHM_ROWS: list[tuple[str, str, str]] = [
    ("dqn", "CartPole-v1", "`dqn` (DQN)"),
    ("c51", "CartPole-v1", "`c51` (C51)"),
    ("qrdqn", "CartPole-v1", "`qrdqn` (QR-DQN)"),
    ("iqn", "CartPole-v1", "`iqn` (IQN)"),
    ("fqf", "CartPole-v1", "`fqf` (FQF)"),
    ("rainbow", "CartPole-v1", "`rainbow` (Rainbow)"),
    ("bdqn", "Pendulum-v1", "`bdqn` (BDQN)"),
    ("drqn", "CartPole-v1", "`drqn` (DRQN)"),
    ("discrete_sac", "CartPole-v1", "`discrete_sac` (discrete SAC)"),
    ("reinforce", "CartPole-v1", "`reinforce` (REINFORCE)"),
    ("a2c", "CartPole-v1", "`a2c` (A2C)"),
    ("ppo", "CartPole-v1", "`ppo` (PPO)"),
    ("ppo", "Pendulum-v1", "`ppo` (PPO)"),
    ("npg", "Pendulum-v1", "`npg` (NPG)"),
    ("trpo", "Pendulum-v1", "`trpo` (TRPO)"),
    ("ddpg", "Pendulum-v1", "`ddpg` (DDPG)"),
    ("td3", "Pendulum-v1", "`td3` (TD3)"),
    ("sac", "Pendulum-v1", "`sac` (SAC)"),
    ("redq", "Pendulum-v1", "`redq` (REDQ)"),
    ("dqn+icm", "CartPole-v1", "`dqn --icm` (DQN + ICM)"),
    ("ppo+icm", "CartPole-v1", "`ppo --icm` (PPO + ICM)"),
    ("gail", "Pendulum-v1", "`gail` (GAIL, `tdrl gather sac` data)"),
    ("psrl", "tdrl/NChain-v0", "`psrl` (PSRL)"),
    ("bc", "Pendulum-v1", "`bc` (behaviour cloning, `tdrl gather sac` data)"),
    ("bcq", "Pendulum-v1", "`bcq` (BCQ, `tdrl gather sac` data)"),
    ("cql", "Pendulum-v1", "`cql` (CQL, `tdrl gather sac` data)"),
    ("td3_bc", "Pendulum-v1", "`td3_bc` (TD3+BC, `tdrl gather sac` data)"),
    ("iql", "Pendulum-v1", "`iql` (IQL, `tdrl gather sac` data)"),
    ("bc", "CartPole-v1", "`bc` (behaviour cloning, `tdrl gather dqn` data)"),
    ("discrete_bcq", "CartPole-v1", "`discrete_bcq` (discrete BCQ, `tdrl gather dqn` data)"),
    ("discrete_cql", "CartPole-v1", "`discrete_cql` (discrete CQL, `tdrl gather dqn` data)"),
    ("discrete_crr", "CartPole-v1", "`discrete_crr` (discrete CRR, `tdrl gather dqn` data)"),
]


def _task_cell(algo: str, task: str) -> str:
    if task.startswith("tdrl/"):
        return f"`{task}`"
    return "Pendulum-v1 (discretized)" if algo == "bdqn" else task


def render_algorithms() -> str:
    """The README's algorithm table from ``sweeps/results.jsonl``: seeds reaching the
    threshold (a test after the first gradient step), median steps and seconds of those."""
    from tdrl.benchmark.seed_sweep import DEFAULT_OUT, load_records, reached_runs

    records = load_records(ROOT / DEFAULT_OUT)
    lines = [
        "| `tdrl train` name | task | threshold | seeds 0-4 reaching it | steps (median) "
        "| wall s (median) |",
        "|---|---|---|---|---|---|",
    ]
    for algo, task, label in ALGORITHM_ROWS:
        rs = [r for r in records if r["algo"] == algo and r["task"] == task]
        if not rs:
            raise SystemExit(f"{DEFAULT_OUT}: expected records of {algo} on {task}, found none")
        ok = reached_runs(rs)
        offline = all(r["env_step"] == 0 for r in rs)
        key, unit = ("gradient_step", " gradient") if offline else ("env_step", "")
        steps = f"{statistics.median(r[key] for r in ok):,.0f}{unit}" if ok else "–"
        secs = f"{statistics.median(r['seconds'] for r in ok):.0f}" if ok else "–"
        threshold = f"{rs[0]['threshold']:g}"
        lines.append(
            f"| {label} | {_task_cell(algo, task)} | {threshold} | {len(ok)}/{len(rs)} "
            f"| {steps} | {secs} |"
        )
    return "\n".join(lines) + "\n"


def render_mujoco_1m() -> str:
    """tdrl's 1M-step MuJoCo runs beside Tianshou's published table (the lane's results)."""
    from tdrl.benchmark.published import published_table
    from tdrl.benchmark.report import load_runs

    runs = load_runs([ROOT / "benchmarks" / "results" / "mujoco-1m"])
    lines = published_table(runs)
    table = [line for line in lines if line.startswith("|")]
    if not table:
        return "(no 1M-step run has finished an epoch yet)\n"
    notes = [line for line in lines if line.startswith("* ")]
    return "\n".join(table) + "\n" + "".join(f"\n{n}" for n in notes) + ("\n" if notes else "")


def _conformance(name: str) -> Callable[[], str]:
    """A renderer of ``conformance/report.py`` (which reads the conformance listings)."""

    def render() -> str:
        sys.path.insert(0, str(ROOT / "conformance"))
        try:
            import report  # conformance/report.py

            return str(getattr(report, name)())
        finally:
            sys.path.remove(str(ROOT / "conformance"))

    return render


PEERS_RESULTS = ROOT / "benchmarks" / "results" / "peers" / "results.jsonl"


def render_peers(path: Path | None = None) -> str:
    """The peer benchmark's tables (env steps per second with tdrl / peer, time to
    threshold) from its results file: per row the newest invocation that ran it."""
    if str(ROOT) not in sys.path:  # benchmarks/ is a package of the checkout, not installed
        sys.path.insert(0, str(ROOT))
    from benchmarks.peers.table import load, markdown

    return markdown(load(path or PEERS_RESULTS))


sys.path.insert(0, str(Path(__file__).resolve().parent))
import tables_bench  # noqa: E402  (scripts/tables_bench.py: the benchmark tables)
import tables_goals  # noqa: E402  (scripts/tables_goals.py: the goals, median of 3 runs)
import tables_scaling  # noqa: E402  (scripts/tables_scaling.py: docs/scaling.md's tables)

RENDERERS: dict[str, Callable[[], str]] = {
    "algorithms": render_algorithms,
    "mujoco-1m": render_mujoco_1m,
    "conformance": _conformance("render_counts"),
    "tianshou-scripts": _conformance("render_default_budget"),
    "peers": render_peers,
    **tables_bench.RENDERERS,
    **tables_goals.RENDERERS,
    **tables_scaling.RENDERERS,
}


def render(text: str, cache: dict[str, str]) -> str:
    """``text`` with every generated block re-rendered (``cache``: renders by name)."""

    def block(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in RENDERERS:
            raise SystemExit(f"generated table {name!r}: expected one of {sorted(RENDERERS)}")
        if name not in cache:
            cache[name] = RENDERERS[name]()
        return m.group(1) + cache[name] + m.group(4)

    return BLOCK.sub(block, text)


def main(argv: list[str]) -> int:
    """Rewrite (or ``--check``) every generated table."""
    check = argv == ["--check"]
    if argv and not check:
        print(f"render_tables.py: expected no argument or --check, got {argv}", file=sys.stderr)
        return 2
    cache: dict[str, Any] = {}
    stale = []
    for path in FILES:
        text = path.read_text()
        new = render(text, cache)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new)
    if check and stale:
        names = ", ".join(map(str, stale))
        print(f"stale generated tables in {names}: run python scripts/render_tables.py")
        return 1
    print(("rewrote " + ", ".join(map(str, stale))) if stale else "every table is current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
