"""A first SIGTERM stops a run within 5 seconds whatever it is doing: a training step that
would run on is aborted, the last step boundary is saved, and resuming from it is exact."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from tdrl.experiment.build import build_experiment
from tdrl.launch import ExperimentConfig, run_experiment
from tdrl.trainer import TrainingInterrupted

STEP = {"step_per_collect": 10, "update_per_step": 4.0}  # 40 gradient steps per collect


def _cfg(log_dir: Path, resume: bool = False) -> ExperimentConfig:
    return ExperimentConfig(
        algo="dqn",
        task="CartPole-v1",
        seed=2,
        epochs=1,
        step_per_epoch=60,
        training_num=2,
        test_num=2,
        stop_reward=1e9,
        log_dir=str(log_dir),
        checkpoint=True,
        resume=resume,
        show_progress=False,
        plot=False,
        overrides=dict(STEP),
    )


def _params(run_dir: Path) -> dict[str, torch.Tensor]:
    state = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    return {k: v for k, v in state["algorithm"].items() if isinstance(v, torch.Tensor)}


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_sigterm_in_a_long_step_stops_within_5_s_and_resumes_exactly(tmp_path: Path) -> None:
    exp = build_experiment(_cfg(tmp_path / "cut"))
    algorithm: Any = exp.trainer.algorithm
    update = algorithm.update

    def slow_update(*args: Any, **kwargs: Any) -> Any:  # 40 x 0.15 s: a 6 s step
        time.sleep(0.15)
        return update(*args, **kwargs)

    algorithm.update = slow_update
    sent: list[float] = []

    def stop_in_second_step() -> None:
        while exp.trainer.result.gradient_step <= 41:  # inside step 2 (step 1 was slow)
            time.sleep(0.02)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)

    watcher = threading.Thread(target=stop_in_second_step, daemon=True)
    watcher.start()
    with pytest.raises(TrainingInterrupted) as info:
        exp.run()
    stopped = time.monotonic() - sent[0]
    assert stopped < 5.0, stopped
    assert info.value.reason == "SIGTERM" and info.value.checkpoint is not None
    state = torch.load(info.value.checkpoint, weights_only=False)
    assert state["trainer"]["gradient_step"] == 40  # the boundary after step 1
    assert not list(exp.run_dir.glob("*.tmp"))

    full, full_dir = run_experiment(_cfg(tmp_path / "full"))
    resumed, cut_dir = run_experiment(_cfg(tmp_path / "cut", resume=True))
    assert (resumed.env_step, resumed.gradient_step) == (full.env_step, full.gradient_step)
    a, b = _params(Path(full_dir)), _params(Path(cut_dir))
    for k in a:
        assert torch.equal(a[k], b[k]), k
