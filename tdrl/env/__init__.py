"""tdrl.env: vector envs that follow the contract in ``docs/internals.md``.

Contract (every class here): ``reset(env_id=None, seed=None, options=None) -> (obs, info)``
and ``step(action, env_id=None) -> (obs, rew, terminated, truncated, info)`` over any subset of
envs; ``obs`` stacked (a dict of stacked arrays for Dict spaces), ``rew`` float64, flags bool,
``info`` an object array of dicts each holding ``env_id``; no autoreset (the observation at a
done step is the true final one, and the caller resets finished envs with
``reset(env_id=...)``); ``seed(s)`` seeds env ``i`` (and its action space) with ``s + i``.

Which one:

* :class:`DummyVectorEnv`: every env in this process. The fastest for cheap envs (CartPole,
  toy envs), where a process round trip costs more than a step.
* :class:`ShmemVectorEnv`: one process per env; actions, observations, rewards and flags in
  shared memory, only a command byte and the info dict cross the pipe; finished envs are reset
  by their worker right away (``eager_reset``) so ``reset(env_id)`` costs no round trip. For
  expensive envs (MuJoCo, Atari). ``context="fork"`` (the default where available) starts in
  milliseconds; ``"spawn"`` re-imports in every worker and needs a ``__main__`` guard.
* :class:`SubprocVectorEnv`: the same over pipes only (``share_memory=True`` makes it a
  ``ShmemVectorEnv``).
* :class:`VectorEnvWrapper`: wraps a vector env and forwards every call to it (subclass it
  to change what comes back); :class:`NormObsVectorEnv` normalizes observations that way.
* :func:`make_vector_env`: factories, a gymnasium env id, env or ``VectorEnv``
  (:class:`GymVectorEnvAdapter`), a TorchRL ``EnvBase`` (:class:`TorchRLVectorEnv`, imported
  lazily) or an EnvPool env (:class:`EnvPoolVectorEnv`) to the contract.

Async mode (``wait_num < env_num`` or a ``timeout``): ``step`` returns the envs that are ready,
``step(None)`` fetches pending results, ``ready_id``/``waiting_id`` list them.

Test envs with exact, predictable episodes live in :mod:`tdrl.env.testing`.

>>> venv = make_vector_env("CartPole-v1", num_envs=3)
>>> obs, info = venv.reset(seed=0)
>>> obs, rew, terminated, truncated, info = venv.step([0, 1], env_id=[2, 0])
>>> obs.shape, [d["env_id"] for d in info]
((2, 4), [2, 0])
>>> venv.close()
"""

from tdrl.env.base import BaseVectorEnv
from tdrl.env.dummy import DummyVectorEnv
from tdrl.env.envpool_env import EnvPoolVectorEnv
from tdrl.env.factory import make_vector_env
from tdrl.env.gym_vector import GymVectorEnvAdapter
from tdrl.env.nchain import NChainEnv  # importing it registers tdrl/NChain-v0 with gymnasium
from tdrl.env.subproc import ShmemVectorEnv, SubprocVectorEnv
from tdrl.env.venv_wrapper import VectorEnvWrapper


def __getattr__(name: str) -> object:
    """Import :class:`~tdrl.env.torchrl_env.TorchRLVectorEnv` lazily: importing torchrl is slow
    and switches the global multiprocessing start method to spawn."""
    if name == "TorchRLVectorEnv":
        from tdrl.env.torchrl_env import TorchRLVectorEnv

        return TorchRLVectorEnv
    if name in ("NormObsDummyVectorEnv", "NormObsVectorEnv"):  # imports torch (statistics)
        from tdrl.env import normobs

        return getattr(normobs, name)
    if name == "RayVectorEnv":
        from tdrl.env.ray_env import RayVectorEnv

        return RayVectorEnv
    if name in ("PettingZooEnv", "PettingZooParallelEnv"):
        from tdrl.env import pettingzoo

        return getattr(pettingzoo, name)
    raise AttributeError(f"module 'tdrl.env' has no attribute {name!r}")


__all__ = [
    "BaseVectorEnv",
    "DummyVectorEnv",
    "EnvPoolVectorEnv",
    "GymVectorEnvAdapter",
    "NChainEnv",
    "NormObsDummyVectorEnv",
    "NormObsVectorEnv",
    "PettingZooEnv",
    "PettingZooParallelEnv",
    "RayVectorEnv",
    "ShmemVectorEnv",
    "SubprocVectorEnv",
    "TorchRLVectorEnv",
    "VectorEnvWrapper",
    "make_vector_env",
]
