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

Run directories (``docs/run-directory.md``): a new run gets ``LOG_DIR/ALGO-TASK-seedS``, or
``-2``, ``-3``, ... when that exists; ``resume`` continues the latest of them from its
``checkpoint.pt`` (its CSV logs cut back to the checkpoint's step first), ``overwrite``
replaces the latest. The directory is created only once everything the user gave checked out
(preset, env id, spaces, checkpoint), so a user error leaves nothing behind. Every run writes
``config.yaml`` (the resolved config) at its start, the CSV logs whatever the logger,
``policy.pt`` (the final policy weights) and ``curve.png`` at its end. SIGINT and SIGTERM
during training save ``checkpoint.pt`` and ``policy.pt`` and raise
:class:`~tdrl.trainer.TrainingInterrupted`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import os
import random
import re
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tdrl import registry
from tdrl.algorithm.presets import make_algorithm
from tdrl.checkpoint import POLICY_FILE, save_policy, write_run_config
from tdrl.cli import LOGGERS, add_train_arguments, check_run_options, summary_line
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import Collector
from tdrl.env import DummyVectorEnv
from tdrl.env.normobs import NormObsDummyVectorEnv
from tdrl.errors import RunDirError, UsageError
from tdrl.registry import Preset
from tdrl.trainer import (
    OfflineTrainer,
    OffPolicyTrainer,
    OnPolicyTrainer,
    TrainingInterrupted,
    TrainResult,
)
from tdrl.trainer.checkpoint import read_checkpoint
from tdrl.utils.logger import (
    BaseLogger,
    truncate_csv_logs,
)
from tdrl.utils.logger import make_logger as _make_logger

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
    "resolve_run_dir",
    "run_dirs",
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
    (:func:`tdrl.presets.icm.apply_icm`). ``resume`` continues the latest run directory
    of this algorithm, task and seed (or ``run_dir`` when given) from its checkpoint;
    ``overwrite`` replaces the latest one instead of starting ``-2``, ``-3``, ...
    ``ray_collectors`` (off-policy) collects with that many Ray worker actors
    (:class:`~tdrl.data.distributed.RayCollector`, ``docs/scaling.md``). ``compile``
    (``"default"``, ``"reduce-overhead"``, ...) runs the update through ``torch.compile``
    (:meth:`~tdrl.algorithm.base.Algorithm.compile`), compiled before the first epoch.
    ``device`` holds the networks (``"cuda"``: sampled batches go there through pinned
    memory, without blocking); ``buffer_device`` the replay buffer's columns (``"cuda"``
    keeps the whole replay storage on the GPU). Both are checked before anything runs.

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
    overwrite: bool = False
    run_dir: str | None = None
    ray_collectors: int | None = None
    compile: str | None = None
    buffer_device: str = "cpu"

    def run_name(self) -> str:
        """The run directory's name, ``ALGO-TASK-seedS`` (a repeated run gets ``-2``,
        ``-3``, ...: :func:`resolve_run_dir`)."""
        return registry.run_name(self.algo, self.task, self.seed)


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
    """A logger of the given kind writing into ``run_dir`` (W&B: offline unless asked):
    :func:`tdrl.utils.logger.make_logger`, the run's CSV files beside any other kind."""
    return _make_logger(kind, run_dir, config)


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


_RUN_SUFFIX = re.compile(r"-(\d+)$")


def run_dirs(log_dir: str | os.PathLike[str], name: str) -> list[Path]:
    """The existing run directories of run name ``name`` under ``log_dir``, oldest first:
    ``name``, then ``name-2``, ``name-3``, ... (by number).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("ppo-CartPole-v1-seed0", "ppo-CartPole-v1-seed0-10",
    ...           "ppo-CartPole-v1-seed0-2", "ppo-CartPole-v1-seed01"):
    ...     (d / n).mkdir()
    >>> [p.name for p in run_dirs(d, "ppo-CartPole-v1-seed0")]
    ['ppo-CartPole-v1-seed0', 'ppo-CartPole-v1-seed0-2', 'ppo-CartPole-v1-seed0-10']
    """
    root = Path(log_dir)
    if not root.is_dir():
        return []
    found: list[tuple[int, Path]] = []
    for p in root.iterdir():
        if not p.is_dir():
            continue
        if p.name == name:
            found.append((1, p))
        elif p.name.startswith(name + "-"):
            m = _RUN_SUFFIX.fullmatch(p.name[len(name) :])
            if m and int(m.group(1)) >= 2:
                found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def resolve_run_dir(cfg: ExperimentConfig) -> Path:
    """The run directory ``cfg`` trains in (not created here; see :func:`run_dirs`).

    New run: ``LOG_DIR/ALGO-TASK-seedS``, or the next free ``-N``; ``overwrite``: the
    latest existing one (replaced when the run starts); ``resume``: ``cfg.run_dir`` or the
    latest existing one, which must hold a ``checkpoint.pt``
    (:class:`~tdrl.errors.RunDirError` otherwise).
    """
    if cfg.resume and cfg.overwrite:
        raise UsageError("--overwrite: expected either --resume or --overwrite, got both")
    name = cfg.run_name()
    if cfg.run_dir is not None:
        path = Path(cfg.run_dir)
        if cfg.resume and not (path / "checkpoint.pt").is_file():
            raise RunDirError(
                f"--resume: expected a checkpoint {path / 'checkpoint.pt'}, found none"
            )
        return path
    existing = run_dirs(cfg.log_dir, name)
    if cfg.resume:
        if not existing:
            raise RunDirError(
                f"--resume: expected a run directory {Path(cfg.log_dir) / name} with a "
                "checkpoint.pt, found none"
            )
        latest = existing[-1]
        if not (latest / "checkpoint.pt").is_file():
            raise RunDirError(
                f"--resume: expected a checkpoint {latest / 'checkpoint.pt'}, found none "
                "(--checkpoint saves one after every epoch, Ctrl-C saves one)"
            )
        return latest
    if cfg.overwrite and existing:
        return existing[-1]
    if not existing:
        return Path(cfg.log_dir) / name
    last = _RUN_SUFFIX.search(existing[-1].name[len(name) :])
    return Path(cfg.log_dir) / f"{name}-{int(last.group(1)) + 1 if last else 2}"


@contextlib.contextmanager
def _interrupt_handlers(trainer: Any) -> Iterator[None]:
    """While training: SIGINT/SIGTERM ask the trainer to stop at the next step boundary
    (a second signal interrupts at once). Only in the main thread, where signals arrive."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if trainer._interrupt is not None:  # second signal: stop now
            raise KeyboardInterrupt(name)
        trainer.request_interrupt(name)

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


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
        """Close the envs (and a Ray collector's workers)."""
        if self.train_envs is not None:
            self.train_envs.close()
        close = getattr(self.train_collector, "close", None)
        if close is not None:
            close()
        self.test_envs.close()

    def save_policy(self) -> Path:
        """Write ``RUN_DIR/policy.pt``: the policy's weights (and the observation
        normalizer's statistics when the run normalizes), for :func:`tdrl.load_policy`."""
        obs_rms = getattr(self.train_envs, "obs_rms", None) or getattr(
            self.test_envs, "obs_rms", None
        )
        return save_policy(
            self.algorithm.policy,
            self.run_dir / POLICY_FILE,
            self.cfg.algo,
            self.preset.task,
            obs_rms=obs_rms,
        )

    def _compile_warmup(self) -> None:
        """``--compile``: compile the update now, on a batch of the buffer (or of random
        transitions from the spaces before the first collect), with every parameter,
        optimizer state, counter and RNG restored afterwards, so the first epoch's time
        is training and the run continues exactly as it would have."""
        from tdrl.algorithm.compile import synthetic_buffer, warmup

        p = self.preset
        data = self.dataset if self.offline else self.buffer
        if data is None or len(data) == 0:
            env = self.test_envs
            data = synthetic_buffer(
                env.observation_space[0],
                env.action_space[0],
                max(1, int(getattr(p, "training_num", 1))),
                max(int(getattr(p, "batch_size", None) or 1), 64),
            )
        seconds = warmup(self.algorithm, data, getattr(p, "batch_size", None))
        print(f"compiled the update in {seconds:.1f} s", flush=True)

    def run(self) -> TrainResult:
        """Train, close the envs, save ``policy.pt``, draw ``curve.png`` and print the
        summary line: ``ALGO on TASK: best test return X ± Y (epoch E), N env steps, T s;
        logs in DIR`` (offline: ``N gradient steps``).

        SIGINT/SIGTERM end training at the next step: ``checkpoint.pt`` and ``policy.pt``
        are saved and :class:`~tdrl.trainer.TrainingInterrupted` is raised.
        """
        cfg = self.cfg
        if cfg.compile is not None:
            self._compile_warmup()
        start = time.perf_counter()
        try:
            with _interrupt_handlers(self.trainer):
                result: TrainResult = self.trainer.run()
        except TrainingInterrupted:
            self.save_policy()
            raise
        finally:
            self.close()
        self.save_policy()
        seconds = time.perf_counter() - start
        summary = summary_line(
            cfg.algo, self.preset.task, result, seconds, self.run_dir, offline=self.offline
        )
        if cfg.plot:
            from tdrl.utils.plot import plot_runs

            try:
                out = plot_runs([self.run_dir], key=CURVE_KEY, out=self.run_dir / "curve.png")
                print(f"learning curve: {out}", flush=True)
            except (FileNotFoundError, KeyError, ValueError) as exc:  # e.g. nothing tested
                print(f"no learning curve: {exc}", flush=True)
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
    from tdrl.data.datasets import load_dataset

    return load_dataset(cfg.dataset)


def run_options(cfg: ExperimentConfig) -> dict[str, Any]:
    """The run options ``config.yaml`` records beside the preset (what ``tdrl train
    --config`` reads back)."""
    return {
        "algo": cfg.algo,
        "task": cfg.task,
        "seed": cfg.seed,
        "device": cfg.device,
        "logger": cfg.logger,
        "logdir": cfg.log_dir,
        "checkpoint": cfg.checkpoint,
        "dataset": cfg.dataset,
        "icm": cfg.icm,
        "ray_collectors": cfg.ray_collectors,
        "compile": cfg.compile,
        "buffer_device": cfg.buffer_device,
    }


def _start_run_dir(cfg: ExperimentConfig, run_dir: Path, resume_state: Any) -> bool:
    """Create (or, resuming, prepare) the run directory; return whether it is new."""
    if resume_state is not None:
        t = resume_state["trainer"]
        truncate_csv_logs(run_dir, int(t["epoch"]), int(t["env_step"]), int(t["gradient_step"]))
        return False
    if cfg.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=cfg.run_dir is not None)
    return True


def build_experiment(cfg: ExperimentConfig) -> Experiment:
    """Assemble envs, algorithm, collectors, buffer, logger and trainer for ``cfg``.

    A task without a preset for the algorithm, a bad override, an unknown env id, an action
    space the algorithm cannot handle, a missing or corrupt checkpoint to resume: each
    raises (:class:`~tdrl.registry.PresetError`, :class:`~tdrl.errors.UsageError`,
    gymnasium's error) before anything is written. The run directory is then created
    (:func:`resolve_run_dir`) with its ``config.yaml``, and the random warm-up (off-policy
    presets) is collected.
    """
    check_run_options(seed=cfg.seed, logger=cfg.logger)
    check_device("--device", cfg.device)
    check_device("--buffer-device", cfg.buffer_device)
    preset: Any = _preset(cfg)  # fields of the algorithm's preset class
    spec = registry.entry(cfg.algo, preset.task)
    registry.check_dataset(cfg.algo, spec, cfg.dataset is not None)
    run_dir = resolve_run_dir(cfg)
    resume_state = read_checkpoint(run_dir / "checkpoint.pt") if cfg.resume else None
    seed_everything(cfg.seed)
    if "OMP_NUM_THREADS" not in os.environ:
        # small RL networks: one intra-op thread is faster, and far faster on a busy CPU
        torch.set_num_threads(1)
    dataset = _load_dataset(cfg, spec)
    train_envs, test_envs = _make_envs(cfg, preset, spec)
    created = False
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
        if isinstance(train_envs, NormObsDummyVectorEnv):
            # checkpointed (and restored in place) with the algorithm's state_dict
            algorithm.add_module("obs_rms", train_envs.obs_rms)
        if cfg.compile is not None:
            algorithm.compile(mode=None if cfg.compile == "default" else cfg.compile)
        if resume_state is not None:  # a checkpoint of another network: say so now
            from tdrl.trainer.checkpoint import load_checkpoint_weights

            load_checkpoint_weights(algorithm, resume_state, run_dir / "checkpoint.pt")
        explicit_warmup = "warmup_steps" in cfg.overrides
        warmup = warmup_steps(preset, explicit=explicit_warmup) if spec.trainer != "offline" else 0
        if hasattr(preset, "warmup_steps"):  # config.yaml records the warm-up it does
            preset = preset.replace(warmup_steps=warmup)
        created = _start_run_dir(cfg, run_dir, resume_state)
        write_run_config(run_dir, run_options(cfg), preset)
        experiment = _assemble(
            cfg,
            preset,
            spec,
            algorithm,
            train_envs,
            test_envs,
            dataset,
            run_dir,
            warmup,
            resume_state,
        )
    except BaseException:
        if train_envs is not None:
            train_envs.close()
        test_envs.close()
        if created:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return experiment


def _assemble(
    cfg: ExperimentConfig,
    preset: Any,
    spec: registry.Entry,
    algorithm: Any,
    train_envs: Any,
    test_envs: Any,
    dataset: Any,
    run_dir: Path,
    warmup: int,
    resume_state: Any,
) -> Experiment:
    """Collectors, buffer, logger and trainer of :func:`build_experiment`."""
    noisy = spec.exploration_noise  # e.g. DQN: epsilon-greedy in training, eps_test in tests
    train: Collector | None = None
    buffer: Any = None
    if spec.trainer != "offline":
        if cfg.ray_collectors is not None:
            train, buffer = _ray_collector(cfg, preset, spec, algorithm.policy, noisy)
        else:
            buffer = make_buffer(preset, cfg.buffer_device)
            train = Collector(algorithm.policy, train_envs, buffer, exploration_noise=noisy)
    # the test collector only counts returns: a buffer of 2 steps per env is enough (its
    # default of 10k steps per env made checkpoints 80 MB)
    test_buffer = VectorReplayBuffer(2 * preset.test_num, preset.test_num)
    test = Collector(algorithm.policy, test_envs, test_buffer, exploration_noise=noisy)
    if train is not None:
        train.reset(seed=cfg.seed)
    test.reset(seed=cfg.seed + 100_000)
    checkpoint = run_dir / "checkpoint.pt"
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
    if train is None:
        kwargs = preset.trainer_kwargs()
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
            **preset.trainer_kwargs(),
        )
    trainer.resume_state = resume_state
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
        resume=bool(args.resume),
        show_progress=not args.no_progress,
        plot=not args.no_plot,
        overrides=parse_overrides(getattr(args, "set", None)),
        dataset=getattr(args, "dataset", None),
        icm=bool(getattr(args, "icm", False)),
        overwrite=bool(getattr(args, "overwrite", False)),
        run_dir=args.resume if isinstance(args.resume, str) else None,
        ray_collectors=getattr(args, "ray_collectors", None),
        compile=getattr(args, "compile", None),
        buffer_device=getattr(args, "buffer_device", "cpu"),
    )


def recipe_main(algo: str, argv: list[str] | None = None) -> TrainResult:
    """Entry point of the ``recipes/`` scripts: parse flags, run, return the result."""
    parser = argparse.ArgumentParser(description=f"Train {algo.upper()} with tdrl")
    add_train_arguments(parser)
    args = parser.parse_args(argv)
    result, _ = run_experiment(config_from_args(algo, None, args))
    return result
