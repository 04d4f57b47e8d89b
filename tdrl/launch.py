"""Build and run a whole experiment from a preset: envs, collectors, algorithm, trainer, logs.

This is what ``tdrl train ALGO TASK`` and the scripts in ``recipes/`` run. Everything is
assembled from the public building blocks, so the function below doubles as a worked
example of wiring tdrl by hand.

Preset fields the launcher acts on, beside the trainer's (any preset class may have them):

* ``warmup_steps``: random env steps collected before training (the off-policy presets);
  unless given explicitly (``ExperimentConfig.overrides``), at most half the run's
  training steps ``max_epochs * step_per_epoch``, or one epoch's when that is more
  (:func:`warmup_steps`), so a short budget (``--epochs 1 --step-per-epoch 1000`` on a
  MuJoCo preset with a 25k-step warm-up) still trains, mostly on its own data;
* ``obs_norm``: observations normalized by a running mean/std over the training envs'
  observations, updated while they collect, shared frozen with the test envs, and saved
  with the algorithm (its ``obs_rms`` buffers) in checkpoints: Tianshou's
  ``VectorEnvNormObs`` (:class:`NormObsDummyVectorEnv`), as in its on-policy MuJoCo
  examples.

Learning-rate decay (``lr_decay``) needs no launcher: the builders give the optimizers an
LR schedule from the preset's trainer fields (see :mod:`tdrl.presets.mujoco`).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import random
import time
from dataclasses import dataclass, field
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
from tdrl.trainer import OfflineTrainer, OffPolicyTrainer, OnPolicyTrainer, TrainResult
from tdrl.utils.logger import BaseLogger, ConsoleLogger, CSVLogger, LazyLogger
from tdrl.utils.normalize import VectorEnvNormObs

__all__ = [
    "CURVE_KEY",
    "LOGGERS",
    "Experiment",
    "ExperimentConfig",
    "NormObsDummyVectorEnv",
    "add_train_arguments",
    "build_experiment",
    "config_from_args",
    "make_logger",
    "parse_overrides",
    "recipe_main",
    "run_experiment",
    "seed_everything",
    "warmup_steps",
]

TRAINERS = {"onpolicy": OnPolicyTrainer, "offpolicy": OffPolicyTrainer}
CURVE_KEY = "test/returns_stat/mean"


@dataclass
class ExperimentConfig:
    """What to train and how; ``None`` fields take the algorithm preset's value.

    ``overrides`` sets any other preset field (``{"step_per_collect": 256}``); the named
    fields (``epochs`` ...) win over it. ``dataset`` (an HDF5 file or ``minari:NAME``) is
    what offline and imitation algorithms learn from (:func:`tdrl.data.datasets.load_dataset`);
    ``icm`` wraps the algorithm in the intrinsic curiosity module
    (:func:`tdrl.presets.icm.apply_icm`).

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
    overrides: dict[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    icm: bool = False

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


class NormObsDummyVectorEnv(VectorEnvNormObs, DummyVectorEnv):
    """A :class:`~tdrl.env.DummyVectorEnv` whose observations are normalized by a running
    mean/std (:class:`~tdrl.utils.normalize.VectorEnvNormObs`): what the launcher makes for
    a preset with ``obs_norm`` on (the test envs share the training envs' ``obs_rms``,
    with ``update_obs_rms=False``).

    >>> import gymnasium as gym
    >>> envs = NormObsDummyVectorEnv([lambda: gym.make("Pendulum-v1")] * 3)
    >>> obs, _ = envs.reset(seed=0)
    >>> int(envs.obs_rms.count), bool(abs(obs.mean(0)).max() < 1e-5)
    (3, True)
    """


def warmup_steps(preset: Preset, explicit: bool = False) -> int:
    """The random warm-up of a run of ``preset``: its ``warmup_steps`` (0 without one),
    unless ``explicit`` (given by the user) at most ``max(step_per_epoch, max_epochs *
    step_per_epoch // 2)``: half the run's training steps, one epoch's for a run of one
    or two epochs (so a run cut after its first epoch warms up as the whole run did).

    >>> from tdrl import registry
    >>> p = registry.preset("td3", "Hopper-v5")  # 50 epochs of 5000 steps
    >>> warmup_steps(p), warmup_steps(p.replace(max_epochs=4)), warmup_steps(
    ...     p.replace(max_epochs=1, step_per_epoch=1000))
    (25000, 10000, 1000)
    >>> warmup_steps(registry.preset("ppo", "CartPole-v1"))
    0
    """
    steps = int(getattr(preset, "warmup_steps", 0) or 0)
    if explicit:
        return steps
    per_epoch = int(getattr(preset, "step_per_epoch", 0))
    budget = int(getattr(preset, "max_epochs", 0)) * per_epoch
    return min(steps, max(per_epoch, budget // 2))


def _preset(cfg: ExperimentConfig) -> Preset:
    """The registry's preset for ``cfg.algo`` on ``cfg.task`` with the config's overrides."""
    overrides: dict[str, Any] = dict(cfg.overrides)
    for name in ("step_per_epoch", "training_num", "test_num"):
        if getattr(cfg, name) is not None:
            overrides[name] = getattr(cfg, name)
    if cfg.epochs is not None:
        overrides["max_epochs"] = cfg.epochs
    if cfg.stop_reward is not None:
        overrides["threshold"] = cfg.stop_reward
    return registry.preset(cfg.algo, cfg.task, **overrides)


def make_buffer(preset: Any) -> Any:
    """The replay buffer a preset asks for.

    ``frames_stack > 1`` (Atari): one frame stored per step, the stack rebuilt on sampling
    (``stack_num``, ``save_only_last_obs``, ``ignore_obs_next``); ``stack_num`` (DRQN): a
    sampled stack of observations; ``prioritized_replay`` (Rainbow): a
    ``PrioritizedVectorReplayBuffer`` with the preset's ``alpha``, ``beta`` and
    ``weight_norm``.
    """
    frames = int(getattr(preset, "frames_stack", 1))
    kwargs: dict[str, Any] = {"stack_num": int(getattr(preset, "stack_num", 1))}
    if frames > 1:
        kwargs = {"stack_num": frames, "save_only_last_obs": True, "ignore_obs_next": True}
    if getattr(preset, "prioritized_replay", False):
        from tdrl.data.buffer import PrioritizedVectorReplayBuffer

        return PrioritizedVectorReplayBuffer(
            preset.buffer_size,
            preset.training_num,
            alpha=preset.alpha,
            beta=preset.beta,
            weight_norm=getattr(preset, "weight_norm", True),
            **kwargs,
        )
    return VectorReplayBuffer(preset.buffer_size, preset.training_num, **kwargs)


def make_train_fn(preset: Any, algorithm: Any, buffer: Any) -> Any:
    """``train_fn(epoch, env_step)`` applying a preset's schedules, or ``None``.

    ``eps_train`` -> ``eps_train_final`` over ``eps_decay_steps`` env steps (the DQN
    family's epsilon, linear as in Tianshou's Atari examples) and ``beta`` ->
    ``beta_final`` over ``beta_anneal_steps`` (prioritized replay's importance exponent).
    """
    from tdrl.algorithm.exploration import LinearSchedule

    fns = []
    if getattr(preset, "eps_train_final", None) is not None:
        eps = LinearSchedule(preset.eps_train, preset.eps_train_final, preset.eps_decay_steps)
        fns.append(lambda step: algorithm.policy.set_eps_training(eps(step)))
    if getattr(preset, "beta_final", None) is not None and hasattr(buffer, "set_beta"):
        beta = LinearSchedule(preset.beta, preset.beta_final, preset.beta_anneal_steps)
        fns.append(lambda step: buffer.set_beta(beta(step)))
    if not fns:
        return None

    def train_fn(epoch: int, env_step: int) -> None:
        for fn in fns:
            fn(env_step)

    return train_fn


@dataclass
class Experiment:
    """Everything :func:`build_experiment` assembled for one run; :meth:`run` trains it.

    ``train_collector`` is ``None`` for offline algorithms (their trainer samples
    ``dataset``); ``dataset`` is ``None`` for online ones that need none.
    """

    cfg: ExperimentConfig
    preset: Any
    entry: registry.Entry
    algorithm: Any
    train_envs: Any
    test_envs: Any
    train_collector: Collector | None
    test_collector: Collector
    buffer: Any
    dataset: Any
    trainer: Any
    logger: BaseLogger
    run_dir: Path

    @property
    def offline(self) -> bool:
        """Whether the trainer counts gradient steps on a fixed dataset."""
        return self.entry.trainer == "offline"

    def close(self) -> None:
        """Close the envs."""
        if self.train_envs is not None:
            self.train_envs.close()
        self.test_envs.close()

    def run(self) -> TrainResult:
        """Train, close the envs, draw the curve (CSV logs) and print the summary line:
        ``ALGO on TASK: best test return X ± Y (epoch E), N env steps, T s; logs in DIR``
        (offline: ``N gradient steps``)."""
        cfg = self.cfg
        start = time.perf_counter()
        try:
            result: TrainResult = self.trainer.run()
        finally:
            self.close()
        steps = (
            f"{result.gradient_step} gradient steps"
            if self.offline
            else f"{result.env_step} env steps"
        )
        summary = (
            f"{cfg.algo} on {self.preset.task}: best test return {result.best_reward:.1f} "
            f"± {result.best_reward_std:.1f} (epoch {result.best_epoch}), "
            f"{steps}, {time.perf_counter() - start:.1f} s; logs in {self.run_dir}"
        )
        if cfg.plot and cfg.logger == "csv":
            from tdrl.utils.plot import plot_runs

            out = plot_runs([self.run_dir], key=CURVE_KEY, out=self.run_dir / "curve.png")
            print(f"learning curve: {out}", flush=True)
        print(summary, flush=True)  # the last line of every run
        return result


def _make_envs(cfg: ExperimentConfig, preset: Any, spec: registry.Entry) -> tuple[Any, Any]:
    """(training envs or ``None`` for offline runs, test envs) for a preset."""

    def make_env(training: bool = True) -> gym.Env:
        env: gym.Env = spec.make_env(preset.task, preset, training=training)
        return env

    def make_test_env() -> gym.Env:  # e.g. Atari: real game scores, no reward clipping
        return make_env(training=False)

    if spec.trainer == "offline":
        return None, DummyVectorEnv([make_test_env] * preset.test_num)
    if getattr(preset, "obs_norm", False):
        # Tianshou's VectorEnvNormObs: the training envs update the statistics while they
        # collect, the test envs normalize with the same statistics, frozen
        train = NormObsDummyVectorEnv([make_env] * preset.training_num)
        test = NormObsDummyVectorEnv(
            [make_test_env] * preset.test_num, obs_rms=train.obs_rms, update_obs_rms=False
        )
        return train, test
    return (
        DummyVectorEnv([make_env] * preset.training_num),
        DummyVectorEnv([make_test_env] * preset.test_num),
    )


def _load_dataset(cfg: ExperimentConfig, spec: registry.Entry) -> Any:
    """The dataset buffer of an offline or imitation run (``None`` for others)."""
    if cfg.dataset is None:
        return None
    if not spec.needs_dataset:
        raise registry.PresetError(f"--dataset: {cfg.algo} trains online and takes no dataset")
    from tdrl.data.datasets import load_dataset

    return load_dataset(cfg.dataset)


def build_experiment(cfg: ExperimentConfig) -> Experiment:
    """Assemble envs, algorithm, collectors, buffer, logger and trainer for ``cfg``.

    A task without a preset for the algorithm, a bad override or an action space the
    algorithm cannot handle raises :class:`~tdrl.registry.PresetError` before anything is
    written. The random warm-up (off-policy presets) is collected here.
    """
    preset: Any = _preset(cfg)  # fields of the algorithm's preset class
    spec = registry.entry(cfg.algo, preset.task)
    if spec.needs_dataset and cfg.dataset is None:
        raise registry.PresetError(
            f"{cfg.algo} learns from a dataset: expected --dataset FILE.hdf5 (or minari:NAME), "
            "got none"
        )
    seed_everything(cfg.seed)
    if "OMP_NUM_THREADS" not in os.environ:
        # small RL networks: one intra-op thread is faster, and far faster on a busy CPU
        torch.set_num_threads(1)
    dataset = _load_dataset(cfg, spec)
    train_envs, test_envs = _make_envs(cfg, preset, spec)
    try:
        algorithm = make_algorithm(
            cfg.algo,
            preset.task,
            preset,
            observation_space=test_envs.observation_space[0],
            action_space=test_envs.action_space[0],
            device=cfg.device,  # build on the device: target nets share storage
            dataset=dataset,
        )
        if cfg.icm:
            apply_icm = registry._import("tdrl.presets.icm:apply_icm")
            algorithm = apply_icm(
                algorithm,
                cfg.algo,
                preset.task,
                test_envs.observation_space[0],
                test_envs.action_space[0],
            )
    except BaseException:
        if train_envs is not None:
            train_envs.close()
        test_envs.close()
        raise
    if isinstance(train_envs, NormObsDummyVectorEnv):
        # checkpointed (and restored in place) with the algorithm's state_dict
        algorithm.add_module("obs_rms", train_envs.obs_rms)
    run_dir = Path(cfg.log_dir) / cfg.run_name()
    run_dir.mkdir(parents=True, exist_ok=True)
    noisy = spec.exploration_noise  # e.g. DQN: epsilon-greedy in training, eps_test in tests
    train: Collector | None = None
    buffer: Any = None
    if spec.trainer != "offline":
        buffer = make_buffer(preset)
        train = Collector(algorithm.policy, train_envs, buffer, exploration_noise=noisy)
    test = Collector(algorithm.policy, test_envs, exploration_noise=noisy)
    if train is not None:
        train.reset(seed=cfg.seed)
    test.reset(seed=cfg.seed + 100_000)
    checkpoint = run_dir / "checkpoint.pt" if cfg.checkpoint or cfg.resume else None
    logger = make_logger(cfg.logger, run_dir, dataclasses.asdict(cfg))
    threshold = preset.threshold
    stop_fn = None if threshold is None else (lambda best: best >= threshold)
    common: dict[str, Any] = dict(
        test_collector=test,
        stop_fn=stop_fn,
        logger=logger,
        checkpoint_path=checkpoint,
        resume=cfg.resume,
        show_progress=cfg.show_progress,
    )
    if train is None:
        kwargs = preset.trainer_kwargs()
        for name in ("step_per_collect", "update_per_step", "repeat_per_collect"):
            kwargs.pop(name, None)
        trainer: Any = OfflineTrainer(algorithm, dataset, **common, **kwargs)
    else:
        warmup = warmup_steps(preset, explicit="warmup_steps" in cfg.overrides)
        if warmup and not (cfg.resume and (run_dir / "checkpoint.pt").exists()):
            train.collect(n_step=warmup, random=True)
        trainer = TRAINERS[spec.trainer](
            algorithm,
            train,
            # Tianshou's default: confirm a good training return by a test (needs a threshold)
            test_in_train=threshold is not None,
            train_fn=make_train_fn(preset, algorithm, buffer),
            **common,
            **preset.trainer_kwargs(),
        )
    return Experiment(
        cfg,
        preset,
        spec,
        algorithm,
        train_envs,
        test_envs,
        train,
        test,
        buffer,
        dataset,
        trainer,
        logger,
        run_dir,
    )


def run_experiment(cfg: ExperimentConfig) -> tuple[TrainResult, Path]:
    """Train ``cfg.algo`` on ``cfg.task``; return the result and the run directory
    (:func:`build_experiment`, then :meth:`Experiment.run`)."""
    exp = build_experiment(cfg)
    return exp.run(), exp.run_dir


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["FIELD=VALUE", ...]`` as preset overrides; a value is read as a Python literal
    (number, bool, ``None``, tuple ...), else kept as a string. The preset checks them.

    >>> parse_overrides(["warmup_steps=500", "hidden_sizes=(64, 64)", "lr_decay=False",
    ...                  "exploration_noise=ou"])
    {'warmup_steps': 500, 'hidden_sizes': (64, 64), 'lr_decay': False, 'exploration_noise': 'ou'}
    >>> parse_overrides(["lr"])
    Traceback (most recent call last):
    ...
    ValueError: override: expected FIELD=VALUE, got 'lr'
    """
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"override: expected FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = value
    return out


def config_from_args(algo: str, task: str | None, args: argparse.Namespace) -> ExperimentConfig:
    """Turn parsed flags into an :class:`ExperimentConfig` (``args.set``, when the parser
    has it: ``FIELD=VALUE`` preset overrides, see :func:`parse_overrides`)."""
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
        overrides=parse_overrides(getattr(args, "set", None)),
        dataset=getattr(args, "dataset", None),
        icm=bool(getattr(args, "icm", False)),
    )


def recipe_main(algo: str, argv: list[str] | None = None) -> TrainResult:
    """Entry point of the ``recipes/`` scripts: parse flags, run, return the result."""
    parser = argparse.ArgumentParser(description=f"Train {algo.upper()} with tdrl")
    add_train_arguments(parser)
    args = parser.parse_args(argv)
    result, _ = run_experiment(config_from_args(algo, None, args))
    return result
