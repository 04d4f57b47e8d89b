"""Drive a TorchRL ``EnvBase`` (``GymEnv``, ``SerialEnv``, ``ParallelEnv``, transformed envs)
under the tdrl vector-env contract.

A batched env (``batch_size=[N]``) is N envs; an unbatched one is one env. Subsets are stepped
with TorchRL's partial steps (``"_step"`` mask) and reset with partial resets (``"_reset"``).
Observations are every leaf of ``observation_spec`` (one leaf: an array; several: a dict keyed
by ``"/"``-joined key); ``info`` holds only ``env_id``.

Each step sends the env's current root TensorDict (what its last reset or step left: the
observation and every entry a transform keeps, such as ``StepCounter``'s ``step_count``)
with the action, as TorchRL's own rollouts do, so stateful transforms work; envs left out of
a partial step keep their root rows.

TorchRL seeds a batched env as a whole (``set_seed(seed)``), so ``seed(s)`` and
``reset(seed=s)`` call ``set_seed(s)`` and do not give env ``i`` exactly ``s + i``. Importing
this module imports torchrl, which switches the global multiprocessing start method to spawn.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict

from tdrl.env.base import BaseVectorEnv

__all__ = ["TorchRLVectorEnv", "spec_to_space"]


def spec_to_space(spec: Any) -> gym.Space:
    """Convert an (unbatched) TorchRL ``TensorSpec`` to a gymnasium space."""
    from torchrl.data import Binary, Bounded, Categorical, Composite, MultiCategorical, OneHot

    if isinstance(spec, Composite):
        return gym.spaces.Dict({k: spec_to_space(v) for k, v in spec.items()})
    dtype = torch.empty((), dtype=spec.dtype).numpy().dtype
    shape = tuple(spec.shape)
    if isinstance(spec, OneHot):
        return gym.spaces.Discrete(shape[-1])
    if isinstance(spec, MultiCategorical):
        return gym.spaces.MultiDiscrete(spec.nvec.cpu().numpy())
    if isinstance(spec, Binary):
        return gym.spaces.MultiBinary(shape)
    if isinstance(spec, Categorical):
        if dtype == np.bool_:
            return gym.spaces.MultiBinary(shape or 1)
        return (
            gym.spaces.Discrete(int(spec.space.n))
            if not shape
            else gym.spaces.MultiDiscrete(np.full(shape, int(spec.space.n)))
        )
    if isinstance(spec, Bounded):
        low, high = spec.space.low.cpu().numpy(), spec.space.high.cpu().numpy()
        return gym.spaces.Box(low.astype(dtype), high.astype(dtype), shape=shape, dtype=dtype)
    return gym.spaces.Box(-np.inf, np.inf, shape=shape, dtype=dtype)


def _name(key: str | tuple[str, ...]) -> str:
    return key if isinstance(key, str) else "/".join(key)


class TorchRLVectorEnv(BaseVectorEnv):
    """A TorchRL env as a tdrl vector env (see the module docstring).

    :param env: a TorchRL ``EnvBase`` with ``batch_size`` ``[]`` or ``[N]``.
    """

    def __init__(self, env: Any) -> None:
        batch = tuple(env.batch_size)
        if len(batch) > 1:
            raise ValueError(f"TorchRL env: expected batch_size [] or [N], got {list(batch)}")
        super().__init__(batch[0] if batch else 1)
        self.env, self._batch = env, batch
        self.obs_keys = list(env.observation_spec.keys(True, True))
        self.action_key, self.reward_key = env.action_key, env.reward_key
        self._one_hot = "OneHot" in type(env.action_spec).__name__
        unbatched = (lambda s: s[0]) if batch else (lambda s: s)
        act_space = spec_to_space(unbatched(env.action_spec))
        obs_space = spec_to_space(unbatched(env.observation_spec))
        if len(self.obs_keys) == 1:
            assert isinstance(obs_space, gym.spaces.Dict)
            obs_space = obs_space[self.obs_keys[0]]  # type: ignore[index]
        self.action_space = [act_space] + [
            spec_to_space(unbatched(env.action_spec)) for _ in range(self.env_num - 1)
        ]
        self.observation_space = [obs_space] * self.env_num
        self._pending: TensorDict | None = None
        self._root: TensorDict | None = None  # the env's current root (obs, transform state)

    def _mask(self, ids: np.ndarray, trailing: tuple[int, ...] = ()) -> torch.Tensor | None:
        if not self._batch or len(ids) == self.env_num:
            return None
        mask = torch.zeros(self.env_num, *trailing, dtype=torch.bool)
        mask[torch.from_numpy(ids)] = True
        return mask

    def _rows(self, td: TensorDict, key: Any, ids: np.ndarray) -> np.ndarray:
        value = td.get(key).cpu()
        if not self._batch:
            value = value.unsqueeze(0)
        return value.numpy()[ids]

    def _obs(self, td: TensorDict, ids: np.ndarray) -> Any:
        if len(self.obs_keys) == 1:
            return self._rows(td, self.obs_keys[0], ids)
        return {_name(k): self._rows(td, k, ids) for k in self.obs_keys}

    def _reset_envs(
        self, ids: np.ndarray, seeds: list, options: dict[str, Any] | None
    ) -> tuple[Any, list[dict]]:
        if any(s is not None for s in seeds):
            self.env.set_seed(next(s for s in seeds if s is not None))
        mask = self._mask(ids, (1,))
        td = TensorDict({}, batch_size=self._batch)
        if mask is not None:  # a partial reset: the other envs' state goes in and stays
            if self._root is not None:
                td = self._root.clone(recurse=False)
            td.set("_reset", mask)
        out = self.env.reset(td)
        self._root = out.exclude("_reset")
        return self._obs(out, ids), [{} for _ in range(len(ids))]

    def _send_actions(self, action: np.ndarray, ids: np.ndarray) -> None:
        act = torch.as_tensor(action)
        spec = self.env.action_spec
        if self._one_hot:
            act = torch.nn.functional.one_hot(act.long(), spec.shape[-1]).to(spec.dtype)
        full = torch.zeros(spec.shape, dtype=spec.dtype, device=spec.device)
        if self._batch:
            full[torch.from_numpy(ids)] = act.to(full)
        else:
            full.copy_(act.reshape(full.shape))
        root = self._root
        td = (
            root.clone(recurse=False)
            if root is not None
            else TensorDict({}, batch_size=self._batch)
        )
        td.set(self.action_key, full)
        mask = self._mask(ids)
        if mask is not None:
            td.set("_step", mask)
        out = self.env.step(td)
        self._pending = out.get("next")
        self._root = self._next_root(out, mask)

    def _next_root(self, out: TensorDict, mask: torch.Tensor | None) -> TensorDict:
        """The root TensorDict after a step (TorchRL's ``step_mdp``); envs outside a
        partial step's ``mask`` keep their previous rows."""
        from torchrl.envs.utils import step_mdp

        root = step_mdp(out, keep_other=True, exclude_action=True).exclude("_step", "_reset")
        old = self._root
        if mask is None or old is None:
            return root
        keys = [k for k in root.keys(True, True) if k in old.keys(True, True)]
        merged = root.select(*keys).clone()
        merged[~mask] = old.select(*keys)[~mask]
        return merged

    def _collect(
        self, pending: np.ndarray, wait_num: int, timeout: float | None
    ) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        nxt, self._pending = self._pending, None
        assert nxt is not None
        n = len(pending)
        rew = self._rows(nxt, self.reward_key, pending).reshape(n).astype(np.float64)
        term = self._rows(nxt, "terminated", pending).reshape(n).astype(bool)
        has_trunc = nxt.get("truncated", None) is not None
        trunc = (
            self._rows(nxt, "truncated", pending).reshape(n).astype(bool)
            if has_trunc
            else np.zeros(n, dtype=bool)
        )
        return pending, self._obs(nxt, pending), rew, term, trunc, [{} for _ in range(n)]

    def _seed_envs(self, seeds: list) -> list[Any]:
        if seeds[0] is not None:
            self.env.set_seed(seeds[0])
        for space, s in zip(self.action_space, seeds):
            space.seed(s)
        self._root = self.env.reset().exclude("_reset")
        return [[s] for s in seeds]

    def _get_attr(self, key: str, i: int) -> Any:
        return getattr(self.env, key)

    def _set_attr(self, key: str, value: Any, i: int) -> None:
        setattr(self.env, key, value)

    def _close(self) -> None:
        if not getattr(self.env, "is_closed", False):
            self.env.close()
