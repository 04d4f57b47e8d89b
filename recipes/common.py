"""What every recipe does around its algorithm, written once: seeding, the environments,
the collectors and their random warm-up, the trainer's shared options, and the final
evaluation that ends with ``tdrl train``'s summary line.

The recipes import it as ``from common import ...`` (``python recipes/NAME.py`` puts
``recipes/`` on ``sys.path``); to copy a recipe out of the repository, copy this file with
it. Each function does what ``tdrl train`` does at the same point, in the same order, so a
recipe reproduces ``tdrl train``'s run for the same preset and seed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl.cli import summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.utils.logger import make_logger


def seed_everything(seed: int) -> None:
    """Seed numpy and torch; one torch thread (small networks run fastest on one)."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)


def make_envs(p: Any, **make_kwargs: Any) -> tuple[DummyVectorEnv, DummyVectorEnv]:
    """``p.training_num`` envs of ``p.task`` that explore and ``p.test_num`` that measure the
    policy (``gym.make(p.task, **make_kwargs)`` each)."""
    train_envs = DummyVectorEnv([lambda: gym.make(p.task, **make_kwargs)] * p.training_num)
    test_envs = DummyVectorEnv([lambda: gym.make(p.task, **make_kwargs)] * p.test_num)
    return train_envs, test_envs


def make_collectors(
    policy: Any,
    train_envs: Any,
    test_envs: Any,
    buffer: Any,
    seed: int,
    exploration_noise: bool = False,
) -> tuple[Collector, Collector]:
    """A training collector that fills ``buffer`` and a test collector that only counts
    returns (a buffer of two episodes per env), reset with ``seed`` and ``seed + 100_000``."""
    train_collector = Collector(policy, train_envs, buffer, exploration_noise=exploration_noise)
    test_buffer = VectorReplayBuffer(2 * len(test_envs), len(test_envs))
    test_collector = Collector(policy, test_envs, test_buffer, exploration_noise=exploration_noise)
    train_collector.reset(seed=seed)
    test_collector.reset(seed=seed + 100_000)
    return train_collector, test_collector


def make_test_collector(policy: Any, test_envs: Any, seed: int) -> Collector:
    """The test collector of an offline recipe (no training envs: the trainer samples the
    dataset), reset with ``seed + 100_000``."""
    test_buffer = VectorReplayBuffer(2 * len(test_envs), len(test_envs))
    test_collector = Collector(policy, test_envs, test_buffer)
    test_collector.reset(seed=seed + 100_000)
    return test_collector


def warm_up(train_collector: Collector, p: Any) -> None:
    """Fill the buffer with ``p.warmup_steps`` random steps, at most half the run's steps (a
    short run still trains on its own data)."""
    run_steps = p.max_epochs * p.step_per_epoch
    train_collector.collect(
        n_step=min(p.warmup_steps, max(p.step_per_epoch, run_steps // 2)), random=True
    )


def run_dir(args: argparse.Namespace, algo: str, task: str) -> Path:
    """Where the run logs: ``LOGDIR/ALGO-TASK-seedN-HHMMSS``."""
    return Path(args.logdir) / f"{algo}-{task}-seed{args.seed}-{time.strftime('%H%M%S')}"


def trainer_options(
    args: argparse.Namespace, p: Any, log_dir: Path, online: bool = True
) -> dict[str, Any]:
    """The trainer arguments every recipe passes alike: ``p.max_epochs`` epochs of
    ``p.step_per_epoch`` steps, batches of ``p.batch_size``, a test of ``p.test_num``
    episodes after each epoch, a stop at ``p.threshold`` (when set; an ``online`` trainer
    also tests as training episodes reach it), the logger and the progress bar."""
    options: dict[str, Any] = {
        "max_epochs": p.max_epochs,
        "step_per_epoch": p.step_per_epoch,
        "batch_size": p.batch_size,
        "episode_per_test": p.test_num,
        "stop_fn": None if p.threshold is None else lambda best: best >= p.threshold,
        "logger": make_logger(args.logger, log_dir),
        "show_progress": not args.no_progress,
    }
    if online:
        options["test_in_train"] = p.threshold is not None
    return options


def train_and_evaluate(
    algo: str, task: str, trainer: Any, log_dir: Path, *envs: Any, offline: bool = False
) -> Any:
    """Run ``trainer``; evaluate the trained policy over the trainer's test episodes; close
    ``envs``; print the summary line ``tdrl train`` prints. Returns the trainer's result."""
    start = time.perf_counter()
    result = trainer.run()
    policy, test_collector = trainer.algorithm.policy, trainer.test_collector
    policy.is_within_training_step = False
    policy.eval()
    test_collector.reset()
    n = trainer.episode_per_test
    final = test_collector.collect(n_episode=n).returns_stat
    assert final is not None
    print(f"final evaluation: {final.mean:.1f} ± {final.std:.1f} over {n} episodes")
    for env in envs:
        env.close()
    print(summary_line(algo, task, result, time.perf_counter() - start, log_dir, offline=offline))
    return result
