"""The benchmark-table renderers (``scripts/tables_bench.py``) on small fixtures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import tables_bench as tb  # noqa: E402

BASE = {
    "command": "python -m benchmarks.__main__ batch",
    "commit": "0123456789abcdef+dirty",
    "machine": {"cpu": "Test CPU", "cores": 2},
    "date": "2026-11-27T04:00:00Z",
    "load1": 1.5,
}


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _timing(module: str, name: str, inv: str = "A", **kw: Any) -> dict[str, Any]:
    return {**BASE, "invocation": inv, "module": module, "name": name, "tdrl_s": 1e-5,
            "peer_s": 2e-5, "unit": "us", "goal": None, "labels": ["tdrl", "tianshou"],
            **kw}  # fmt: skip


def _micro_fixture() -> list[dict[str, Any]]:
    out = []
    for _, picks, _ in tb.MICRO_TIMINGS:
        for module, prefix in picks:
            out.append(_timing(module, prefix + " (fixture)"))
    c = {**BASE, "invocation": "A", "module": "bench_collector"}
    out += [
        {**c, "name": "CartPole-v1 x8 in-process, random", "kind": "steps_per_s",
         "tdrl": 100_000.0, "peer": 25_000.0, "raw": 125_000.0},
        {**c, "name": "tdrl / raw loop, random actions (random=True)", "kind": "share",
         "share": 0.8, "goal": 0.75, "rounds": 15},
        {**c, "name": "tdrl / raw loop, cheap policy fn (random torch actions)",
         "kind": "share", "share": 0.65, "goal": 0.7, "rounds": 15},
        {**c, "name": "CartPole-v1 x8 in-process, MLP policy", "kind": "steps_per_s",
         "tdrl": 60_000.0, "peer": 20_000.0, "raw": 100_000.0},
        {**c, "name": "tdrl / raw loop, same MLP policy", "kind": "share", "share": 0.6,
         "goal": 0.7, "rounds": 15},
        {**c, "name": "tdrl per vector step (us), MLP policy", "kind": "split_us",
         "parts": {"policy": 20.0, "env": 50.0}},
    ]  # fmt: skip
    return out


def test_micro_renders_every_row_with_provenance(tmp_path: Path) -> None:
    recs = _micro_fixture()
    recs.append(_timing("bench_step", "build Batch + add, float64, best (cap 1e+04)", "0-old"))
    text = tb.render_micro(_write(tmp_path / "m.jsonl", recs))
    assert "| `sample(256)`, 1e4 / 1e6 | 10.0 / 10.0 µs | 20.0 / 20.0 µs | 2.00× / 2.00× |" in text
    assert "| 80.0% | 20% | | ≥ 75% **met** |" in text
    assert "≥ 70% **not met**" in text
    assert "| ↳ share with a cheap policy function (random torch actions) | 65.0% |" in text
    assert "commit 0123456789+dirty; Test CPU (2 cores); 1-min load 1.5–1.5" in text
    assert "`python -m benchmarks batch`" in text
    assert text.count("build Batch + add") == 0  # labels, not record names, in the README
    all_rows = tb.render_micro_all(_write(tmp_path / "m.jsonl", recs))
    assert "0-old" not in all_rows and all_rows.count("| step |") == 3


def test_micro_goal_from_the_spec(tmp_path: Path) -> None:
    text = tb.render_micro(_write(tmp_path / "m.jsonl", _micro_fixture()))
    row = next(line for line in text.splitlines() if line.startswith("| Build that"))
    assert row.endswith("| ≥ 3× **not met** |")


def test_missing_or_empty_results_say_what_writes_them(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"expected a results file .*python -m benchmarks"):
        tb.render_micro(tmp_path / "none.jsonl")
    with pytest.raises(SystemExit, match="found none"):
        tb.render_zoo(_write(tmp_path / "empty.jsonl", []))
    with pytest.raises(SystemExit, match=r"m.jsonl: expected a bench_step record named"):
        tb.render_micro(_write(tmp_path / "m.jsonl", _micro_fixture()[1:]))
    with pytest.raises(SystemExit, match="not found"):
        tb.render_gpu_update(tmp_path)
    with pytest.raises(SystemExit, match=r"report\.md, not found"):
        tb.render_mujoco_short(tmp_path / "report.md")
    with pytest.raises(SystemExit, match="log, not found"):
        tb.render_walltime(tmp_path / "none.jsonl", tmp_path / "none.txt")


def _run(wall: float, steps: int, reached: bool = True) -> dict[str, Any]:
    return {"wall": wall, "train": wall, "steps": steps, "best": 200.0, "reached": reached,
            "collect": wall / 4, "update": wall / 4, "test": 0.1, "checkpoint": 0.0}  # fmt: skip


def test_time_to_threshold_table(tmp_path: Path) -> None:
    rec = {**BASE, "invocation": "A", "module": "bench_train_zoo", "name": "C51", "kind": "train",
           "algo": "c51", "task": "CartPole-v1", "threshold": 195.0, "seeds": [0, 1],
           "tdrl": [_run(4.0, 3000), _run(6.0, 5000, False)],
           "tianshou": [_run(10.0, 4000), _run(10.0, 4000)]}  # fmt: skip
    text = tb.render_zoo(_write(tmp_path / "z.jsonl", [rec]))
    assert "| C51 | CartPole-v1 | 195 | 5.0 (4,000) | 10.0 (4,000) | 0.50 | 0.50 | 1/2, 2/2 |" in (
        text
    )
    assert "seeds 0, 1 (means over them)" in text


def test_walltime_from_the_log_and_from_records(tmp_path: Path) -> None:
    log = tmp_path / "w.txt"
    log.write_text(
        "# python benchmarks/walltime_side_by_side.py --algos sac\n# 2026-11-23, idle\n"
        "sac tdrl     round 0:    80.0 s (process 90.5 s)\n"
        "sac tianshou round 0:   200.0 s (process 172.2 s)\n"
        "\nHopper-v5, 10000 env steps per run, 1 rounds (seeds 0..)\n"
    )
    text = tb.render_walltime(tmp_path / "none.jsonl", log)
    assert "| SAC | 80.0 s (125 env steps/s) | 200.0 s (50 env steps/s) | 0.40 (2.50×) " in text
    assert "≤ 0.5 **met**" in text and "commit not recorded" in text
    recs = [
        {**BASE, "invocation": "B", "module": "walltime", "name": f"ppo {lib} round 0",
         "algo": "ppo", "library": lib, "round": 0, "task": "Hopper-v5", "env_steps": 1000,
         "wall_s": wall, "process_s": wall}
        for lib, wall in (("tdrl", 6.0), ("tianshou", 10.0))
    ]  # fmt: skip
    text = tb.render_walltime(_write(tmp_path / "w.jsonl", recs), log)
    assert "| PPO | 6.0 s (167 env steps/s) | 10.0 s (100 env steps/s) | 0.60 (1.67×) " in text
    assert "**not met**" in text and "commit 0123456789+dirty" in text


def test_report_and_gpu_tables(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text(
        "# t\n\nGenerated by `tdrl report` on 2026-11-23 23:14 from 2 runs.\n\n"
        "| library | algorithm | task | x |\n|---|---|---|---|\n| tdrl | sac | Hopper-v5 | 1 |\n"
        "\n## Side by side\n\n| algorithm | task | tdrl | peer | peer return | difference "
        "| within spread |\n|---|---|---|---|---|---|---|\n| sac | Hopper-v5 | 1 | tianshou "
        "| 2 | -1 | yes |\n"
    )
    assert "| sac | Hopper-v5 | 1 | tianshou | 2 | -1 | yes |" in tb.render_mujoco_short(report)
    assert "2026-11-23 23:14" in tb.render_mujoco_short(report)
    assert tb.render_mujoco_short_libraries(report).endswith("| tdrl | sac | Hopper-v5 | 1 |\n")
    (tmp_path / "update.csv").write_text(
        "mode,device,updates,seconds,updates_per_s,compile_s\neager,cpu,3,3,100.4,0\n"
        "eager,cuda,3,3,150.6,0\n"
    )
    (tmp_path / "env.json").write_text('{"date": "2026-11-26", "commit": "abc", "gpu": "G"}')
    text = tb.render_gpu_update(tmp_path)
    assert "| CPU eager | GPU eager |" in text and "| G machine (?-core host) | 100 | 151 |" in text
    assert "commit abc" in text


def test_render_tables_registers_every_renderer() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import render_tables

    assert set(tb.RENDERERS) <= set(render_tables.RENDERERS)


def test_roofline_renders_rows_and_the_thread_gain(tmp_path: Path) -> None:
    row = {**BASE, "invocation": "A", "module": "bench_roofline", "name": "roofline",
           "gflop": 0.64, "achieved": 70.0, "bare": 77.0, "x_floor": 1.1, "rounds": 15}  # fmt: skip
    recs = [
        {
            **row,
            "row": "dqn",
            "threads": 1,
            "update_ms": 0.8,
            "x_floor": 5.6,
            "ops_ms": 0.5,
            "x_ops": 1.6,
        },
        {**row, "row": "sac-hopper", "threads": 1, "update_ms": 8.4},
        {**row, "row": "sac-hopper", "threads": 2, "update_ms": 5.6},
        {**row, "invocation": "0-old", "row": "dqn", "threads": 1, "update_ms": 9.9},
    ]
    text = tb.render_roofline(_write(tmp_path / "r.jsonl", recs))
    assert "| dqn | 1 | 0.80 | 0.6400 | 70.0 | 77.0 | 5.6 | 0.50 | 1.60 |" in text
    assert "| sac-hopper | 1 | 8.40 | 0.6400 | 70.0 | 77.0 | 1.1 | – | – |" in text  # older
    assert "9.90" not in text  # the newest invocation only
    assert "sac-hopper with 2 threads: 1.50× the 1-thread update rate" in text
    with pytest.raises(SystemExit, match="python -m benchmarks roofline"):
        tb.render_roofline(tmp_path / "missing.jsonl")


def test_first_contact_renders_the_newest_nox_run_and_train_timing(tmp_path: Path) -> None:
    base = {**BASE, "invocation": "A", "module": "log"}
    run = {**base, "name": "nox_run", "clone_commit": "abcdef0123", "tests_passed": 2348,
           "tests_skipped": 182, "pytest_s": 1099.6, "env_mb": {"tests": 2631, "lint": 36},
           "sessions": {"tests": 1320, "lint": 7, "typecheck": 120}}  # fmt: skip
    train = {**base, "module": "train", "name": "readme_train", "seconds": [31.0, 24.4, 27.9]}
    text = tb.render_first_contact(_write(tmp_path / "f.jsonl", [run, train]))
    assert "the `tests` session took 22 min" in text and "2,348 tests passed" in text
    assert "(`.nox/tests`, 2.6 GB on disk)" in text and "ruff alone (36 MB)" in text
    assert "took 24–31 s over 3 runs" in text and "commit `abcdef0`" in text
    assert "of pytest in one process" in text and "in all" not in text  # an old record
    parallel = {**run, "pytest_workers": 2, "total_s": 332, "load1": 0.4}
    text = tb.render_first_contact(_write(tmp_path / "p.jsonl", [parallel, train]))
    assert "of pytest on 2 workers" in text and "; 6 min in all." in text
    assert "sharing the machine" not in text  # idle when recorded
    assert "20-line example" not in text  # not measured yet: not mentioned
    example = {**base, "module": "readme_example", "name": "readme_example", "rounds": 3,
               "example_median": 18.04, "cli_median": 17.8, "ratio": 1.0135}  # fmt: skip
    text = tb.render_first_contact(_write(tmp_path / "e.jsonl", [run, train, example]))
    assert "took 18.0 s against 17.8 s" in text and "3 alternating rounds: 1.01×" in text
    with pytest.raises(SystemExit, match="readme_train"):
        tb.render_first_contact(_write(tmp_path / "g.jsonl", [run]))


def test_atari_renders_rates_split_and_wrappers(tmp_path: Path) -> None:
    row = {**BASE, "module": "bench_atari"}
    side = {"collect": 6.0, "update": 2.0, "total": 10.0, "steps": 2000.0}
    peer = {"collect": 12.0, "update": 4.0, "total": 20.0, "steps": 2000.0}
    recs = [
        {
            **row,
            "invocation": "B",
            "name": "wrap_deepmind",
            "kind": "wrapper",
            "steps": 1000,
            "tdrl_sps": 3000.0,
            "peer_sps": 1500.0,
        },
        {
            **row,
            "invocation": "B",
            "name": "dqn Pong",
            "kind": "train",
            "task": "Pong",
            "envs": 10,
            "tdrl": side,
            "tianshou": peer,
        },
        {
            **row,
            "invocation": "A",
            "name": "wrap_deepmind",
            "kind": "wrapper",
            "steps": 1000,
            "tdrl_sps": 9999.0,
            "peer_sps": 1.0,
        },
    ]
    text = tb.render_atari(_write(tmp_path / "a.jsonl", recs))
    assert (
        "| DQN on Pong, 10 envs, 2,000 training env steps: env steps/s | 200 | 100 | 2.00× |"
        in (text)
    )
    split = (
        "| ↳ collects / updates / rest of the trainer | 6.0 / 2.0 / 2.0 s | 12.0 / 4.0 / 4.0 s | |"
    )
    assert split in text
    assert "| ↳ collects + updates alone: env steps/s | 250 | 125 | 2.00× |" in text
    assert "(1,000 steps): env steps/s | 3,000 | 1,500 | 2.00× |" in text
    assert "9,999" not in text  # the newest invocation only
    with pytest.raises(SystemExit, match="a train and a wrapper record"):
        tb.render_atari(_write(tmp_path / "b.jsonl", recs[:1]))
    with pytest.raises(SystemExit, match="python -m benchmarks atari"):
        tb.render_atari(tmp_path / "missing.jsonl")


# ------------------------------------------------------------- goals, median of 3 runs
import tables_goals as tg  # noqa: E402


def _goal_runs(inv: str, commit: str, cheap: float, numpy_speedup: float) -> list[dict[str, Any]]:
    c = {**BASE, "invocation": inv, "commit": commit, "module": "bench_collector"}
    s = {**BASE, "invocation": inv, "commit": commit, "module": "bench_step"}
    return [
        {**c, "name": "tdrl / raw loop, cheap policy fn (random torch actions)", "share": cheap},
        {**c, "name": "tdrl / raw loop, same MLP policy", "share": 0.9},
        {**c, "name": "tdrl / raw loop, random actions (random=True)", "share": 0.8},
        {**s, "name": "build Batch + add, float32, ids list (cap 1e5)", "tdrl_s": 1.0,
         "peer_s": 3.2},
        {**s, "name": "build Batch, 8 envs (6 arrays, info={})", "tdrl_s": 1.0,
         "peer_s": numpy_speedup},
    ]  # fmt: skip


def test_micro_goals_take_the_median_of_the_newest_three_runs_at_one_commit(
    tmp_path: Path,
) -> None:
    recs = _goal_runs("2026-01-01T00:00:00Z", "old", 0.99, 2.0)  # another commit: left out
    recs += _goal_runs("2026-01-02T00:00:00Z", "new", 0.60, 0.9)  # the fourth newest: out
    for day, cheap, speed in (("03", 0.69, 1.1), ("04", 0.72, 0.8), ("05", 0.71, 0.95)):
        recs += _goal_runs(f"2026-01-{day}T00:00:00Z", "new", cheap, speed)
    out = tg.render_micro_goals(_write(tmp_path / "r.jsonl", recs))
    cheap_row = next(line for line in out.splitlines() if "cheap policy" in line)
    assert "| 69.0% | 72.0% | 71.0% | 71.0% | ≥ 70% **met** |" in cheap_row
    numpy_row = next(line for line in out.splitlines() if "numpy" in line)
    assert "| 1.10× | 0.80× | 0.95× | 0.95× | ≥ 1× **not met** |" in numpy_row
    assert "commit new" in out and "99.0%" not in out and "60.0%" not in out


def test_micro_goals_with_one_run_and_a_missing_row(tmp_path: Path) -> None:
    recs = _goal_runs("2026-01-03T00:00:00Z", "c", 0.75, 1.2)
    out = tg.render_micro_goals(_write(tmp_path / "r.jsonl", recs))
    assert "| 75.0% | – | – | 75.0% | ≥ 70% **met** |" in out
    with pytest.raises(SystemExit, match="cheap policy"):
        tg.render_micro_goals(_write(tmp_path / "s.jsonl", recs[1:]))
