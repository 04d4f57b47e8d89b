"""``make_vector_env``: one entry point from any env source to the tdrl vector-env contract."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import gymnasium as gym

from tdrl.env.base import BaseVectorEnv
from tdrl.env.dummy import DummyVectorEnv
from tdrl.env.gym_vector import GymVectorEnvAdapter
from tdrl.env.subproc import ShmemVectorEnv, SubprocVectorEnv

__all__ = ["make_vector_env"]

Kind = Literal["dummy", "subproc", "shmem"]


def _top_module(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _is_envpool(obj: Any) -> bool:
    # EnvPool >= 1.x builds its env classes in module "abc" on top of envpool mixins and,
    # for env_type="gymnasium", gymnasium's VectorEnv (with NEXT_STEP autoreset)
    return any(c.__module__.split(".")[0] == "envpool" for c in type(obj).__mro__)


def make_vector_env(
    source: Any,
    num_envs: int | None = None,
    kind: Kind = "dummy",
    wait_num: int | None = None,
    timeout: float | None = None,
    context: str | None = None,
) -> BaseVectorEnv:
    """Turn an env source into a vector env that follows the tdrl contract.

    :param source: one of

        * a sequence of env factories (``[lambda: gym.make(...), ...]``): a vector env of
          ``kind``;
        * one factory or a gymnasium env id, with ``num_envs``: ``num_envs`` copies;
        * a ready ``gymnasium.Env``: a one-env :class:`DummyVectorEnv`;
        * a gymnasium ``VectorEnv``: a plain ``SyncVectorEnv`` is unwrapped into a
          :class:`DummyVectorEnv` over its envs (full contract, subset stepping included);
          anything else (``AsyncVectorEnv``, vector wrappers) is driven by
          :class:`GymVectorEnvAdapter` (autoreset SAME_STEP or DISABLED, all envs per step);
        * a TorchRL ``EnvBase`` (``GymEnv``, ``SerialEnv``, ``ParallelEnv``, transformed):
          :class:`~tdrl.env.torchrl_env.TorchRLVectorEnv`;
        * an EnvPool env (gymnasium API): :class:`~tdrl.env.envpool_env.EnvPoolVectorEnv`;
        * a tdrl vector env: returned as is.
    :param num_envs: number of copies for a single factory or env id.
    :param kind: for factories: ``"dummy"`` (in process), ``"subproc"`` or ``"shmem"``.
    :param wait_num: async mode of the tdrl vector envs built from factories.
    :param timeout: async mode of the tdrl vector envs built from factories.
    :param context: multiprocessing start method for ``"subproc"``/``"shmem"``.

    >>> venv = make_vector_env("CartPole-v1", num_envs=2)
    >>> type(venv).__name__, len(venv)
    ('DummyVectorEnv', 2)
    >>> venv.close()
    """
    if isinstance(source, BaseVectorEnv):
        return source
    if isinstance(source, str):
        env_id = source
        source = lambda: gym.make(env_id)  # noqa: E731
    if _is_envpool(source):
        from tdrl.env.envpool_env import EnvPoolVectorEnv

        return EnvPoolVectorEnv(source)
    if isinstance(source, gym.vector.VectorEnv):
        if type(source) is gym.vector.SyncVectorEnv:
            return DummyVectorEnv.from_envs(list(source.envs), wait_num, timeout)
        return GymVectorEnvAdapter(source)
    if isinstance(source, gym.Env):
        return DummyVectorEnv.from_envs([source], wait_num, timeout)
    top = _top_module(source)
    if top == "torchrl" or (hasattr(source, "batch_size") and hasattr(source, "rollout")):
        from tdrl.env.torchrl_env import TorchRLVectorEnv

        return TorchRLVectorEnv(source)
    if callable(source):
        if num_envs is None:
            raise ValueError("make_vector_env: a single factory needs num_envs (got None)")
        source = [source] * num_envs
    if isinstance(source, Sequence) and source and all(callable(f) for f in source):
        return _from_factories(list(source), kind, wait_num, timeout, context)
    raise TypeError(
        "make_vector_env: expected env factories, a gymnasium env id/Env/VectorEnv, a TorchRL "
        f"EnvBase, an EnvPool env or a tdrl vector env, got {type(source).__name__}"
    )


def _from_factories(
    fns: list[Callable[[], gym.Env]],
    kind: Kind,
    wait_num: int | None,
    timeout: float | None,
    context: str | None,
) -> BaseVectorEnv:
    if kind == "dummy":
        return DummyVectorEnv(fns, wait_num, timeout)
    if kind == "subproc":
        return SubprocVectorEnv(fns, wait_num, timeout, context=context)
    if kind == "shmem":
        return ShmemVectorEnv(fns, wait_num, timeout, context=context)
    raise ValueError(f"make_vector_env: kind must be 'dummy', 'subproc' or 'shmem', got {kind!r}")
