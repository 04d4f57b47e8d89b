"""tdrl: Tianshou's building blocks rebuilt on TorchRL and TensorDict.

Every name below is imported on first access (module ``__getattr__``), so ``import tdrl``,
``tdrl.presets`` and the command line's ``--help`` and argument errors do not load torch.

>>> import tdrl
>>> alg = tdrl.make_algorithm("ppo", "CartPole-v1")
>>> type(alg).__name__
'PPO'
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from tdrl import gym_ids as _gym_ids

__version__ = "0.1.0"

# the user's torch thread count when tdrl was imported, if torch was loaded by then: a
# later difference means the user chose it (tdrl.utils.threads); tdrl itself loads no torch
_TORCH_THREADS_AT_IMPORT = (
    sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
)

_EXPORTS = {
    # presets and experiments
    "make_algorithm": "tdrl.presets",
    "preset": "tdrl.presets",
    "task_family": "tdrl.presets",
    "PresetError": "tdrl.errors",
    "ExperimentConfig": "tdrl.experiment",
    "run_experiment": "tdrl.experiment",
    "load_policy": "tdrl.experiment",
    # data
    "Batch": "tdrl.data",
    "ReplayBuffer": "tdrl.data",
    "VectorReplayBuffer": "tdrl.data",
    "PrioritizedReplayBuffer": "tdrl.data",
    "PrioritizedVectorReplayBuffer": "tdrl.data",
    "Collector": "tdrl.data",
    "AsyncCollector": "tdrl.data",
    # envs
    "DummyVectorEnv": "tdrl.env",
    "ShmemVectorEnv": "tdrl.env",
    "SubprocVectorEnv": "tdrl.env",
    # algorithms
    "Algorithm": "tdrl.algorithm",
    "Policy": "tdrl.algorithm",
    "DQN": "tdrl.algorithm",
    "PPO": "tdrl.algorithm",
    "SAC": "tdrl.algorithm",
    # trainers
    "OffPolicyTrainer": "tdrl.trainer",
    "OnPolicyTrainer": "tdrl.trainer",
    "OfflineTrainer": "tdrl.trainer",
}
_SUBMODULES = (
    "algorithm",
    "checkpoint",
    "cli",
    "data",
    "env",
    "errors",
    "experiment",
    "launch",
    "presets",
    "registry",
    "trainer",
    "utils",
)

__all__ = [
    "DQN",
    "PPO",
    "SAC",
    "Algorithm",
    "AsyncCollector",
    "Batch",
    "Collector",
    "DummyVectorEnv",
    "ExperimentConfig",
    "OffPolicyTrainer",
    "OfflineTrainer",
    "OnPolicyTrainer",
    "Policy",
    "PresetError",
    "PrioritizedReplayBuffer",
    "PrioritizedVectorReplayBuffer",
    "ReplayBuffer",
    "ShmemVectorEnv",
    "SubprocVectorEnv",
    "VectorReplayBuffer",
    "load_policy",
    "make_algorithm",
    "preset",
    "run_experiment",
    "task_family",
]

if TYPE_CHECKING:
    from tdrl.algorithm import DQN, PPO, SAC, Algorithm, Policy
    from tdrl.data import (
        AsyncCollector,
        Batch,
        Collector,
        PrioritizedReplayBuffer,
        PrioritizedVectorReplayBuffer,
        ReplayBuffer,
        VectorReplayBuffer,
    )
    from tdrl.env import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv
    from tdrl.errors import PresetError
    from tdrl.experiment import ExperimentConfig, load_policy, run_experiment
    from tdrl.presets import make_algorithm, preset, task_family
    from tdrl.trainer import OfflineTrainer, OffPolicyTrainer, OnPolicyTrainer


_gym_ids.install()  # gymnasium.make("tdrl/NChain-v0") works after import tdrl


def __getattr__(name: str) -> Any:
    """Import an exported name (or a subpackage) on first access."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"tdrl.{name}")
    raise AttributeError(f"module 'tdrl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})
