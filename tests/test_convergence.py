"""End-to-end: train each algorithm's preset to its task's threshold with a fixed seed.

``slow`` (CI, ``nox -s slow``): the ``classic`` presets to Tianshou's thresholds, a few
minutes each on a CPU. ``slower`` (outside CI, ``nox -s slower``): the ``mujoco`` presets,
whose threshold comes from gymnasium's ``reward_threshold`` through the registry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tdrl import registry
from tdrl.launch import ExperimentConfig, run_experiment

CASES = [
    ("dqn", "CartPole-v1", 195.0),
    ("ppo", "CartPole-v1", 195.0),
    ("sac", "Pendulum-v1", -250.0),
]

SLOWER_CASES = [
    # (algo, task, epochs of 5000 steps): seed 0 reached 1000 after 8k steps (+10k warm-up)
    ("sac", "InvertedPendulum-v5", 10),
]


def _train(algo: str, task: str, tmp_path: Path, **kwargs: object) -> tuple[float, float]:
    cfg = ExperimentConfig(
        algo=algo,
        task=task,
        seed=0,
        logger="csv",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        **kwargs,  # type: ignore[arg-type]
    )
    result, _ = run_experiment(cfg)
    print(
        f"{algo} {task}: best {result.best_reward:.1f} after {result.env_step} env steps, "
        f"{result.timing.total_time:.1f} s"
    )
    return result.best_reward, result.timing.total_time


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("algo", "task", "threshold"), CASES)
def test_reaches_threshold(algo: str, task: str, threshold: float, tmp_path: Path) -> None:
    assert registry.stop_threshold(task) == threshold  # the registry's, over gymnasium's
    best, _ = _train(algo, task, tmp_path, stop_reward=threshold)
    assert best >= threshold


@pytest.mark.slower
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(("algo", "task", "epochs"), SLOWER_CASES)
def test_mujoco_preset_reaches_gymnasium_threshold(
    algo: str, task: str, epochs: int, tmp_path: Path
) -> None:
    pytest.importorskip("mujoco")
    assert registry.task_family(task) == "mujoco"
    threshold = registry.stop_threshold(task)
    assert threshold is not None  # gymnasium's reward_threshold
    best, _ = _train(algo, task, tmp_path, epochs=epochs)
    assert best >= threshold
