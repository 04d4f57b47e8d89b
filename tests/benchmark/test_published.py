"""tdrl's 1M-step runs beside Tianshou's published MuJoCo table (``tdrl report``)."""

from __future__ import annotations

import numpy as np

from tdrl.benchmark.published import (
    ENV_CHANGES,
    agreement,
    best_test_mean,
    published_table,
)
from tdrl.benchmark.report import RunLog


def _run(
    seed: int,
    best: float,
    env_step: int = 1_000_000,
    budget: int = 1_000_000,
    task: str = "Hopper-v5",
) -> RunLog:
    steps = np.array([0.0, 500_000.0, float(env_step)])
    returns = np.array([5000.0, best, best - 100])  # the untrained test scores highest
    return RunLog("tdrl", "ppo", task, seed, steps, returns, True, env_step, 1.0, budget)


def test_the_metric_is_the_best_test_after_training_began() -> None:
    assert best_test_mean(np.array([0, 1, 2]), np.array([9.0, 1.0, 3.0])) == 3.0
    assert np.isnan(best_test_mean(np.array([0]), np.array([9.0])))


def test_agreement_rules() -> None:
    assert agreement([2609.0 + 700, 2609.0, 2609.0], 2609.0, 701.0) == "yes"
    assert agreement([100.0, 200.0, 300.0], 2609.0, 701.0) == "no"
    assert agreement([2609.0 + 1400], 2609.0, 701.0) == "yes (one seed)"
    assert agreement([2609.0 + 1403], 2609.0, 701.0) == "no (one seed)"


def test_the_table_names_env_versions_seeds_and_runs_in_progress() -> None:
    lines = published_table([_run(0, 2500.0), _run(1, 2700.0), _run(2, 2600.0)])
    row = next(line for line in lines if line.startswith("| ppo | Hopper-v5"))
    assert row == "| ppo | Hopper-v5 | 2600 ± 100 | 3 (3) | 1,000,000 | 2609 ± 701 | yes |"
    partial = published_table([_run(0, 2500.0, env_step=400_000)])
    assert partial[-1].endswith("| 400,000 | 2609 ± 701 | in progress |")
    assert published_table([_run(0, 2500.0, budget=100_000)]) == []  # a short sweep
    # a run that has not tested since training began: no value yet, never "nan"
    untested = _run(1, 2500.0, env_step=0)
    untested.steps, untested.returns = np.array([0.0]), np.array([900.0])
    row = published_table([untested])[-1]
    assert row == "| ppo | Hopper-v5 | – | 1 (0) | 0 | 2609 ± 701 | in progress |"
    row = published_table([_run(0, 2500.0), untested])[-1]
    assert row == "| ppo | Hopper-v5 | 2500 ± 0 | 2 (1) | 0 | 2609 ± 701 | in progress |"


def test_a_disagreeing_v5_row_names_what_the_task_changed_since_v3() -> None:
    walker = [_run(s, 5000.0, task="Walker2d-v5") for s in range(3)]  # above 3589 ± 757
    lines = published_table([*walker, _run(0, 3600.0, task="Walker2d-v4")])
    assert "| ppo | Walker2d-v5 | 5000 ± 0 | 3 (3) | 1,000,000 | 3589 ± 757 | no |" in lines
    assert (
        "| ppo | Walker2d-v4 | 3600 ± 0 | 1 (1) | 1,000,000 | 3589 ± 757 | yes (one seed) |"
        in lines
    )
    assert lines[-1] == f"* {ENV_CHANGES['Walker2d']}."
    agreeing = published_table([_run(s, 2600.0) for s in range(3)])
    assert not any(line.startswith("* ") for line in agreeing)  # nothing to explain
