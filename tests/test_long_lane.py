"""The long-run lane (``benchmarks/long``): its order, its status and its pause lock."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location("lane", ROOT / "benchmarks/long/lane.py")
    assert spec is not None and spec.loader is not None
    lane = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "lane", lane)  # dataclasses look their module up
    spec.loader.exec_module(lane)
    monkeypatch.setattr(lane, "OUT", tmp_path / "mujoco-1m")
    monkeypatch.setattr(lane, "PAUSE_LOCK", tmp_path / "pause.lock")
    monkeypatch.setattr(lane, "PID_FILE", tmp_path / "lane.pid")
    return lane


def test_the_order_is_cheapest_evidence_first(tmp_path: Path, monkeypatch: Any) -> None:
    lane = _lane(tmp_path, monkeypatch)
    items = [(u.item, u.algo) for u in lane.ITEMS]
    assert items[:11] == [(1, "ppo")] * 6 + [(2, "trpo")] * 5
    assert [u.task for u in lane.ITEMS[4:6]] == ["Walker2d-v4", "Ant-v4"]  # v3 physics
    assert lane.ITEMS[10].task == "Ant-v4" and lane.ITEMS[10].seeds == 1
    assert items[11:14] == [(3, "sac"), (3, "sac"), (4, "td3")]
    assert [u.item for u in lane.ITEMS] == sorted(u.item for u in lane.ITEMS)
    cmd = lane.ITEMS[0].command()
    assert cmd[cmd.index("--env-steps") + 1] == "1000000" and "--no-progress" in cmd


def test_status_counts_finished_and_partial_runs(tmp_path: Path, monkeypatch: Any) -> None:
    lane = _lane(tmp_path, monkeypatch)
    first = lane.ITEMS[0]
    first.run_dir(0).mkdir(parents=True)
    (first.run_dir(0) / "done.json").write_text(
        json.dumps({"env_step": 1_000_000, "wall_s": 1800.0})
    )
    first.run_dir(1).mkdir(parents=True)
    (first.run_dir(1) / "progress.json").write_text(json.dumps({"env_step": 250_000}))
    assert lane.run_state(first, 0) == (True, 1_000_000)
    assert lane.run_state(first, 1) == (False, 250_000)
    assert lane.core_hours_per_run("ppo") == pytest.approx(0.5)  # measured, not guessed
    text = lane.status()
    assert text.startswith("long-run lane: stopped")
    assert "item 1: ppo  Hopper-v5       done 25% 0%" in text


def test_a_timing_benchmark_holds_the_pause_lock(tmp_path: Path, monkeypatch: Any) -> None:
    lane = _lane(tmp_path, monkeypatch)
    assert not lane._pause_held()
    with lane.PAUSE_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert lane._pause_held()
    assert not lane._pause_held()
