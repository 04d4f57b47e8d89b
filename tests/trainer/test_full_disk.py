"""A full disk while writing a checkpoint, reproduced with a file-size limit (``RLIMIT_FSIZE``)
in a subprocess: ``torch.save`` then raises ``RuntimeError: ... unexpected pos``, and tdrl
reports the file and the OS error in one line, exit 1, the previous checkpoint intact."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from tdrl.launch import ExperimentConfig, run_experiment
from tdrl.trainer.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def _limit(size: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def test_atomic_save_past_the_file_size_limit_is_an_os_error(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.pt"
    torch.save({"old": 1}, target)
    before = target.read_bytes()
    script = textwrap.dedent(
        f"""
        import torch
        from tdrl.trainer.checkpoint import atomic_save
        try:
            atomic_save({{"x": torch.zeros(1_000_000)}}, {str(target)!r})
        except OSError as exc:
            print(type(exc).__name__, exc)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=_env(),
        preexec_fn=_limit(256 * 1024),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OSError [Errno 27] could not write "), proc.stdout
    assert str(target) in proc.stdout and "File too large" in proc.stdout
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]


def test_cli_checkpoint_past_the_file_size_limit_exits_1_in_one_line(tmp_path: Path) -> None:
    first = ExperimentConfig(
        algo="dqn",
        task="CartPole-v1",
        seed=4,
        epochs=1,
        step_per_epoch=200,
        training_num=2,
        test_num=2,
        stop_reward=1e9,
        log_dir=str(tmp_path),
        checkpoint=True,
        show_progress=False,
        plot=False,
    )
    _, run_dir = run_experiment(first)
    run = Path(run_dir)
    size = (run / "checkpoint.pt").stat().st_size
    argv = ["train", "--resume", str(run), "--epochs", "3", "--no-progress", "--no-plot"]
    proc = subprocess.run(
        [sys.executable, "-m", "tdrl.cli", *argv],
        capture_output=True,
        text=True,
        env=_env(),
        preexec_fn=_limit(size + 1024),  # epoch 2's checkpoint holds 200 rows more
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(run / "checkpoint.pt") in lines[0] and "File too large" in lines[0], lines
    assert read_checkpoint(run / "checkpoint.pt")["trainer"]["epoch"] == 1  # intact
    assert not list(run.glob("*.tmp"))
