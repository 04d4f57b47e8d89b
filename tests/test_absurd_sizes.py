"""Absurd sizes and rates exit 2 with one line naming the flag, before anything is allocated
or created (no run directory is left behind)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium.spaces import Box, Discrete

from tdrl.cli.main import main
from tdrl.errors import UsageError
from tdrl.experiment.sizes import check_sizes
from tdrl.presets import registry

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--epochs", "1", "--step-per-epoch", "100", "--no-progress", "--no-plot"]
HUGE = "100000000000000000"  # 1e17


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--buffer-size", HUGE),
        ("--batch-size", HUGE),
        ("--hidden-sizes", HUGE),
        ("--n-step", "100000000000"),
    ],
)
def test_sizes_that_cannot_fit_exit_2_and_leave_nothing(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "runs"
    rc = main(["train", "dqn", "CartPole-v1", flag, value, *QUICK, "--logdir", str(logdir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith(f"{flag}: expected "), err
    assert "memory" in err[0] and value in err[0]
    assert not logdir.exists() or not any(logdir.iterdir())


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--update-per-step", "1e30"), ("--step-per-collect", "100000000000000")],
)
def test_rates_beyond_the_runs_budget_exit_2_and_leave_nothing(
    flag: str, value: str, tmp_path: Path
) -> None:
    argv = ["train", "dqn", "CartPole-v1", flag, value, *QUICK, "--logdir", "runs"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "tdrl.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # before the check, the run never ended
    )
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(err) == 1 and err[0].startswith(f"{flag}: expected at most the run's 100 env"), err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_preset_rates_and_tuned_sizes_pass() -> None:
    p = registry.preset("dqn", "CartPole-v1")
    obs, act = Box(-1, 1, (4,)), Discrete(2)
    check_sizes(p, obs, act)
    # a preset's own step_per_collect longer than a short run is not the user's rate
    check_sizes(p.replace(step_per_collect=1000, max_epochs=1, step_per_epoch=10), obs, act)
    with pytest.raises(UsageError, match="--step-per-collect"):
        check_sizes(
            p.replace(step_per_collect=1000, max_epochs=1, step_per_epoch=10),
            obs,
            act,
            {"step_per_collect": 1000},
        )
    redq = registry.preset("redq", "Hopper-v5")
    check_sizes(redq, Box(-1, 1, (11,)), Box(-1, 1, (3,)), {"update_per_step": 20.0})
