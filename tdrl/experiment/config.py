"""The run configuration: one typed object, each field defined here once.

A run is an algorithm's registry preset (:mod:`tdrl.presets`: every hyperparameter, the
budget, the envs, the batch size) plus the run options of :class:`ExperimentConfig` (seed,
device, logger, directories, checkpointing). A preset field has exactly one home, the preset
class; a run option has exactly one home, its :class:`ExperimentConfig` field, from which
:data:`RUN_OPTIONS` (the run options a config file may set, with their defaults) is derived.
:meth:`ExperimentConfig.preset` resolves the preset once, checked, and from there the
typed preset travels: ``tdrl train --batch-size 256`` is ``overrides["batch_size"]``, then
``preset.batch_size``, then the trainer's ``batch_size``, then ``buffer.sample(256)``.

Plain data: importing this module loads no torch, so the command line's ``--help`` and
argument errors stay fast.

>>> cfg = ExperimentConfig("dqn", "CartPole-v1", epochs=2, overrides={"lr": 3e-4})
>>> cfg.overrides
{'lr': 0.0003, 'max_epochs': 2}
>>> p = cfg.preset()
>>> p.max_epochs, p.lr, p.batch_size, cfg.epochs
(2, 0.0003, 64, 2)
>>> run_options(cfg)["logdir"], RUN_OPTIONS["seed"]
('runs', 0)
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from tdrl.errors import UsageError
from tdrl.presets import registry

__all__ = [
    "COMPILE_MODES",
    "LOGGERS",
    "MAX_SEED",
    "PRESET_ALIASES",
    "RUN_OPTIONS",
    "SHORTHANDS",
    "ExperimentConfig",
    "check_run_options",
    "parse_overrides",
    "run_options",
    "summary_line",
]

LOGGERS = ("csv", "console", "tensorboard", "wandb", "none")
"""Log backends (``none``: only the CSV files every run writes)."""
MAX_SEED = 2**32 - 1
"""Seeds are what NumPy's ``default_rng`` and gymnasium's ``reset(seed=)`` accept."""
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""``--compile`` modes (``torch.compile``'s; ``default`` is its ``mode=None``)."""

PRESET_ALIASES: dict[str, str] = {
    "epochs": "max_epochs",
    "epoch_num_steps": "step_per_epoch",
    "num_training_envs": "training_num",
    "num_test_envs": "test_num",
    "stop_reward": "threshold",
}
"""Other names of preset fields (Tianshou 2.0's and the old run-option names), accepted by
:class:`ExperimentConfig`'s keywords, config files and the command line."""

SHORTHANDS = ("epochs", "step_per_epoch", "training_num", "test_num", "stop_reward")
"""The preset fields (or their aliases) :class:`ExperimentConfig` takes as keywords too."""

_FILE_KEYS: dict[str, str] = {"log_dir": "logdir"}
"""Run options whose config-file key differs from the field name."""
_FILE_OPTIONS = (
    "seed",
    "device",
    "logger",
    "log_dir",
    "checkpoint",
    "dataset",
    "icm",
    "ray_collectors",
    "compile",
    "buffer_device",
)
"""The :class:`ExperimentConfig` fields a config file (and ``config.yaml``) records."""


@dataclass
class ExperimentConfig:
    """What to train and how: an algorithm, a task, preset overrides and the run options.

    ``overrides`` sets any field of the algorithm's preset (``{"batch_size": 256}``); the
    keywords ``epochs``, ``step_per_epoch``, ``training_num``, ``test_num`` and
    ``stop_reward`` are shorthands that go into ``overrides`` (as ``max_epochs``, ...,
    ``threshold``) and win over the same field there. ``dataset`` (an HDF5 file or
    ``minari:NAME``) is what offline and imitation algorithms learn from; ``icm`` wraps the
    algorithm in the intrinsic curiosity module (:func:`tdrl.presets.icm.apply_icm`).
    ``resume`` continues the latest run directory of this algorithm, task and seed (or
    ``run_dir``) from its checkpoint; ``overwrite`` replaces the latest one instead of
    starting ``-2``, ``-3``, ... ``ray_collectors`` (off-policy) collects with that many Ray
    worker actors (``docs/scaling.md``). ``compile`` (``"default"``, ``"reduce-overhead"``,
    ...) runs the update through ``torch.compile``, compiled before the first epoch.
    ``device`` holds the networks (``"cuda"``: sampled batches go there through pinned
    memory, without blocking); ``buffer_device`` the replay buffer's columns.

    >>> ExperimentConfig("ppo", "CartPole-v1").run_name()
    'ppo-CartPole-v1-seed0'
    """

    algo: str
    task: str
    seed: int = 0
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
    epochs: InitVar[int | None] = None
    step_per_epoch: InitVar[int | None] = None
    training_num: InitVar[int | None] = None
    test_num: InitVar[int | None] = None
    stop_reward: InitVar[float | None] = None

    def __post_init__(
        self,
        epochs: int | None,
        step_per_epoch: int | None,
        training_num: int | None,
        test_num: int | None,
        stop_reward: float | None,
    ) -> None:
        given = {
            "epochs": epochs,
            "step_per_epoch": step_per_epoch,
            "training_num": training_num,
            "test_num": test_num,
            "stop_reward": stop_reward,
        }
        self.overrides = dict(self.overrides)
        for name, value in given.items():
            if value is not None:
                self.overrides[PRESET_ALIASES.get(name, name)] = value

    def run_name(self) -> str:
        """The run directory's name, ``ALGO-TASK-seedS`` (a repeated run gets ``-2``,
        ``-3``, ...: :func:`tdrl.experiment.rundir.resolve_run_dir`)."""
        return registry.run_name(self.algo, self.task, self.seed)

    def preset(self) -> registry.Preset:
        """The registry's preset for :attr:`algo` on :attr:`task` with :attr:`overrides`,
        every field checked (:class:`~tdrl.errors.PresetError` naming a bad one)."""
        return registry.preset(self.algo, self.task, **self.overrides)


def _shorthand(name: str) -> property:
    key = PRESET_ALIASES.get(name, name)
    return property(
        lambda self: self.overrides.get(key),
        doc=f"``overrides[{key!r}]`` (``None`` if not overridden): a shorthand keyword.",
    )


for _name in SHORTHANDS:
    setattr(ExperimentConfig, _name, _shorthand(_name))  # the value lives in ``overrides``


def _option_defaults() -> dict[str, Any]:
    defaults = {f.name: f.default for f in dataclasses.fields(ExperimentConfig)}
    return {_FILE_KEYS.get(name, name): defaults[name] for name in _FILE_OPTIONS}


RUN_OPTIONS: dict[str, Any] = _option_defaults()
"""Run options (not preset fields) a config file may set, by config-file key, with their
defaults (those of :class:`ExperimentConfig`)."""


def run_options(cfg: ExperimentConfig) -> dict[str, Any]:
    """``algo``, ``task`` and the run options of ``cfg``, by config-file key: what
    ``config.yaml`` records beside the preset (and ``tdrl train --config`` reads back)."""
    out: dict[str, Any] = {"algo": cfg.algo, "task": cfg.task}
    out.update({_FILE_KEYS.get(n, n): getattr(cfg, n) for n in _FILE_OPTIONS})
    return out


def check_run_options(seed: Any = None, logger: Any = None) -> None:
    """Raise :class:`~tdrl.errors.UsageError` naming the flag for a seed outside
    ``[0, 2**32 - 1]`` or an unknown logger.

    >>> check_run_options(seed=-1)
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: argument --seed: expected an int in [0, 4294967295], got -1
    """
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED
    ):
        raise UsageError(f"argument --seed: expected an int in [0, {MAX_SEED}], got {seed!r}")
    if logger is not None and logger not in LOGGERS:
        raise UsageError(f"argument --logger: expected one of {', '.join(LOGGERS)}, got {logger!r}")


def parse_overrides(items: list[str] | None, flag: str = "override") -> dict[str, Any]:
    """``["FIELD=VALUE", ...]`` as preset overrides; a value is read as a Python literal
    (number, bool, ``None``, tuple ...), else kept as a string. The preset checks them.

    >>> parse_overrides(["warmup_steps=500", "hidden_sizes=(64, 64)", "lr_decay=False",
    ...                  "exploration_noise=ou"])
    {'warmup_steps': 500, 'hidden_sizes': (64, 64), 'lr_decay': False, 'exploration_noise': 'ou'}
    >>> parse_overrides(["lr"], flag="argument --set")
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: argument --set: expected FIELD=VALUE, got 'lr'
    """
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{flag}: expected FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = value
    return out


def summary_line(
    algo: str, task: str, result: Any, seconds: float, run_dir: str | Path, offline: bool = False
) -> str:
    """The last line ``tdrl train`` and every recipe print: ``ALGO on TASK: best test return
    X ± Y (epoch E; the saved policy is epoch L's), N env steps, T s; logs in DIR``
    (``offline``: ``N gradient steps``), for a trainer's result. The best return is the
    best test after training began (``best_trained_reward``; an untrained policy's score
    is not credited), and the saved policy (``policy.pt``, :func:`load_policy`) is the one
    after the last epoch.

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(best_trained_reward=200.0, best_trained_reward_std=0.0,
    ...                     best_trained_epoch=3, epoch=4, env_step=9190, gradient_step=900)
    >>> print(summary_line("dqn", "CartPole-v1", r, 2.34, "d"))
    dqn on CartPole-v1: best test return 200.0 ± 0.0 (epoch 3; the saved policy is epoch 4's), 9190 env steps, 2.3 s; logs in d
    """  # noqa: E501
    steps = f"{result.gradient_step} gradient steps" if offline else f"{result.env_step} env steps"
    if result.best_trained_reward == float("-inf"):
        best = "no test after training began"
    else:
        best = (
            f"best test return {result.best_trained_reward:.1f} ± "
            f"{result.best_trained_reward_std:.1f} (epoch {result.best_trained_epoch}; "
            f"the saved policy is epoch {result.epoch}'s)"
        )
    return f"{algo} on {task}: {best}, {steps}, {seconds:.1f} s; logs in {run_dir}"
