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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl.cli import summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.data.datasets import check_spaces, load_dataset
from tdrl.env import DummyVectorEnv, NormObsDummyVectorEnv
from tdrl.trainer import OfflineTrainer, OffPolicyTrainer, OnPolicyTrainer
from tdrl.utils.logger import make_logger


def seed_everything(seed: int) -> None:
    """Seed numpy and torch; one torch thread (small networks run fastest on one)."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)


def make_envs(p: Any) -> tuple[DummyVectorEnv, DummyVectorEnv]:
    """``p.training_num`` envs of ``p.task`` that explore and ``p.test_num`` that measure the
    policy."""
    train_envs = DummyVectorEnv([lambda: gym.make(p.task)] * p.training_num)
    return train_envs, DummyVectorEnv([lambda: gym.make(p.task)] * p.test_num)


def make_normalized_envs(p: Any) -> tuple[NormObsDummyVectorEnv, NormObsDummyVectorEnv]:
    """:func:`make_envs` with observations normalized by a running mean/std of the training
    envs' observations (Tianshou's ``VectorEnvNormObs``), which the test envs share
    frozen: the MuJoCo on-policy recipes' envs, as ``tdrl train`` makes them."""
    train = NormObsDummyVectorEnv([lambda: gym.make(p.task)] * p.training_num)
    test = NormObsDummyVectorEnv(
        [lambda: gym.make(p.task)] * p.test_num, obs_rms=train.obs_rms, update_obs_rms=False
    )
    return train, test


def make_collectors(
    policy: Any, train_envs: Any, test_envs: Any, buffer: Any, seed: int, noise: bool = False
) -> tuple[Collector, Collector]:
    """A training collector that fills ``buffer`` and a test collector that only counts
    returns (a buffer of two episodes per env), reset with ``seed`` and ``seed + 100_000``;
    ``noise``: both add the policy's exploration noise."""
    train_collector = Collector(policy, train_envs, buffer, exploration_noise=noise)
    test_buffer = VectorReplayBuffer(2 * len(test_envs), len(test_envs))
    test_collector = Collector(policy, test_envs, test_buffer, exploration_noise=noise)
    train_collector.reset(seed=seed)
    test_collector.reset(seed=seed + 100_000)
    return train_collector, test_collector


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


# ------------------------------------------------------------------ the three training loops
# A recipe's ``build(p, observation_space, action_space)`` returns its algorithm (the
# networks, the policy and the algorithm), as tdrl's preset builders do; these functions
# do the rest in ``tdrl train``'s order: seed, envs, build, buffer, collectors, trainer.
Build = Callable[[Any, gym.Space, gym.Space], Any]
MakeEnvs = Callable[[Any], tuple[Any, Any]]


def start(args: argparse.Namespace, p: Any, build: Build, envs: MakeEnvs = make_envs) -> Any:
    """Seed everything, make the (training, test) envs ``envs(p)``, build the algorithm on
    their spaces; return ``(algorithm, (train_envs, test_envs))``."""
    seed_everything(args.seed)
    train_envs, test_envs = envs(p)
    algorithm = build(p, train_envs.observation_space[0], train_envs.action_space[0])
    return algorithm, (train_envs, test_envs)


def train_off_policy(
    algo: str,
    args: argparse.Namespace,
    p: Any,
    build: Build,
    buffer: Any = None,
    noise: bool = False,
    envs: MakeEnvs = make_envs,
    train_fn_of: Callable[[Any], Callable[[int, int], None]] | None = None,
) -> Any:
    """Off-policy training, as ``tdrl train`` runs it: :func:`start`, then collectors into
    ``buffer`` (default: ``p.buffer_size`` steps over the training envs; ``noise``: with
    the policy's exploration noise), a random warm-up, then epochs of
    ``p.step_per_collect`` env steps each followed by ``p.update_per_step`` gradient steps
    per env step (``train_fn_of(algorithm)(epoch, env_step)`` before each collect), a test
    after every epoch; the final evaluation and summary line."""
    algorithm, (train_envs, test_envs) = start(args, p, build, envs)
    if buffer is None:
        buffer = VectorReplayBuffer(p.buffer_size, p.training_num)
    train_collector, test_collector = make_collectors(
        algorithm.policy, train_envs, test_envs, buffer, args.seed, noise
    )
    warm_up(train_collector, p)
    log_dir = run_dir(args, algo, p.task)
    trainer = OffPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        step_per_collect=p.step_per_collect,
        update_per_step=p.update_per_step,
        train_fn=None if train_fn_of is None else train_fn_of(algorithm),
        **trainer_options(args, p, log_dir),
    )
    return train_and_evaluate(algo, p.task, trainer, log_dir, train_envs, test_envs)


def train_on_policy(
    algo: str, args: argparse.Namespace, p: Any, build: Build, envs: MakeEnvs = make_envs
) -> Any:
    """On-policy training, as ``tdrl train`` runs it: :func:`start`, then collectors into a
    buffer that holds one rollout, emptied after each update; epochs of collects of
    ``p.step_per_collect`` env steps, each followed by ``p.repeat_per_collect`` passes over
    it; a test after every epoch; the final evaluation and summary line."""
    algorithm, (train_envs, test_envs) = start(args, p, build, envs)
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)
    train_collector, test_collector = make_collectors(
        algorithm.policy, train_envs, test_envs, buffer, args.seed
    )
    log_dir = run_dir(args, algo, p.task)
    trainer = OnPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        step_per_collect=p.step_per_collect,
        repeat_per_collect=p.repeat_per_collect,
        **trainer_options(args, p, log_dir),
    )
    return train_and_evaluate(algo, p.task, trainer, log_dir, train_envs, test_envs)


def load_dataset_for(path: str, observation_space: gym.Space, action_space: gym.Space) -> Any:
    """The dataset at ``path`` (``--dataset``: an HDF5 replay buffer from ``tdrl gather``,
    Tianshou's or a D4RL-style flat file, or ``minari:NAME``), a ReplayBuffer of
    transitions; a one-line error if it does not fit the spaces."""
    dataset = load_dataset(path)
    check_spaces(dataset, observation_space, action_space)
    return dataset


def train_offline(algo: str, args: argparse.Namespace, p: Any, build: Callable[..., Any]) -> Any:
    """Offline training, as ``tdrl train`` runs it: seed; ``p.test_num`` test envs (no
    training envs); the ``--dataset`` (:func:`load_dataset_for`);
    ``build(p, observation_space, action_space, dataset)``; epochs of ``p.step_per_epoch``
    gradient steps on batches of the dataset, a test after every epoch; the final
    evaluation and summary line (counting gradient steps)."""
    seed_everything(args.seed)
    test_envs = DummyVectorEnv([lambda: gym.make(p.task)] * p.test_num)
    obs_space, act_space = test_envs.observation_space[0], test_envs.action_space[0]
    dataset = load_dataset_for(args.dataset, obs_space, act_space)
    algorithm = build(p, obs_space, act_space, dataset)
    test_buffer = VectorReplayBuffer(2 * p.test_num, p.test_num)
    test_collector = Collector(algorithm.policy, test_envs, test_buffer)
    test_collector.reset(seed=args.seed + 100_000)
    log_dir = run_dir(args, algo, p.task)
    trainer = OfflineTrainer(
        algorithm,
        dataset,
        test_collector=test_collector,
        **trainer_options(args, p, log_dir, online=False),
    )
    return train_and_evaluate(algo, p.task, trainer, log_dir, test_envs, offline=True)
