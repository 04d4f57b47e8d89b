"""Build and run a whole experiment from a preset: envs, collectors, algorithm, trainer, logs.

This is what ``tdrl train ALGO TASK`` and the scripts in ``recipes/`` run. Everything is
assembled from the public building blocks, so the function below doubles as a worked
example of wiring tdrl by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl import registry
from tdrl.algorithm.presets import make_algorithm
from tdrl.cli import LOGGERS, add_train_arguments
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import Collector
from tdrl.env import DummyVectorEnv
from tdrl.registry import Preset
from tdrl.trainer import OffPolicyTrainer, OnPolicyTrainer, TrainResult
from tdrl.utils.logger import BaseLogger, ConsoleLogger, CSVLogger, LazyLogger

__all__ = [
    "CURVE_KEY",
    "LOGGERS",
    "ExperimentConfig",
    "add_train_arguments",
    "config_from_args",
    "make_logger",
    "recipe_main",
    "run_experiment",
    "seed_everything",
]

TRAINERS = {"onpolicy": OnPolicyTrainer, "offpolicy": OffPolicyTrainer}
CURVE_KEY = "test/returns_stat/mean"


@dataclass
class ExperimentConfig:
    """What to train and how; ``None`` fields take the algorithm preset's value.

    >>> ExperimentConfig("ppo", "CartPole-v1").run_name().startswith("ppo-CartPole-v1-seed0")
    True
    """

    algo: str
    task: str
    seed: int = 0
    epochs: int | None = None
    step_per_epoch: int | None = None
    training_num: int | None = None
    test_num: int | None = None
    stop_reward: float | None = None
    logger: str = "csv"
    log_dir: str = "runs"
    device: str = "cpu"
    checkpoint: bool = False
    resume: bool = False
    show_progress: bool = True
    plot: bool = True

    def run_name(self) -> str:
        """A directory name unique to the algorithm, task and seed."""
        return f"{self.algo}-{self.task}-seed{self.seed}"


def __getattr__(name: str) -> Any:
    """``PRESETS``: each algorithm's preset for its default task, built on first access
    (kept for scripts; :func:`tdrl.registry.preset` gives any algorithm/task pair)."""
    if name == "PRESETS":
        presets: dict[str, Preset] = {a: registry.preset(a) for a in registry.algorithms()}
        return presets
    raise AttributeError(f"module 'tdrl.launch' has no attribute {name!r}")


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global RNG and torch."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_logger(kind: str, run_dir: Path, config: dict[str, Any]) -> BaseLogger:
    """A logger of the given kind writing into ``run_dir`` (W&B: offline unless asked).

    Training stats are logged after every collect, test stats after every test and losses
    every 100 gradient steps.
    """
    if kind not in LOGGERS:
        raise ValueError(f"logger must be one of {LOGGERS}, got {kind!r}")
    every = {"train_interval": 1, "test_interval": 1, "update_interval": 100}
    logger: BaseLogger
    if kind == "csv":
        logger = CSVLogger(run_dir)
    elif kind == "console":
        logger = ConsoleLogger()
    elif kind == "tensorboard":
        from tdrl.utils.logger import TensorboardLogger

        logger = TensorboardLogger(str(run_dir))
    elif kind == "wandb":
        from tdrl.utils.logger import WandbLogger

        logger = WandbLogger(project="tdrl", name=run_dir.name, config=config, dir=run_dir)
    else:
        logger = LazyLogger()
    for key, value in every.items():
        setattr(logger, key, value)
    return logger


def _preset(cfg: ExperimentConfig) -> Preset:
    """The registry's preset for ``cfg.algo`` on ``cfg.task`` with the config's overrides."""
    overrides: dict[str, Any] = {}
    for field in ("step_per_epoch", "training_num", "test_num"):
        if getattr(cfg, field) is not None:
            overrides[field] = getattr(cfg, field)
    if cfg.epochs is not None:
        overrides["max_epochs"] = cfg.epochs
    if cfg.stop_reward is not None:
        overrides["threshold"] = cfg.stop_reward
    return registry.preset(cfg.algo, cfg.task, **overrides)


def run_experiment(cfg: ExperimentConfig) -> tuple[TrainResult, Path]:
    """Train ``cfg.algo`` on ``cfg.task``; return the result and the run directory.

    A task without a preset for the algorithm, a bad override or an action space the
    algorithm cannot handle raises :class:`~tdrl.registry.PresetError` before anything is
    written.
    """
    preset: Any = _preset(cfg)  # fields of the algorithm's preset class
    spec = registry.entry(cfg.algo, preset.task)
    seed_everything(cfg.seed)

    def make_env() -> gym.Env:
        env: gym.Env = spec.make_env(preset.task, preset)
        return env

    train_envs = DummyVectorEnv([make_env] * preset.training_num)
    test_envs = DummyVectorEnv([make_env] * preset.test_num)
    try:
        algorithm = make_algorithm(
            cfg.algo,
            preset.task,
            preset,
            observation_space=train_envs.observation_space[0],
            action_space=train_envs.action_space[0],
            device=cfg.device,  # build on the device: target nets share storage
        )
    except BaseException:
        train_envs.close()
        test_envs.close()
        raise
    run_dir = Path(cfg.log_dir) / cfg.run_name()
    run_dir.mkdir(parents=True, exist_ok=True)
    noisy = spec.exploration_noise  # e.g. DQN: epsilon-greedy in training, eps_test in tests
    buffer = VectorReplayBuffer(preset.buffer_size, preset.training_num)
    train = Collector(algorithm.policy, train_envs, buffer, exploration_noise=noisy)
    test = Collector(algorithm.policy, test_envs, exploration_noise=noisy)
    train.reset(seed=cfg.seed)
    test.reset(seed=cfg.seed + 100_000)
    warmup = getattr(preset, "warmup_steps", 0)
    if warmup and not (cfg.resume and (run_dir / "checkpoint.pt").exists()):
        train.collect(n_step=warmup, random=True)
    logger = make_logger(cfg.logger, run_dir, dataclasses.asdict(cfg))
    threshold = preset.threshold
    trainer = TRAINERS[spec.trainer](
        algorithm,
        train,
        test_collector=test,
        stop_fn=None if threshold is None else (lambda best: best >= threshold),
        test_in_train=True,  # Tianshou's default: confirm a good training return by a test
        logger=logger,
        checkpoint_path=run_dir / "checkpoint.pt" if cfg.checkpoint or cfg.resume else None,
        resume=cfg.resume,
        show_progress=cfg.show_progress,
        **preset.trainer_kwargs(),
    )
    start = time.perf_counter()
    result = trainer.run()
    summary = (
        f"{cfg.algo} on {preset.task}: best test return {result.best_reward:.1f} "
        f"± {result.best_reward_std:.1f} (epoch {result.best_epoch}), "
        f"{result.env_step} env steps, {time.perf_counter() - start:.1f} s; logs in {run_dir}"
    )
    train_envs.close()
    test_envs.close()
    if cfg.plot and cfg.logger == "csv":
        from tdrl.utils.plot import plot_runs

        out = plot_runs([run_dir], key=CURVE_KEY, out=run_dir / "curve.png")
        print(f"learning curve: {out}", flush=True)
    print(summary, flush=True)  # the last line of every run
    return result, run_dir


def config_from_args(algo: str, task: str | None, args: argparse.Namespace) -> ExperimentConfig:
    """Turn parsed flags into an :class:`ExperimentConfig`."""
    return ExperimentConfig(
        algo=algo,
        task=task or args.task or registry.default_task(algo),
        seed=args.seed,
        epochs=args.epochs,
        step_per_epoch=args.step_per_epoch,
        training_num=args.training_num,
        test_num=args.test_num,
        stop_reward=args.stop_reward,
        logger=args.logger,
        log_dir=args.logdir,
        device=args.device,
        checkpoint=args.checkpoint,
        resume=args.resume,
        show_progress=not args.no_progress,
        plot=not args.no_plot,
    )


def recipe_main(algo: str, argv: list[str] | None = None) -> TrainResult:
    """Entry point of the ``recipes/`` scripts: parse flags, run, return the result."""
    parser = argparse.ArgumentParser(description=f"Train {algo.upper()} with tdrl")
    add_train_arguments(parser)
    args = parser.parse_args(argv)
    result, _ = run_experiment(config_from_args(algo, None, args))
    return result
