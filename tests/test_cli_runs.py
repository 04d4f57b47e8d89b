"""Run directories, resuming, checkpoints and interruptions of ``tdrl train`` (issue 16)."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tdrl.cli import main
from tdrl.errors import CheckpointError, RunDirError
from tdrl.launch import ExperimentConfig, run_experiment
from tdrl.trainer.checkpoint import save_checkpoint
from tdrl.utils.logger import read_csv_log

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--epochs", "1", "--step-per-epoch", "100", "--training-num", "2", "--test-num", "2"]
QUICK += ["--no-progress", "--no-plot"]
SUMMARY = re.compile(
    r"^dqn on CartPole-v1: best test return -?[\d.]+ ± [\d.]+ \(epoch (\d+); the saved policy "
    r"is epoch \d+'s\), (\d+) env steps"
)


def _train(logdir: Path, *extra: str, algo: str = "dqn") -> int:
    return main(["train", algo, "CartPole-v1", *QUICK, "--logdir", str(logdir), *extra])


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_a_run_never_stops_before_it_trained(tmp_path: Path) -> None:
    """A threshold every policy reaches (the untrained one included) still trains."""
    cfg = ExperimentConfig(
        "dqn",
        "CartPole-v1",
        epochs=3,
        step_per_epoch=100,
        training_num=2,
        test_num=2,
        stop_reward=-1000.0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.stopped_early and result.epoch == 1
    assert result.env_step > 0 and result.gradient_step > 0


def test_thresholds_come_from_the_registry_then_gymnasium() -> None:
    from tdrl import registry

    assert registry.preset("sac", "Pendulum-v1").threshold == -250.0  # registry
    assert registry.preset("sac", "Hopper-v5").threshold == 3800.0  # gymnasium's
    assert registry.preset("td3", "Walker2d-v5").threshold is None  # none: all epochs


def test_new_runs_get_fresh_directories_and_overwrite_replaces_the_latest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path) == 0
    first = tmp_path / "dqn-CartPole-v1-seed0"
    before = {p.name: p.read_bytes() for p in first.glob("*.csv")}
    assert _train(tmp_path) == 0
    assert _train(tmp_path) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["dqn-CartPole-v1-seed0", "dqn-CartPole-v1-seed0-2", "dqn-CartPole-v1-seed0-3"]
    assert {p.name: p.read_bytes() for p in first.glob("*.csv")} == before  # untouched
    marker = tmp_path / "dqn-CartPole-v1-seed0-3" / "marker"
    marker.write_text("x")
    assert _train(tmp_path, "--overwrite") == 0
    assert len(list(tmp_path.iterdir())) == 3 and not marker.exists()
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].endswith(f"logs in {tmp_path / 'dqn-CartPole-v1-seed0-3'}")


def test_resume_continues_the_latest_run_and_truncates_its_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path, "--checkpoint") == 0
    run = tmp_path / "dqn-CartPole-v1-seed0"
    # as if killed after the checkpoint: rows logged beyond it
    for scope in ("train", "test"):
        with open(run / f"{scope}.csv", "a", newline="") as f:
            w = csv.writer(f)
            width = len(_rows(run / f"{scope}.csv")[0])
            w.writerow(["150"] + ["-7"] * (width - 1))
    assert _train(tmp_path, "--resume", "--epochs", "2") == 0
    assert [p.name for p in tmp_path.iterdir()] == [run.name]
    for scope in ("train", "test", "save"):
        steps = read_csv_log(run / f"{scope}.csv")
        first = next(iter(steps))
        xs = steps[first]
        assert xs == sorted(xs) and len(set(xs)) == len(xs), (scope, xs)  # no duplicates
        assert all(v != -7 for k, col in steps.items() if k != first for v in col)
    assert read_csv_log(run / "save.csv")["epoch"] == [1.0, 2.0]
    assert "max_epochs: 2" in (run / "config.yaml").read_text()
    m = SUMMARY.match(capsys.readouterr().out.strip().splitlines()[-1])
    assert m is not None and int(m.group(2)) == 200


def test_resume_without_a_checkpoint_exits_2_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "runs"
    assert _train(logdir, "--resume") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "dqn-CartPole-v1-seed0" in err[0]
    assert not logdir.exists()
    assert _train(logdir) == 0  # a run saved without --checkpoint
    run = logdir / "dqn-CartPole-v1-seed0"
    files = {p.name: p.read_bytes() for p in run.iterdir()}
    capsys.readouterr()
    assert _train(logdir, "--resume") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(run / "checkpoint.pt") in err[0]
    assert {p.name: p.read_bytes() for p in run.iterdir()} == files
    with pytest.raises(RunDirError):
        _train(logdir, "--resume", "--debug")


def test_a_corrupt_checkpoint_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path, "--checkpoint") == 0
    run = tmp_path / "dqn-CartPole-v1-seed0"
    (run / "checkpoint.pt").write_bytes(b"\x00garbage")
    files = {p.name: p.read_bytes() for p in run.iterdir()}
    capsys.readouterr()
    assert _train(tmp_path, "--resume", "--epochs", "2") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(run / "checkpoint.pt") in err[0] and "Traceback" not in err[0]
    assert {p.name: p.read_bytes() for p in run.iterdir()} == files
    torch.save({"something": "else"}, run / "checkpoint.pt")
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt: expected a tdrl checkpoint"):
        _train(tmp_path, "--resume", "--epochs", "2", "--debug")


def test_unknown_env_id_exits_2_and_leaves_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "ppo", "NoSuchEnv-v0", *QUICK, "--logdir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NoSuchEnv" in err[0]
    assert not (tmp_path / "r").exists()


def test_a_dqn_cartpole_checkpoint_is_small(tmp_path: Path) -> None:
    """The test collector keeps no 1M-row buffer (that made it 80 MB)."""
    argv = ["train", "dqn", "CartPole-v1", "--epochs", "1", "--step-per-epoch", "100"]
    assert (
        main([*argv, "--checkpoint", "--no-progress", "--no-plot", "--logdir", str(tmp_path)]) == 0
    )
    size = (tmp_path / "dqn-CartPole-v1-seed0" / "checkpoint.pt").stat().st_size
    assert size < 10 * 2**20, size


def test_a_full_disk_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tdrl.trainer.checkpoint as ckpt

    real_save = torch.save

    def full(obj: object, f: object, *args: object, **kwargs: object) -> None:
        if not isinstance(f, (str, Path)):  # pickling tensors into memory: fine
            return real_save(obj, f, *args, **kwargs)  # type: ignore[arg-type]
        Path(f).write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.torch, "save", full)
    assert _train(tmp_path, "--checkpoint") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkpoint.pt" in err[0] and "No space left" in err[0]
    run = tmp_path / "dqn-CartPole-v1-seed0"
    assert not list(run.glob("*.tmp")) and not (run / "checkpoint.pt").exists()

    class Trainer:  # save_checkpoint itself: OSError naming the file, nothing left
        algorithm = torch.nn.Linear(1, 1)
        logger = ckpt  # any object: its last_* ints are saved (none here)

        def state_dict(self) -> dict:
            return {}

    with pytest.raises(OSError, match=r"could not write .*c\.pt"):
        save_checkpoint(Trainer(), tmp_path / "c.pt")
    assert not list(tmp_path.glob("c.pt*"))

    def always(*args: object, **kwargs: object) -> None:  # even pickling tensors fails
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.torch, "save", always)
    capsys.readouterr()
    assert _train(tmp_path / "again", "--checkpoint") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkpoint.pt" in err[0], err
    assert not list((tmp_path / "again").glob("*/*.tmp"))


def test_sigint_saves_a_checkpoint_and_the_run_resumes_from_it(tmp_path: Path) -> None:
    argv = ["train", "dqn", "CartPole-v1", "--epochs", "1", "--step-per-epoch", "1000000"]
    argv += ["--stop-reward", "1e9", "--training-num", "2", "--test-num", "2", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tdrl.cli", *argv, "--logdir", "runs"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run = tmp_path / "runs" / "dqn-CartPole-v1-seed0"
    deadline = time.time() + 120
    while (
        time.time() < deadline
        and len(_rows(run / "train.csv") if (run / "train.csv").exists() else []) < 5
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"resume with: tdrl train --resume {Path('runs') / run.name}" in err
    assert "Traceback" not in err
    assert (run / "checkpoint.pt").exists() and (run / "policy.pt").exists()
    assert not list(run.glob("*.tmp"))
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    done = state["trainer"]["epoch_progress"]
    env_step = state["trainer"]["env_step"]
    assert done > 0 and state["trainer"]["epoch"] == 1
    # resume finishes the cut epoch: 100 steps more
    rc = main(
        [
            "train",
            "--resume",
            str(run),
            "--step-per-epoch",
            str(done + 100),
            "--no-plot",
            "--no-progress",
        ]
    )
    assert rc == 0
    xs = read_csv_log(run / "train.csv")["env_step"]
    assert xs == sorted(xs) and len(set(xs)) == len(xs) and xs[-1] == env_step + 100


def test_resuming_with_another_network_exits_2_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _train(tmp_path, "--checkpoint") == 0
    run = tmp_path / "dqn-CartPole-v1-seed0"
    files = {p.name: p.read_bytes() for p in run.iterdir()}
    capsys.readouterr()
    assert _train(tmp_path, "--resume", "--epochs", "2", "--hidden-sizes", "8") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkpoint.pt: expected the weights of this run" in err[0]
    assert {p.name: p.read_bytes() for p in run.iterdir()} == files


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--device", "gpu0", "expected a torch device"),
        ("--buffer-device", "gpu0", "expected a torch device"),
        ("--device", "cuda:7", "expected"),
        ("--buffer-device", "cuda", "expected"),
    ],
)
def test_a_device_this_machine_lacks_exits_2_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, expected: str
) -> None:
    if value.startswith("cuda") and torch.cuda.is_available() and torch.cuda.device_count() > 7:
        pytest.skip("this machine has the device")
    logdir = tmp_path / "r"
    argv = ["train", "dqn", "CartPole-v1", *QUICK, "--logdir", str(logdir), flag, value]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{flag}: {expected}") and repr(value) in err[0]
    assert not logdir.exists()


def test_buffer_device_is_recorded_and_used(tmp_path: Path) -> None:
    """``--buffer-device cpu`` (the default, the only device here) reaches the replay
    buffer and ``config.yaml``."""
    from tdrl.launch import ExperimentConfig, build_experiment

    cfg = ExperimentConfig(
        "dqn", "CartPole-v1", epochs=1, step_per_epoch=100, log_dir=str(tmp_path),
        show_progress=False, plot=False, buffer_device="cpu",
    )  # fmt: skip
    exp = build_experiment(cfg)
    assert exp.trainer.train_collector.buffer._tdrl_config["device"] == "cpu"
    assert "buffer_device: cpu" in (exp.run_dir / "config.yaml").read_text()


def test_config_yaml_run_keys_are_the_cli_run_options() -> None:
    """One list of run options: what ``config.yaml`` records, what ``--config`` reads back
    as non-preset keys, and the CLI's defaults (a new option missing from one of them made
    ``--config runs/X/config.yaml`` fail once)."""
    from tdrl.checkpoint import RUN_KEYS
    from tdrl.cli import RUN_OPTIONS
    from tdrl.launch import ExperimentConfig, run_options

    recorded = set(run_options(ExperimentConfig("dqn", "CartPole-v1")))
    assert recorded == set(RUN_KEYS) == {"algo", "task", *RUN_OPTIONS}


def test_cudagraphs_without_a_gpu_device_exits_2_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "r"
    argv = ["train", "dqn", "CartPole-v1", *QUICK, "--logdir", str(logdir), "--cudagraphs"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["--cudagraphs: expected --device cuda (CUDA graphs need a GPU), got 'cpu'"]
    assert main([*argv, "--device", "cuda", "--compile", "max-autotune"]) == 2
    assert "--cudagraphs: expected no --compile MODE" in capsys.readouterr().err
    assert not logdir.exists()
