"""``benchmarks/gpu_check.sh`` on a machine without a GPU: its argument handling, its
skip path, and its stages run on the CPU (``--device cpu``), so the one prepared GPU
command is known to work before device time is spent on it."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def _run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("OUT", None)
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("args", "flag", "got"),
    [
        (["--budget", "soon"], "--budget", "soon"),
        (["--budget", "0"], "--budget", "0"),
        (["--steps", "-5"], "--steps", "-5"),
        (["--device", "tpu"], "--device", "tpu"),
        (["--stages", "tests,train"], "--stages", "tests,train"),
        (["--frobnicate"], "expected one of", "--frobnicate"),
        (["--out"], "--out", "nothing"),
    ],
)
def test_a_usage_error_exits_2_with_one_line_and_leaves_nothing(
    tmp_path: Path, args: list[str], flag: str, got: str
) -> None:
    out = tmp_path / "out"
    proc = _run(*args, "--out", str(out)) if args != ["--out"] else _run(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and got in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not out.exists()


def test_a_wheels_folder_without_wheels_is_a_usage_error(tmp_path: Path) -> None:
    proc = _run("--wheels", str(tmp_path), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "--wheels" in proc.stderr and str(tmp_path) in proc.stderr
    assert not (tmp_path / "out").exists()


def test_help_prints_the_usage() -> None:
    proc = _run("--help")
    assert proc.returncode == 0 and "--prepare" in proc.stdout and "--budget" in proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip path is for machines without CUDA")
def test_without_a_gpu_the_gpu_stages_are_skipped_not_passed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _run("--wheels", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("gpu_check: SKIPPED: no CUDA device")
    rows = {r["stage"]: r["status"] for r in csv.DictReader((out / "stages.csv").open())}
    assert rows == {"env": "ok", "tests": "skipped", "update": "skipped", "e2e": "skipped"}
    assert (out / "env.json").exists() and (out / "summary.md").exists()
    assert not (out / "update.csv").exists() and not (out / "e2e.csv").exists()
    assert len(list(out.iterdir())) <= 8


def test_the_stages_run_on_the_cpu_and_write_as_they_go(tmp_path: Path) -> None:
    assert gpu_check.main(["update", str(tmp_path), "--device", "cpu", "--seconds", "0.05",
                           "--modes", "cpu-eager,eager"]) == 0  # fmt: skip
    rows = gpu_check.read_rows(tmp_path / "update.csv")
    assert [(r["mode"], r["device"]) for r in rows] == [("eager", "cpu"), ("eager", "cpu")]
    assert all(float(r["updates_per_s"]) > 0 and int(r["updates"]) >= 10 for r in rows)
    assert gpu_check.main(["e2e", str(tmp_path), "--device", "cpu", "--algo", "sac",
                           "--task", "Pendulum-v1", "--steps", "120",
                           "--warmup-steps", "64"]) == 0  # fmt: skip
    (row,) = gpu_check.read_rows(tmp_path / "e2e.csv")
    assert row["algo"] == "sac" and int(row["env_steps"]) >= 120
    assert int(row["gradient_steps"]) > 0 and float(row["env_steps_per_s"]) > 0
    text = gpu_check.stage_table(tmp_path)
    assert "| eager | cpu |" in text and "| sac | Pendulum-v1 | eager | cpu |" in text


def test_an_unknown_update_mode_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        gpu_check.main(["update", str(tmp_path), "--modes", "eager,turbo"])
    assert e.value.code == 2
