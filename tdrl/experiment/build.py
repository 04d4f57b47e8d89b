"""Build a run from its configuration: envs, algorithm, buffer, collectors, logger, trainer.

This is what ``tdrl train ALGO TASK`` and ``tdrl bench`` run. Everything is assembled from
the public building blocks, so the functions below double as a worked example of wiring
tdrl by hand. The configuration arrives as one :class:`~tdrl.experiment.config.
ExperimentConfig`; its preset is resolved once (:meth:`~tdrl.experiment.config.
ExperimentConfig.preset`) and the typed preset is what every part below reads.

Preset fields a run acts on, beside the trainer's (any preset class may have them):

* ``warmup_steps``: random env steps collected before training (the off-policy presets);
  unless given explicitly (``ExperimentConfig.overrides``), at most half the run's
  training steps ``max_epochs * step_per_epoch``, or one epoch's when that is more
  (:func:`warmup_steps`), so a short budget (``--epochs 1 --step-per-epoch 1000`` on a
  MuJoCo preset with a 25k-step warm-up) still trains, mostly on its own data;
* ``obs_norm``: observations normalized by a running mean/std over the training envs'
  observations, updated while they collect, shared frozen with the test envs, and saved
  with the algorithm (its ``obs_rms`` buffers) in checkpoints: Tianshou's
  ``VectorEnvNormObs`` (:class:`~tdrl.env.NormObsDummyVectorEnv`), as in its on-policy
  MuJoCo examples;
* ``frames_stack``, ``stack_num``, ``prioritized_replay``: the replay buffer
  (:func:`make_buffer`); ``eps_train_final``, ``beta_final``: schedules
  (:func:`make_train_fn`).

Learning-rate decay (``lr_decay``) needs nothing here: the builders give the optimizers an
LR schedule from the preset's trainer fields (see :mod:`tdrl.presets.mujoco`). The run
directory is created only once everything the user gave checked out (preset, env id,
spaces, checkpoint), so a user error leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import Collector
from tdrl.env import DummyVectorEnv
from tdrl.env.normobs import NormObsDummyVectorEnv
from tdrl.errors import UsageError
from tdrl.experiment.config import ExperimentConfig, check_run_options, run_options
from tdrl.experiment.run import Experiment
from tdrl.experiment.rundir import (
    CHECKPOINT_FILE,
    resolve_run_dir,
    start_run_dir,
    write_run_config,
)
from tdrl.experiment.sizes import check_sizes
from tdrl.presets import make_algorithm, registry
from tdrl.trainer import OfflineTrainer, OffPolicyTrainer, OnPolicyTrainer, TrainResult
from tdrl.trainer.checkpoint import read_checkpoint
from tdrl.utils.logger import make_logger
from tdrl.utils.threads import apply_cpu_threads

__all__ = [
    "TRAINERS",
    "build_experiment",
    "check_device",
    "make_buffer",
    "make_envs",
    "make_train_fn",
    "run_experiment",
    "seed_everything",
    "warmup_steps",
]

TRAINERS = {"onpolicy": OnPolicyTrainer, "offpolicy": OffPolicyTrainer}
"""The trainer of each online registry ``trainer`` kind (``offline``: :class:`OfflineTrainer`)."""


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global RNG and torch."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def check_device(flag: str, value: str) -> torch.device:
    """``value`` as a torch device this machine has, or a :class:`UsageError` naming
    ``flag``, what was expected and what was given.

    >>> check_device("--device", "cpu")
    device(type='cpu')
    >>> check_device("--device", "gpu0")
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: --device: expected a torch device (cpu, cuda, cuda:N, mps), got 'gpu0'
    """
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError):
        raise UsageError(
            f"{flag}: expected a torch device (cpu, cuda, cuda:N, mps), got {value!r}"
        ) from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise UsageError(
                f"{flag}: expected a device this machine has, got {value!r} "
                "(torch.cuda.is_available() is False)"
            )
        if dev.index is not None and dev.index >= n:
            raise UsageError(f"{flag}: expected cuda:0..cuda:{n - 1}, got {value!r}")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError(f"{flag}: expected a device this machine has, got {value!r}")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"{flag}: expected cpu, cuda, cuda:N or mps, got {value!r}")
    return dev


def warmup_steps(preset: registry.Preset, explicit: bool = False) -> int:
    """The random warm-up of a run of ``preset``: its ``warmup_steps`` (0 without one),
    unless ``explicit`` (given by the user) at most ``max(step_per_epoch, max_epochs *
    step_per_epoch // 2)``: half the run's training steps, one epoch's for a run of one
    or two epochs (so a run cut after its first epoch warms up as the whole run did).

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


def make_buffer(preset: Any, device: str = "cpu") -> Any:
    """The replay buffer a preset asks for, its columns on ``device``.

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
    kwargs["device"] = device
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


def make_envs(preset: Any, spec: registry.Entry) -> tuple[Any, Any]:
    """(training envs, or ``None`` for offline runs; test envs) of a preset: ``training_num``
    and ``test_num`` in-process envs made by the registry entry (its env wrapper, e.g.
    Atari preprocessing; test envs get real game scores), normalized by shared running
    statistics when the preset has ``obs_norm``."""

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


def _load_dataset(cfg: ExperimentConfig) -> Any:
    """The dataset buffer of an offline or imitation run (``None`` for others)."""
    if cfg.dataset is None:
        return None
    from tdrl.data.datasets import load_dataset

    return load_dataset(cfg.dataset)


def _make_algorithm(
    cfg: ExperimentConfig,
    preset: Any,
    envs: tuple[Any, Any],
    dataset: Any,
    resume: tuple[Any, Path] | None,
) -> Any:
    """The algorithm of a run, on its device: built from the preset for the test envs'
    spaces, wrapped in ICM if asked, holding the observation normalizer (so checkpoints
    carry it), compiled if asked, with a resumed checkpoint's weights."""
    train_envs, test_envs = envs
    obs_space, act_space = test_envs.observation_space[0], test_envs.action_space[0]
    algorithm = make_algorithm(
        cfg.algo,
        preset.task,
        preset,
        observation_space=obs_space,
        action_space=act_space,
        device=cfg.device,  # build on the device: target nets share storage
        dataset=dataset,
    )
    if cfg.icm:
        from tdrl.presets.icm import apply_icm

        algorithm = apply_icm(algorithm, cfg.algo, preset.task, obs_space, act_space)
    if isinstance(train_envs, NormObsDummyVectorEnv):
        # checkpointed (and restored in place) with the algorithm's state_dict
        algorithm.add_module("obs_rms", train_envs.obs_rms)
    if cfg.compile is not None:
        algorithm.compile(mode=None if cfg.compile == "default" else cfg.compile)
    if resume is not None:  # a checkpoint of another network: say so now
        from tdrl.trainer.checkpoint import load_checkpoint_weights

        load_checkpoint_weights(algorithm, *resume)
    return algorithm


def build_experiment(cfg: ExperimentConfig) -> Experiment:
    """Assemble envs, algorithm, collectors, buffer, logger and trainer for ``cfg``.

    A task without a preset for the algorithm, a bad override, an unknown env id, an action
    space the algorithm cannot handle, a missing or corrupt checkpoint to resume: each
    raises (:class:`~tdrl.errors.PresetError`, :class:`~tdrl.errors.UsageError`,
    gymnasium's error) before anything is written. The run directory is then created
    (:func:`~tdrl.experiment.rundir.resolve_run_dir`) with its ``config.yaml``, and the
    random warm-up (off-policy presets) is collected.
    """
    check_run_options(seed=cfg.seed, logger=cfg.logger)
    check_device("--device", cfg.device)
    check_device("--buffer-device", cfg.buffer_device)
    preset: Any = cfg.preset()  # the typed preset every part below reads
    spec = registry.entry(cfg.algo, preset.task)
    registry.check_dataset(cfg.algo, spec, cfg.dataset is not None)
    run_dir = resolve_run_dir(cfg)
    checkpoint = run_dir / CHECKPOINT_FILE
    resume_state = read_checkpoint(checkpoint) if cfg.resume else None
    seed_everything(cfg.seed)
    # small RL networks: one intra-op thread (unless the user chose; the trainer's rule)
    apply_cpu_threads(None, "auto", report=False)
    dataset = _load_dataset(cfg)
    envs = make_envs(preset, spec)
    created = False
    try:
        spaces = envs[1].observation_space[0], envs[1].action_space[0]
        check_sizes(preset, *spaces, cfg.overrides, cfg.device, cfg.buffer_device)
        resume = None if resume_state is None else (resume_state, checkpoint)
        algorithm = _make_algorithm(cfg, preset, envs, dataset, resume)
        offline = spec.trainer == "offline"
        warmup = 0 if offline else warmup_steps(preset, "warmup_steps" in cfg.overrides)
        if hasattr(preset, "warmup_steps"):  # config.yaml records the warm-up it does
            preset = preset.replace(warmup_steps=warmup)
        created = start_run_dir(cfg, run_dir, resume_state)
        write_run_config(run_dir, run_options(cfg), preset)
        return _assemble(cfg, preset, spec, algorithm, envs, dataset, run_dir, warmup, resume_state)
    except BaseException:
        if envs[0] is not None:
            envs[0].close()
        envs[1].close()
        if created:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _collectors(
    cfg: ExperimentConfig, preset: Any, spec: registry.Entry, policy: Any, envs: tuple[Any, Any]
) -> tuple[Collector | None, Collector, Any]:
    """(training collector or ``None`` offline, test collector, replay buffer or ``None``),
    reset with the run's seeds (test envs: ``seed + 100000``)."""
    noisy = spec.exploration_noise  # e.g. DQN: epsilon-greedy in training, eps_test in tests
    train: Collector | None = None
    buffer: Any = None
    if spec.trainer != "offline":
        if cfg.ray_collectors is not None:
            train, buffer = _ray_collector(cfg, preset, spec, policy, noisy)
        else:
            buffer = make_buffer(preset, cfg.buffer_device)
            train = Collector(policy, envs[0], buffer, exploration_noise=noisy)
    # the test collector only counts returns: a buffer of 2 steps per env is enough (its
    # default of 10k steps per env made checkpoints 80 MB)
    test_buffer = VectorReplayBuffer(2 * preset.test_num, preset.test_num)
    test = Collector(policy, envs[1], test_buffer, exploration_noise=noisy)
    if train is not None:
        train.reset(seed=cfg.seed)
    test.reset(seed=cfg.seed + 100_000)
    return train, test, buffer


def _assemble(
    cfg: ExperimentConfig,
    preset: Any,
    spec: registry.Entry,
    algorithm: Any,
    envs: tuple[Any, Any],
    dataset: Any,
    run_dir: Path,
    warmup: int,
    resume_state: Any,
) -> Experiment:
    """Collectors, buffer, logger and trainer of :func:`build_experiment`."""
    train, test, buffer = _collectors(cfg, preset, spec, algorithm.policy, envs)
    checkpoint = run_dir / CHECKPOINT_FILE
    logger = make_logger(cfg.logger, run_dir, dataclasses.asdict(cfg))
    threshold = preset.threshold
    stop_fn = None if threshold is None else (lambda best: best >= threshold)
    common: dict[str, Any] = dict(
        test_collector=test,
        stop_fn=stop_fn,
        logger=logger,
        checkpoint_path=checkpoint if cfg.checkpoint or cfg.resume else None,
        resume=cfg.resume,
        interrupt_checkpoint_path=checkpoint,
        show_progress=cfg.show_progress,
    )
    kwargs = preset.trainer_kwargs()  # epochs, collects, updates, batch_size, test size
    if train is None:
        for name in ("step_per_collect", "update_per_step", "repeat_per_collect"):
            kwargs.pop(name, None)
        trainer: Any = OfflineTrainer(algorithm, dataset, **common, **kwargs)
    else:
        if warmup and resume_state is None:
            train.collect(n_step=warmup, random=True)
        trainer = TRAINERS[spec.trainer](
            algorithm,
            train,
            # Tianshou's default: confirm a good training return by a test (needs a threshold)
            test_in_train=threshold is not None,
            train_fn=make_train_fn(preset, algorithm, buffer),
            **common,
            **kwargs,
        )
    trainer.resume_state = resume_state
    return Experiment(
        cfg, preset, spec, algorithm, *envs, train, test, buffer, dataset, trainer, logger, run_dir
    )


def _ray_collector(
    cfg: ExperimentConfig, preset: Any, spec: registry.Entry, policy: Any, noisy: bool
) -> tuple[Any, Any]:
    """``--ray-collectors M``: M Ray workers of ``training_num`` envs each, feeding one
    buffer of ``M * training_num`` sub-buffers (:class:`~tdrl.data.distributed.RayCollector`)."""
    m = cfg.ray_collectors
    if not isinstance(m, int) or m < 1:
        raise UsageError(f"--ray-collectors: expected an integer >= 1, got {m!r}")
    if spec.trainer != "offpolicy":
        raise UsageError(
            f"--ray-collectors: expected an off-policy algorithm, got {cfg.algo} "
            f"(trainer {spec.trainer!r})"
        )
    if getattr(preset, "obs_norm", False):
        raise UsageError("--ray-collectors: presets with obs_norm are not supported")
    from tdrl.data.distributed import RayCollector

    k = int(preset.training_num)
    buffer = make_buffer(preset.replace(training_num=m * k), cfg.buffer_device)
    task, make_env = preset.task, spec.make_env
    collector = RayCollector(
        policy,
        lambda: make_env(task, preset, training=True),
        num_workers=m,
        envs_per_worker=k,
        buffer=buffer,
        exploration_noise=noisy,
    )
    return collector, buffer


def run_experiment(cfg: ExperimentConfig) -> tuple[TrainResult, Path]:
    """Train ``cfg.algo`` on ``cfg.task``; return the result and the run directory
    (:func:`build_experiment`, then :meth:`~tdrl.experiment.run.Experiment.run`)."""
    exp = build_experiment(cfg)
    return exp.run(), exp.run_dir
