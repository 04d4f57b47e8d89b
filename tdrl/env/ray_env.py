"""``RayVectorEnv``: every env in its own Ray actor, on this machine or on a Ray cluster.

The same contract as the other tdrl vector envs (:mod:`tdrl.env.base`): any subset of envs
is stepped, no autoreset, ``info[i]["env_id"]``, async mode with ``wait_num``/``timeout``.
Each env is *built inside its actor* (the factory travels with cloudpickle, so lambdas and
closures work and the env itself need not be picklable). A step is one actor call per env,
launched for all selected envs before any result is awaited, so the envs step in parallel on
as many CPUs (or machines) as the cluster has.

Where the actors run: ``ray.init()`` is called when Ray is not initialized yet, which joins
the cluster named by the ``RAY_ADDRESS`` environment variable, or starts a local Ray instance
without one (pass ``ray_init_kwargs`` to choose, e.g. ``{"num_cpus": 2}``). Every actor
asks for ``num_cpus`` CPUs (default 0, as Tianshou: envs are placed regardless of the CPU
count; give 1 to spread them over a cluster's CPUs).

An env that raises surfaces as a ``RuntimeError`` carrying the remote traceback; an actor
that dies surfaces as a ``RuntimeError`` saying so. ``close()`` closes the envs and kills
the actors.

Cost: one actor call is ~0.7 ms of round trip on a local instance (against ~50 µs for a
shared-memory subprocess step), so Ray pays off for slow envs or for more envs than one
machine holds; on one machine :class:`~tdrl.env.ShmemVectorEnv` is faster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from tdrl.env.base import BaseVectorEnv, stack_obs
from tdrl.env.worker import EnvFactory

__all__ = ["RayEnvActor", "RayVectorEnv", "init_ray"]


def init_ray(**kwargs: Any) -> Any:
    """Import ``ray`` and initialize it when needed (``RAY_ADDRESS`` or a local instance).

    ``kwargs`` go to ``ray.init`` (only when Ray is not initialized yet). Returns the module.
    """
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is a dependency of this module
        raise ImportError(
            "RayVectorEnv and RayCollector need the ray package: pip install 'ray[default]'"
        ) from exc
    if not ray.is_initialized():
        kwargs.setdefault("include_dashboard", False)
        kwargs.setdefault("log_to_driver", False)
        ray.init(**kwargs)
    return ray


class RayEnvActor:
    """The body of one env actor: builds the env from its factory and serves calls.

    Used through ``ray.remote``; it is a plain class so that it can be tested without Ray.

    >>> from tdrl.env.testing import MoveToRightEnv
    >>> actor = RayEnvActor(EnvFactory(lambda: MoveToRightEnv(2)))
    >>> actor.reset(None, None)[0], actor.step(1)[:3]
    (0, (1, 0.0, False))
    """

    def __init__(self, factory: EnvFactory) -> None:
        self.env: gym.Env = factory.fn()

    def spaces(self) -> tuple[gym.Space, gym.Space]:
        """``(observation_space, action_space)`` of the env."""
        return self.env.observation_space, self.env.action_space

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict]:
        """Reset the env (seeding its action space too when ``seed`` is given)."""
        if seed is not None:
            self.env.action_space.seed(seed)
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the env."""
        return self.env.step(action)

    def seed(self, seed: int | None) -> list[int | None]:
        """Seed the action space and reset the env with ``seed``."""
        self.env.action_space.seed(seed)
        self.env.reset(seed=seed)
        return [seed]

    def get_attr(self, key: str) -> Any:
        """``key`` of the env or of any env it wraps."""
        return self.env.get_wrapper_attr(key)

    def set_attr(self, key: str, value: Any) -> None:
        """Set ``key`` on the unwrapped env."""
        setattr(self.env.unwrapped, key, value)

    def render(self, kwargs: dict[str, Any]) -> Any:
        """Render the env."""
        return self.env.render(**kwargs)

    def close(self) -> None:
        """Close the env."""
        self.env.close()


def _actor_class(ray: Any, num_cpus: float) -> Any:
    return ray.remote(num_cpus=num_cpus)(RayEnvActor)


class RayVectorEnv(BaseVectorEnv):
    """Vector env with one Ray actor per env (Tianshou's ``RayVectorEnv``).

    :param env_fns: one factory per env, called inside its actor.
    :param wait_num: async mode: ``step`` returns once this many envs are ready.
    :param timeout: async mode: ``step`` returns after this many seconds (with at least one
        ready env).
    :param num_cpus: CPUs each actor reserves (0: placed regardless of free CPUs).
    :param ray_init_kwargs: passed to ``ray.init`` when Ray is not initialized yet.

    >>> import ray
    >>> from tdrl.env.testing import MoveToRightEnv
    >>> _ = ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)  # doctest: +SKIP
    >>> venv = RayVectorEnv([lambda: MoveToRightEnv(3)] * 2)  # doctest: +SKIP
    >>> venv.reset()[0].tolist()  # doctest: +SKIP
    [0, 0]
    >>> obs, rew, term, trunc, info = venv.step([1, 0])  # doctest: +SKIP
    >>> obs.tolist(), [d["env_id"] for d in info]  # doctest: +SKIP
    ([1, 0], [0, 1])
    >>> venv.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        wait_num: int | None = None,
        timeout: float | None = None,
        num_cpus: float = 0,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(len(env_fns), wait_num, timeout)
        if num_cpus < 0:
            raise ValueError(f"num_cpus: expected a number >= 0, got {num_cpus}")
        self._ray = ray = init_ray(**(ray_init_kwargs or {}))
        cls = _actor_class(ray, num_cpus)
        self.actors: list[Any] = [cls.remote(EnvFactory(fn)) for fn in env_fns]
        self._pending: dict[int, Any] = {}
        try:
            spaces_ = self._get([a.spaces.remote() for a in self.actors], range(self.env_num))
        except RuntimeError:
            self.close()
            raise
        self.observation_space = [s[0] for s in spaces_]
        self.action_space = [s[1] for s in spaces_]

    # ------------------------------------------------------------------ calls
    def _get(self, refs: list[Any], ids: Sequence[int] | np.ndarray) -> list[Any]:
        """``ray.get`` every ref; drain them all, then raise the first error as a
        ``RuntimeError`` naming the env."""
        ray = self._ray
        out: list[Any] = []
        error: RuntimeError | None = None
        for ref, i in zip(refs, list(ids)):
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayActorError as exc:
                out.append(None)
                error = error or RuntimeError(
                    f"{type(self).__name__}: the actor of env {int(i)} died: {exc}"
                )
            except ray.exceptions.RayTaskError as exc:
                out.append(None)
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                error = error or RuntimeError(
                    f"{type(self).__name__}: env {int(i)} raised in its actor: "
                    f"{type(cause).__name__}: {cause}\nactor traceback:\n{exc}"
                )
        if error is not None:
            raise error
        return out

    # --------------------------------------------------------------- contract
    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        id_list = ids.tolist()
        refs = [self.actors[i].reset.remote(s, options) for i, s in zip(id_list, seeds)]
        for i, s in zip(id_list, seeds):
            if s is not None:  # the local copy, used by callers to sample actions
                self.action_space[i].seed(s)
        replies = self._get(refs, id_list)
        obs, infos = zip(*replies)
        return stack_obs(obs), list(infos)

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        actors = self.actors
        for i, a in zip(ids.tolist(), action):
            self._pending[i] = actors[i].step.remote(a)

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        id_list = pending.tolist()
        if wait_num < len(id_list) or timeout is not None:
            ray = self._ray
            refs = [self._pending[i] for i in id_list]
            ready, _ = ray.wait(refs, num_returns=wait_num, timeout=timeout)
            if not ready:  # always return at least one env
                ready, _ = ray.wait(refs, num_returns=1)
            ready_set = set(ready)
            id_list = sorted(i for i, r in zip(id_list, refs) if r in ready_set)
        refs = [self._pending.pop(i) for i in id_list]
        replies = self._get(refs, id_list)
        obs, rew, term, trunc, infos = zip(*replies)
        return (
            np.asarray(id_list, dtype=np.int64),
            stack_obs(obs),
            np.array(rew, dtype=np.float64),
            np.array(term, dtype=bool),
            np.array(trunc, dtype=bool),
            [dict(info) for info in infos],
        )

    def _seed_envs(self, seeds: list) -> list[Any]:
        refs = [a.seed.remote(s) for a, s in zip(self.actors, seeds)]
        for space, s in zip(self.action_space, seeds):
            space.seed(s)
        return self._get(refs, range(self.env_num))

    def _get_attr(self, key: str, i: int) -> Any:
        return self._get([self.actors[i].get_attr.remote(key)], [i])[0]

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        self._get([self.actors[i].set_attr.remote(key, value)], [i])

    def render(self, **kwargs: Any) -> list[Any]:
        """Render every env (in its actor) and return the frames."""
        self._check_open()
        self._check_ready(self._all_ids)
        return self._get([a.render.remote(kwargs) for a in self.actors], range(self.env_num))

    def _close(self) -> None:
        ray = self._ray
        actors, self.actors = getattr(self, "actors", []), []
        self._pending = {}
        if not ray.is_initialized():
            return
        with contextlib.suppress(Exception):
            ray.get([a.close.remote() for a in actors], timeout=5)
        for a in actors:
            with contextlib.suppress(Exception):
                ray.kill(a)
