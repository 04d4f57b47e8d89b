"""The seed sweep to a threshold (:mod:`tdrl.benchmark.seed_sweep`): its records, its table,
resuming, and its three front ends (``tdrl bench --to-threshold``, ``tdrl report
--seed-table``, ``scripts/seed_sweep.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tdrl.benchmark import seed_sweep
from tdrl.cli import bench, report

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "sweeps" / "results.jsonl"


def record(algo: str, seed: int, reached: bool = True, env_step: int = 1000) -> dict[str, Any]:
    return {
        **{"algo": algo, "task": "CartPole-v1", "seed": seed, "threshold": 195.0},
        **{"best_reward": 200.0 if reached else 50.0},
        **{"best_trained_reward": 200.0 if reached else 50.0, "reached": reached},
        **{"env_step": env_step, "gradient_step": env_step // 10, "seconds": 2.0},
    }


def test_the_committed_results_render_one_row_per_preset() -> None:
    records = seed_sweep.load_records(RESULTS)
    presets = {(r["algo"], r["task"]) for r in records}
    lines = seed_sweep.seed_table(records).splitlines()
    assert len(lines) == 2 + len(presets) and lines[0].startswith("| algorithm | task |")


def test_table_counts_seeds_medians_and_done() -> None:
    rs = [record("dqn", s, reached=s != 4, env_step=1000 * (s + 1)) for s in range(5)]
    rs += [{**record("bc", 0, env_step=0), "gradient_step": 500}]  # offline: gradient steps
    rs += [{**record("bc", 1, env_step=0), "gradient_step": 0}]  # "reached" untrained: no
    lines = seed_sweep.seed_table(rs).splitlines()
    assert lines[2] == "| bc | CartPole-v1 | 195.0 | 1/2 | 500 gradient | 2.0 | no |"
    assert lines[3] == "| dqn | CartPole-v1 | 195.0 | 4/5 | 2,500 env | 2.0 | yes |"


def test_sweep_runs_only_the_missing_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text(json.dumps(record("dqn", 0)) + "\n")
    ran: list[tuple[str, str, int]] = []

    def fake(job: tuple[str, str, int], path: Path, *_: Any) -> None:
        ran.append(job)
        with path.open("a") as f:
            f.write(json.dumps(record(job[0], job[2])) + "\n")

    monkeypatch.setattr(seed_sweep, "_run_in_process", fake)
    assert len(seed_sweep.sweep([("dqn", "CartPole-v1")], seeds=3, workers=1, out=out)) == 3
    assert sorted(ran) == [("dqn", "CartPole-v1", 1), ("dqn", "CartPole-v1", 2)]
    ran.clear()
    assert (
        bench.main([bench.TO_THRESHOLD, "dqn:CartPole-v1", "--seeds", "3", "--out", str(out)]) == 0
    )
    assert ran == []  # all recorded: nothing runs again


def test_the_front_ends_print_the_same_table(capsys: pytest.CaptureFixture[str]) -> None:
    expected = seed_sweep.seed_table(seed_sweep.load_records(RESULTS)) + "\n"
    assert report.main(["--seed-table", str(RESULTS)]) == 0
    assert capsys.readouterr().out == expected
    assert bench.main([bench.TO_THRESHOLD, "--table", "--out", str(RESULTS)]) == 0
    assert capsys.readouterr().out == expected
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = [sys.executable, str(ROOT / "scripts" / "seed_sweep.py"), "--table"]
    out = subprocess.run(script, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout == expected, out.stderr[-2000:]


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([bench.TO_THRESHOLD, "dqn-CartPole-v1", "--out", str(tmp_path / "r")]) == 2
    assert "expected ALGO:TASK" in capsys.readouterr().err
    assert report.main(["--seed-table", str(tmp_path / "missing.jsonl")]) == 2
    assert "no seed-sweep records" in capsys.readouterr().err


@pytest.mark.slow
def test_one_real_run_records_reaching_a_low_threshold(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    argv = ["dqn:CartPole-v1", "--seeds", "1", "--threshold", "15", "--out", str(out)]
    assert seed_sweep.main(argv) == 0
    (rec,) = seed_sweep.load_records(out)
    assert rec["reached"] and rec["threshold"] == 15.0 and rec["env_step"] > 0
    # a record's fields in order, the commit it was measured at last
    assert list(rec) == [*record("dqn", 0), "commit"] and rec["commit"]


def test_a_record_names_the_commit_it_was_measured_at() -> None:
    from tdrl.benchmark.provenance import source_commit
    from tdrl.benchmark.seed_sweep import run_to_threshold

    rec = run_to_threshold("dqn", "CartPole-v1", 0, threshold=-1.0)  # reached at once
    assert rec["commit"] == source_commit() and rec["commit"] != ""
    assert rec["reached"] and rec["gradient_step"] > 0
