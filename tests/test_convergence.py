"""End-to-end: train each algorithm to Tianshou's threshold with a fixed seed (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdrl.launch import ExperimentConfig, run_experiment

CASES = [
    ("dqn", "CartPole-v1", 195.0),
    ("ppo", "CartPole-v1", 195.0),
    ("sac", "Pendulum-v1", -250.0),
]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("algo", "task", "threshold"), CASES)
def test_reaches_threshold(algo: str, task: str, threshold: float, tmp_path: Path) -> None:
    cfg = ExperimentConfig(
        algo=algo,
        task=task,
        seed=0,
        stop_reward=threshold,
        logger="csv",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    print(
        f"{algo} {task}: best {result.best_reward:.1f} after {result.env_step} env steps, "
        f"{result.timing.total_time:.1f} s"
    )
    assert result.best_reward >= threshold
