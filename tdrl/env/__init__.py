"""tdrl.env: vector envs that follow the contract in ``docs/internals.md``.

* :class:`DummyVectorEnv`: every env in this process (fastest for cheap envs).
* :class:`SubprocVectorEnv`: one process per env, results over pipes.
* :class:`ShmemVectorEnv`: one process per env, observations, rewards, flags and actions in
  shared memory; only commands and info dicts go over pipes.
* :func:`make_vector_env`: turns env factories, gymnasium vector envs, TorchRL envs or an
  EnvPool into the contract.
"""

from tdrl.env.base import BaseVectorEnv
from tdrl.env.dummy import DummyVectorEnv
from tdrl.env.envpool_env import EnvPoolVectorEnv
from tdrl.env.factory import make_vector_env
from tdrl.env.gym_vector import GymVectorEnvAdapter
from tdrl.env.subproc import ShmemVectorEnv, SubprocVectorEnv


def __getattr__(name: str) -> object:
    """Import :class:`~tdrl.env.torchrl_env.TorchRLVectorEnv` lazily: importing torchrl is slow
    and switches the global multiprocessing start method to spawn."""
    if name == "TorchRLVectorEnv":
        from tdrl.env.torchrl_env import TorchRLVectorEnv

        return TorchRLVectorEnv
    raise AttributeError(f"module 'tdrl.env' has no attribute {name!r}")


__all__ = [
    "BaseVectorEnv",
    "DummyVectorEnv",
    "EnvPoolVectorEnv",
    "GymVectorEnvAdapter",
    "ShmemVectorEnv",
    "SubprocVectorEnv",
    "TorchRLVectorEnv",
    "make_vector_env",
]
