"""``tdrl bench`` and ``tdrl report`` end to end on tiny budgets (SAC on Pendulum-v1 with
small networks: a run takes a few seconds)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tdrl.benchmark import RunSpec, epochs_for_budget, load_runs, plan_sweep, write_report
from tdrl.benchmark import runner as runner_mod
from tdrl.benchmark.plan import DONE_FILE, PROGRESS_FILE, SPEC_FILE, read_json
from tdrl.benchmark.report import iqm_ci, summarize
from tdrl.cli import main as cli_main

TINY = ["--set", "hidden_sizes=(16, 16)", "--set", "buffer_size=1000", "--set", "test_num=1"]
OVERRIDES = {"hidden_sizes": (16, 16), "buffer_size": 1000, "test_num": 1}


def bench(out: Path, *extra: str, seeds: int = 1, steps: int = 200) -> int:
    argv = ["bench", "--algos", "sac", "--tasks", "Pendulum-v1", "--seeds", str(seeds)]
    argv += ["--env-steps", str(steps), "--out", str(out), "--no-progress", *TINY, *extra]
    return cli_main(argv)


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_bench_writes_wandb_runs_csv_report_and_curves_then_skips_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench"
    assert bench(out, "--workers", "2") == 0
    run = out / "sac" / "Pendulum-v1" / "seed0"
    offline = list((run / "wandb").glob("offline-run-*"))
    assert len(offline) == 1 and list(offline[0].glob("*.wandb"))
    steps = np.loadtxt(run / "test.csv", delimiter=",", skiprows=1, usecols=0)
    assert steps.tolist() == [float(20 * i) for i in range(11)]  # initial test + 10 epochs
    done = read_json(run / DONE_FILE)
    assert done is not None and done["env_step"] == 200 and done["epochs"] == 10
    assert not (run / "checkpoint.pt").exists()  # deleted once finished
    spec = read_json(run / SPEC_FILE)
    assert spec is not None and spec["preset"]["threshold"] is None
    assert spec["preset"]["max_epochs"] == 10 and spec["preset"]["hidden_sizes"] == [16, 16]
    report = (out / "report.md").read_text()
    assert "| tdrl | sac | Pendulum-v1 | 1 (1) |" in report and "IQM" in report
    assert (out / "curves.png").stat().st_size > 10_000
    # the same command again: nothing runs
    capsys.readouterr()
    assert bench(out, "--workers", "2") == 0
    assert "0 runs finished, 1 already done, 0 failed" in capsys.readouterr().out
    assert read_json(run / DONE_FILE) == done
    assert len(list((run / "wandb").glob("offline-run-*"))) == 1


class Interrupt(Exception):
    pass


def _spec(out: Path) -> RunSpec:
    return RunSpec("sac", "Pendulum-v1", 0, 200, str(out), logger="csv", overrides=OVERRIDES)


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_an_interrupted_run_resumes_from_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = runner_mod.run(_spec(tmp_path / "whole"))
    import tdrl.trainer.base as trainer_base

    save = trainer_base.save_checkpoint
    calls = []

    def save_then_stop(trainer: object, path: Path) -> Path:
        out = save(trainer, path)
        calls.append(path)
        if len(calls) == 4:  # interrupted after epoch 4's checkpoint ...
            raise Interrupt
        return out

    monkeypatch.setattr(trainer_base, "save_checkpoint", save_then_stop)
    spec = _spec(tmp_path / "cut")
    with pytest.raises(Interrupt):
        runner_mod.run(spec)
    monkeypatch.setattr(trainer_base, "save_checkpoint", save)
    assert not spec.finished() and (spec.dir / "checkpoint.pt").is_file()
    # ... after which it logged more than its checkpoint holds: dropped on resume
    with open(spec.dir / "test.csv", "a", newline="") as f:
        csv.writer(f).writerow([100, 1, 200, 1.0, 12345.0, 0.0, 200])
    assert read_json(spec.dir / PROGRESS_FILE)["epoch"] == 4  # type: ignore[index]
    resumed = runner_mod.run(spec)
    assert resumed["env_step"] == whole["env_step"] == 200
    a = (tmp_path / "whole" / "sac" / "Pendulum-v1" / "seed0" / "test.csv").read_text()
    b = (spec.dir / "test.csv").read_text()
    ret = [line.split(",")[4] for line in b.splitlines()]
    assert ret == [line.split(",")[4] for line in a.splitlines()]  # exact resumption
    assert resumed["final_reward"] == whole["final_reward"]
    assert resumed["wall_s"] > 0


def test_bad_flags_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["bench", "--tasks", "Pendulum-v1", "--env-steps", "100", "--out", str(tmp_path)]
    cases = [
        (["--algos", "nope", *base[1:]], "--algos"),
        (
            ["--algos", "sac", "--tasks", "NoSuchTask-v9", "--env-steps", "9", "--out", "x"],
            "--tasks",
        ),
        (["--algos", "sac", *base[1:], "--seeds", "0"], "--seeds"),
        (["--algos", "sac", *base[1:], "--logger", "mlflow"], "--logger"),
        (["--algos", "sac", *base[1:], "--backend", "slurm"], "--backend"),
        (["--algos", "sac", *base[1:], "--set", "nofield=1"], "nofield"),
        (["--algos", "sac", *base[1:], "--workers", "-1"], "--workers"),
        (["--algos", "sac", "--tasks", "Pendulum-v1"], "required"),
        (["--algos", "dqn", *base[1:]], "dqn"),
    ]
    for argv, word in cases:
        with pytest.raises(SystemExit) as exc:
            cli_main(["bench", *argv])
        err = capsys.readouterr().err
        assert exc.value.code == 2, argv
        assert len(err.strip().splitlines()) == 1 and word in err, (argv, err)


def test_a_different_budget_on_the_same_out_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner_mod.prepare_run(_spec(tmp_path))
    with pytest.raises(SystemExit) as exc:
        bench(tmp_path, steps=300)
    assert exc.value.code == 2 and "--env-steps" in capsys.readouterr().err


def _fake_run(base: Path, lib: str, algo: str, seed: int, returns: list[float]) -> None:
    d = base / (algo if lib == "tdrl" else f"{lib}/{algo}") / "Hopper-v5" / f"seed{seed}"
    d.mkdir(parents=True)
    rows = ["env_step,test/returns_stat/mean"]
    rows += [f"{1000 * i},{r}" for i, r in enumerate(returns)]
    (d / "test.csv").write_text("\n".join(rows) + "\n")
    done = {"env_step": 1000 * (len(returns) - 1), "wall_s": 10.0}
    (d / DONE_FILE).write_text(json.dumps(done))


def test_report_puts_a_peer_library_side_by_side(tmp_path: Path) -> None:
    for seed in range(3):
        _fake_run(tmp_path, "tdrl", "sac", seed, [0, 100 + seed, 200 + seed, 300 + seed])
        _fake_run(tmp_path, "tianshou", "sac", seed, [0, 90, 190 + seed, 310 + seed])
    _fake_run(tmp_path, "tdrl", "td3", 0, [0, 50])
    assert cli_main(["report", str(tmp_path), "--last-k", "2"]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "| tdrl | sac | Hopper-v5 | 3 (3) | 301.0 ± 1.0 | 301.0 ± 1.0 |" in report
    assert "| tianshou | sac | Hopper-v5 | 3 (3) | 311.0 ± 1.0 |" in report
    assert "| sac | Hopper-v5 | 301.0 ± 1.0 | tianshou | 311.0 ± 1.0 | -10.0 | no |" in report
    assert "| 3,000 | 10.0 s | 300 |" in report
    assert (tmp_path / "curves.png").stat().st_size > 10_000


def test_report_of_a_directory_without_runs_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["report", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with pytest.raises(FileNotFoundError):
        write_report(tmp_path)


def test_iqm_pools_seeds_and_last_tests() -> None:
    scores = np.array([[0.0, 10.0, 20.0, 30.0], [5.0, 15.0, 25.0, 100.0]])
    iqm, lo, hi = iqm_ci(scores, reps=200)
    assert iqm == pytest.approx(np.mean([10.0, 15.0, 20.0, 25.0]))
    assert lo <= iqm <= hi
    with pytest.raises(ValueError, match="scores"):
        iqm_ci(np.zeros(3))


def test_unfinished_runs_count_at_their_last_epoch(tmp_path: Path) -> None:
    _fake_run(tmp_path, "tdrl", "ppo", 0, [1.0, 2.0, 3.0])
    d = tmp_path / "ppo" / "Hopper-v5" / "seed1"
    d.mkdir(parents=True)
    (d / "test.csv").write_text("env_step,test/returns_stat/mean\n0,1.0\n1000,5.0\n")
    (d / PROGRESS_FILE).write_text(json.dumps({"env_step": 1000, "wall_s": 4.0}))
    runs = load_runs([tmp_path])
    (s,) = summarize(runs, last_k=5)
    assert (s.seeds, s.finished, s.last_k) == (2, 1, 2)
    assert s.final == pytest.approx((4.0, np.std([3.0, 5.0], ddof=1)))


def test_budgets_and_sweep_plans() -> None:
    assert epochs_for_budget(2048, 1_000_000) == (489, 2048)  # the last one ends at 1M
    assert epochs_for_budget(5000, 7) == (7, 1)
    specs = plan_sweep(["sac"], ["Hopper-v5", "Walker2d-v5"], 3, 100, "o")
    assert [(s.task, s.seed) for s in specs] == [
        (t, s) for t in ("Hopper-v5", "Walker2d-v5") for s in range(3)
    ]
    with pytest.raises(ValueError, match="seeds"):
        plan_sweep(["sac"], ["Hopper-v5"], 0, 100, "o")


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_a_budget_is_env_steps_in_whole_collects_for_every_algorithm(tmp_path: Path) -> None:
    # PPO collects 256 steps at a time, rounded up to a step of each of its 20 envs (260):
    # 600 steps are 3 collects (780 steps), never ten epochs of a collect each (the old
    # planning ran 10x the budget)
    out = tmp_path / "ppo"
    argv = ["bench", "--algos", "ppo", "--tasks", "CartPole-v1", "--env-steps", "600"]
    argv += ["--out", str(out), "--no-progress", "--set", "step_per_collect=256"]
    argv += ["--set", "test_num=1", "--set", "hidden_sizes=(16,)"]
    assert cli_main(argv) == 0
    run = out / "ppo" / "CartPole-v1" / "seed0"
    done = read_json(run / DONE_FILE)
    assert done is not None and done["env_step"] == 780 and done["epochs"] == 3
    spec = read_json(run / SPEC_FILE)
    assert spec is not None and spec["env_steps_total"] == 780
    assert runner_mod.planned_env_steps(RunSpec.from_dict(spec["spec"])) == 780


def test_the_last_epoch_ends_at_the_planned_total() -> None:
    from tdrl.benchmark.plan import plan_budget

    # 489 collects of 2048 in epochs of 15 collects: the 33rd epoch is cut at 9 collects
    assert plan_budget(30_000, 2048, 1_000_000) == (33, 30_720, 489 * 2048)
    assert plan_budget(50_000, 2000, 2000) == (1, 2000, 2000)
    assert plan_budget(50_000, None, 1234) == (10, 124, 1234)  # episode-based collection


@pytest.mark.slow
# about a minute alone; starting a Ray cluster and importing torch in its workers beside
# another xdist worker's training on 2 cores once took over 300 s (2026-11-27)
@pytest.mark.timeout(900)
def test_ray_backend_runs_a_two_run_sweep(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray"
        assert bench(out, "--backend", "ray", "--logger", "csv", seeds=2) == 0
    finally:
        ray.shutdown()
    for seed in (0, 1):
        run = out / "sac" / "Pendulum-v1" / f"seed{seed}"
        assert (run / DONE_FILE).is_file() and (run / "test.csv").is_file()
        assert "best test return" in (run / "stdout.log").read_text()
    assert "| tdrl | sac | Pendulum-v1 | 2 (2) |" in (out / "report.md").read_text()


@pytest.mark.slow
def test_a_sweep_stopped_by_a_signal_resumes(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "sig"
    argv = [sys.executable, "-m", "tdrl.cli", "bench", "--algos", "sac", "--tasks"]
    # 8,000 steps: about 20 s unloaded, so the signal lands mid-run even when this test
    # process is starved on a loaded machine (2,000 steps took 4 s and once finished first)
    argv += ["Pendulum-v1", "--seeds", "1", "--env-steps", "8000", "--out", str(out)]
    argv += ["--logger", "csv", "--workers", "1", "--no-progress", *TINY]
    run = out / "sac" / "Pendulum-v1" / "seed0"
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # a pytest-xdist worker ignores SIGINT, and an ignored signal stays ignored in its
        # children: give the sweep the default disposition a terminal's Ctrl-C meets
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 240
    while time.time() < deadline and (read_json(run / PROGRESS_FILE) or {}).get("epoch", 0) < 2:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: the worker saves a checkpoint and stops
    assert proc.wait(timeout=120) != 0
    assert (run / "checkpoint.pt").is_file() and not (run / DONE_FILE).exists()
    assert bench(out, "--logger", "csv", steps=8000) == 0
    assert "resuming sac-Pendulum-v1-0 at epoch" in (run / "stdout.log").read_text()
    steps = np.loadtxt(run / "test.csv", delimiter=",", skiprows=1, usecols=0)
    assert steps.tolist() == [float(800 * i) for i in range(11)]  # no duplicate rows


def test_tensorboard_logger_writes_events_beside_the_csv(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    spec = RunSpec("sac", "Pendulum-v1", 0, 200, str(tmp_path), logger="tensorboard")
    d = runner_mod.prepare_run(spec)
    loggers = runner_mod._make_loggers(spec, d, None)
    log = runner_mod.BenchLogger(d, loggers, start=0.0)
    log.log_test_data({"returns_stat": {"mean": -100.0}}, step=20)
    log.finalize()
    assert (d / "test.csv").is_file() and list(d.glob("events.out.tfevents.*"))


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_a_run_held_by_another_process_is_skipped_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two sweeps into one directory never run the same run twice (``run.lock``)."""
    from tdrl.benchmark.plan import run_lock

    out = tmp_path / "bench"
    d = runner_mod.prepare_run(_spec(out))
    with run_lock(d) as mine:  # as if another sweep process were running seed 0
        assert mine
        assert bench(out, "--seeds", "2", "--logger", "csv", "--workers", "1") == 0
        text = capsys.readouterr().out
        assert "1 runs finished, 0 already done, 0 failed, 1 running in another process" in text
        assert not (d / DONE_FILE).exists()
        assert (out / "sac" / "Pendulum-v1" / "seed1" / DONE_FILE).exists()
    assert bench(out, "--seeds", "2", "--logger", "csv", "--workers", "1") == 0  # lock freed
    assert (d / DONE_FILE).exists()
