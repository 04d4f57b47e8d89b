"""The peer benchmark's harness: alignment, medians and ratios, n/a, the README renderer,
and a tiny run of each installed peer."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_peers
from benchmarks.peers import alignment, core, sb3_peer, table

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------ alignment
def test_sb3_dqn_is_aligned_to_the_preset() -> None:
    kw = sb3_peer.kwargs_for(core.ROWS["dqn-cartpole"], "sb3")
    assert kw["learning_rate"] == 1e-3 and kw["gamma"] == 0.9 and kw["batch_size"] == 64
    assert kw["buffer_size"] == 20_000 and kw["learning_starts"] == 640 and kw["n_steps"] == 3
    # one update per collect of 10 env steps (10 envs, train_freq in vec steps)
    assert kw["train_freq"] == 1 and kw["gradient_steps"] == 1
    # 320 gradient steps between target updates = 3200 env steps, a hard copy
    assert kw["target_update_interval"] == 3200 and kw["tau"] == 1.0
    assert kw["exploration_initial_eps"] == kw["exploration_final_eps"] == 0.1
    assert math.isinf(kw["max_grad_norm"])
    assert "max_grad_norm" not in sb3_peer.kwargs_for(core.ROWS["dqn-cartpole"], "sbx")
    assert sb3_peer.policy_kwargs_for(core.ROWS["dqn-cartpole"], "sb3") == {
        "net_arch": [128, 128, 128]
    }


def test_sb3_ppo_and_sac_are_aligned_to_the_presets() -> None:
    ppo = sb3_peer.kwargs_for(core.ROWS["ppo-cartpole"], "sb3")
    assert (ppo["n_steps"], ppo["batch_size"], ppo["n_epochs"]) == (100, 64, 10)  # x 20 envs
    assert ppo["normalize_advantage"] is False and ppo["ent_coef"] == 0.0
    assert (ppo["clip_range"], ppo["vf_coef"], ppo["max_grad_norm"]) == (0.2, 0.5, 0.5)
    sac = sb3_peer.kwargs_for(core.ROWS["sac-pendulum"], "sbx")
    assert (sac["train_freq"], sac["gradient_steps"]) == (1, 10)  # 10 updates per 10 steps
    assert sac["ent_coef"] == "auto_0.2" and sac["learning_starts"] == 1000
    assert sac["batch_size"] == 128 and sac["qf_learning_rate"] == 1e-3
    hopper = sb3_peer.kwargs_for(core.ROWS["sac-hopper"], "sb3")
    assert (hopper["train_freq"], hopper["gradient_steps"], hopper["batch_size"]) == (1, 1, 256)
    assert hopper["ent_coef"] == 0.2 and "qf_learning_rate" not in hopper


def test_every_peer_has_alignment_notes() -> None:
    assert set(alignment.ALIGNMENT) == set(core.LIBRARIES) - {"tdrl"}
    for notes in alignment.ALIGNMENT.values():
        assert notes and all(len(n) == 4 and all(n) for n in notes)
    text = alignment.notes_text()
    assert "target_update_interval" in text and "XLA" in text


def test_rows_and_budgets() -> None:
    assert [(r.algo, r.task) for r in core.ROWS.values()] == [
        ("dqn", "CartPole-v1"),
        ("ppo", "CartPole-v1"),
        ("sac", "Pendulum-v1"),
        ("sac", "Hopper-v5"),
    ]
    assert core.ROWS["sac-hopper"].train_steps == 10_000
    for row in core.ROWS.values():
        assert row.train_steps % row.eval_every == 0
    rows = bench_peers.parse_rows("sac-hopper", ["sac-hopper=2000"])
    assert rows[0].train_steps == 2000 and rows[0].eval_every == 2000
    with pytest.raises(SystemExit):
        bench_peers.parse_rows(None, ["nope=3"])


# ------------------------------------------------------------------------ the clock
def test_eval_log_takes_tests_off_the_clock() -> None:
    log = core.EvalLog(threshold=10.0)
    log.start()
    log.evaluate(100, lambda: 5.0)
    log.evaluate(200, lambda: 12.0)
    log.evaluate(300, lambda: 20.0)
    train_s = log.stop()
    assert train_s >= 0 and log.eval_s >= 0
    assert [(p[0], p[2]) for p in log.points] == [(100, 5.0), (200, 12.0), (300, 20.0)]
    assert log.to_threshold()[1] == 200  # type: ignore[index]
    assert log.to_threshold(after=250)[1] == 300  # type: ignore[index]
    assert core.EvalLog(threshold=None).to_threshold() is None
    assert log.threads["busy_threads"] >= 0 and "cpu_per_wall" in log.threads


# ------------------------------------------------------------------ medians and ratios
def _rec(lib: str, row: str, sps: float | None, ttt: float | None = None, **kw: Any) -> dict:
    base: dict[str, Any] = {
        "run_id": kw.pop("run_id", "2026-01-01T00:00:00Z"),
        "lib": lib,
        "row": row,
        "round": kw.pop("round", 0),
        "threshold": kw.pop("threshold", 195.0),
        "budget": {"warmup": 640, "train_steps": 10_000, "eval_every": 1000, "eval_episodes": 10},
        "commit": "abcdef1234567",
        "dirty": False,
        "machine": {"cpu": "test cpu", "cores": 2, "loadavg": [0.5, 0.5, 0.5]},
    }
    if sps is None:
        return {**base, "status": "n/a", "reason": kw.pop("reason", "boom")}
    return {
        **base,
        "status": "ok",
        "steps_per_s": sps,
        "time_to_threshold_s": ttt,
        "threads": {"cpu_per_wall": 0.99, "busy_threads": 1},
        **kw,
    }


def test_medians_and_ratios() -> None:
    recs = [
        _rec("tdrl", "dqn-cartpole", 1000.0, 5.0),
        _rec("tdrl", "dqn-cartpole", 3000.0, 7.0, round=1),
        _rec("tdrl", "dqn-cartpole", 2000.0, None, round=2),
        _rec("sb3", "dqn-cartpole", 1000.0, 9.0),
        _rec("sb3", "dqn-cartpole", None, round=1, reason="RuntimeError: x"),
    ]
    cells = table.summarize(recs)["dqn-cartpole"]
    assert cells["tdrl"]["sps"] == 2000.0 and cells["tdrl"]["ttt"] == 6.0
    assert cells["tdrl"]["reached"] == "2/3"
    assert cells["sb3"]["sps"] == 1000.0 and cells["sb3"]["failed"] == 1  # one round ran
    assert table.ratio(cells["tdrl"]["sps"], cells["sb3"]["sps"]) == 2.0
    assert table.ratio(2.0, 0.0) is None


def test_markdown_gives_ratios_and_na_with_the_reason() -> None:
    recs = [
        _rec("tdrl", "dqn-cartpole", 2000.0, 5.0),
        _rec("tianshou", "dqn-cartpole", 1000.0, 10.0),
        _rec("sb3", "dqn-cartpole", 4000.0, None),
        _rec("sbx", "dqn-cartpole", None, reason="sbx not installed"),
        _rec("tdrl", "sac-hopper", 100.0, None, threshold=None),
        _rec("torchrl", "sac-hopper", 50.0, None, threshold=None),
        # an older invocation of the same row does not count
        _rec("tdrl", "dqn-cartpole", 1.0, run_id="2025-01-01T00:00:00Z"),
    ]
    text = table.markdown(recs)
    dqn = next(line for line in text.splitlines() if line.startswith("| DQN CartPole-v1 | 640"))
    assert "| 2,000 | 1,000 (2.00×) | 4,000 (0.50×) | n/a: sbx not installed | not run |" in dqn
    hopper = next(line for line in text.splitlines() if line.startswith("| SAC Hopper-v5 | 640"))
    assert "| 100 | not run | not run | not run | 50 (2.00×) |" in hopper
    ttt = [line for line in text.splitlines() if line.startswith("| DQN CartPole-v1 | 195")]
    assert ttt == [
        "| DQN CartPole-v1 | 195 | 5.0 s (1/1) | 10.0 s (1/1) | not reached (0/1) | n/a | not run |"
    ]
    assert "| SAC Hopper-v5 | – | – |" in text
    assert "commit abcdef1234" in text and "test cpu (2 cores)" in text
    assert table.markdown([]).startswith("(no peer benchmark")


def test_render_tables_renders_the_peers_block(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "render_tables_peers", ROOT / "scripts" / "render_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "peers" in module.RENDERERS
    results = tmp_path / "results.jsonl"
    results.write_text(
        "\n".join(
            json.dumps(r)
            for r in (_rec("tdrl", "ppo-cartpole", 900.0, 3.0), _rec("sb3", "ppo-cartpole", 300.0))
        )
    )
    body = module.render_peers(results)
    assert "| PPO CartPole-v1 | 640 + 10,000 | 900 | not run | 300 (3.00×) |" in body
    block = (
        "<!-- generated: peers (python scripts/render_tables.py) -->\n| stale |\n"
        "<!-- end generated: peers -->\n"
    )
    module.RENDERERS["peers"] = lambda: body
    assert module.render(block, {}) == block.replace("| stale |\n", body)


# ------------------------------------------------------------------------ n/a handling
def test_a_peer_that_cannot_run_is_na(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    row = core.ROWS["dqn-cartpole"]
    monkeypatch.setitem(bench_peers.UNSUPPORTED, ("sb3", row.name), "no such algorithm")
    monkeypatch.setitem(bench_peers.REQUIRES, "sbx", "surely_not_a_module_xyz")
    out = tmp_path / "r.jsonl"
    recs = bench_peers.measure([row], ["sb3", "sbx"], rounds=1, out=out)
    assert [(r["lib"], r["status"], r["reason"]) for r in recs] == [
        ("sb3", "n/a", "no such algorithm"),
        ("sbx", "n/a", "surely_not_a_module_xyz not installed"),
    ]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written == recs
    assert {"commit", "dirty", "machine", "run_id", "budget"} <= set(written[0])
    assert "steps_per_s" not in written[0]  # never a number for a run that did not happen


def test_a_run_that_raises_is_na(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the peer broke")

    monkeypatch.setattr(bench_peers, "child", boom)
    out = tmp_path / "one.json"
    row = json.dumps(dataclasses.asdict(core.ROWS["dqn-cartpole"]))
    assert bench_peers._child_main(["tdrl", row, "0", str(out)]) == 0
    assert json.loads(out.read_text()) == {
        "status": "n/a",
        "reason": "RuntimeError: the peer broke",
    }


def test_alternating_order() -> None:
    libs = list(core.LIBRARIES)
    assert bench_peers.order(libs, 0) == libs
    assert bench_peers.order(libs, 1) == libs[::-1]


def test_thread_summary_and_provenance() -> None:
    s = core.thread_summary({"1": 10}, {"1": 110, "2": 2})
    assert s == {"busy_threads": 1, "top_share": 0.98, "ticks": 102}
    assert core.git_commit()["commit"] != ""
    m = core.machine_info()
    assert m["cores"] and len(m["loadavg"]) == 3


def test_provenance_dirty_means_code_not_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "r.jsonl").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.setattr(core, "ROOT", tmp_path)
    assert core.git_commit()["dirty"] is False
    (tmp_path / "benchmarks" / "results" / "r.jsonl").write_text("{}\n{}\n")  # a record
    (tmp_path / "benchmarks" / "results" / "new.csv").write_text("a\n")
    assert core.git_commit()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")  # the code itself
    assert core.git_commit()["dirty"] is True


def test_child_env_limits_threads() -> None:
    env = bench_peers.child_env("sbx")
    assert env["OMP_NUM_THREADS"] == "1" and env["XLA_FLAGS"] == core.XLA_FLAGS
    assert str(ROOT) in env["PYTHONPATH"].split(":")


# ------------------------------------------------------------------------ tiny runs
TINY = {
    "dqn": core.ROWS["dqn-cartpole"].scaled(100, 100),
    "sac": core.ROWS["sac-pendulum"].scaled(40, 40),
}


@pytest.mark.slow  # end to end, seconds: CI's slow session
@pytest.mark.parametrize("lib", core.LIBRARIES)
@pytest.mark.parametrize("algo", ["dqn", "sac"])
def test_a_tiny_run_of_each_peer(lib: str, algo: str) -> None:
    if not bench_peers.installed(lib):
        pytest.skip(f"{bench_peers.REQUIRES[lib]} not installed")
    row = TINY[algo]
    steps, log = bench_peers.train_once(lib, row, seed=0)
    assert steps == row.env_steps
    assert log.train_s > 0 and log.points and log.points[-1][0] == row.env_steps


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_one_run_in_its_own_process() -> None:
    row = dataclasses.replace(TINY["dqn"], name="tiny")
    rec = bench_peers.run_one("tdrl", row, seed=0, warm=False, timeout=300)
    assert rec["status"] == "ok", rec
    assert rec["env_steps"] == row.env_steps and rec["steps_per_s"] > 0
    assert rec["threads"]["torch_threads"] == 1 and rec["threads"]["busy_threads"] == 1
