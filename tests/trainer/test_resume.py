"""A run killed after an epoch and resumed from its checkpoint matches the uninterrupted run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tdrl.launch import ExperimentConfig, run_experiment
from tdrl.utils.logger import read_csv_log


def _cfg(algo: str, log_dir: Path, epochs: int, resume: bool = False) -> ExperimentConfig:
    return ExperimentConfig(
        algo=algo,
        task="CartPole-v1" if algo != "sac" else "Pendulum-v1",
        seed=3,
        epochs=epochs,
        step_per_epoch=300,
        training_num=2,
        test_num=2,
        stop_reward=1e9,  # never stop early
        logger="csv",
        log_dir=str(log_dir),
        checkpoint=True,
        resume=resume,
        show_progress=False,
        plot=False,
    )


def _params(run_dir: Path) -> dict[str, torch.Tensor]:
    state = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    return {k: v for k, v in state["algorithm"].items() if isinstance(v, torch.Tensor)}


@pytest.mark.parametrize("algo", ["dqn", "ppo"])
def test_resumed_run_reproduces_the_uninterrupted_run(algo: str, tmp_path: Path) -> None:
    full, full_dir = run_experiment(_cfg(algo, tmp_path / "full", epochs=2))
    run_experiment(_cfg(algo, tmp_path / "cut", epochs=1))  # "killed" after epoch 1
    resumed, cut_dir = run_experiment(_cfg(algo, tmp_path / "cut", epochs=2, resume=True))
    assert resumed.epoch == full.epoch == 2
    assert resumed.env_step == full.env_step
    assert resumed.gradient_step == full.gradient_step
    assert resumed.best_reward == full.best_reward
    a, b = _params(full_dir), _params(cut_dir)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    scopes = sorted(p.stem for p in full_dir.glob("*.csv"))
    assert "test" in scopes and "train" in scopes
    for scope in scopes:
        x, y = read_csv_log(full_dir / f"{scope}.csv"), read_csv_log(cut_dir / f"{scope}.csv")
        assert x.keys() == y.keys()
        for k in x:
            if "speed" in k or "time" in k:  # wall-clock, not behaviour
                continue
            np.testing.assert_array_equal(np.array(x[k]), np.array(y[k]), err_msg=k)
