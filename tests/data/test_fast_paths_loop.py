"""The collector loop's and ``Batch``'s cheaper per-step paths, and their fallbacks.

* ``Batch(dict_of_tensors, batch_size=...)`` stores plain tensors as they are; any other
  input (arrays, nested dicts, a size that does not fit, odd ``batch_size`` types) takes
  the general constructor, with the same result or the same error.
* ``_step_finite`` tests the sum of squares and falls back to the sum where the squares
  overflow; a NaN/inf still raises ``NonFiniteError``.
* The loop's inlined ``_store``, its skipped ``_map_action`` call and its ``env_id``-only
  ``stack_infos`` fall back to the general code when a subclass overrides ``_store`` /
  ``_map_action``, when the policy has ``map_action``, or when infos hold more keys.
* The loop steps a vector env through ``BaseVectorEnv._step_ids`` (no info object array)
  only where ``step`` is the base class's; an overridden ``step`` is called as before,
  and both paths store the same transitions and infos.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.data.batch import Batch, _explicit_size
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import Collector, NonFiniteError
from tdrl.data.collector_step import _step_finite, _surely_finite
from tdrl.env import DummyVectorEnv
from tdrl.env.testing import MoveToRightEnv

# ----------------------------------------------------------------- Batch fast path


@pytest.mark.parametrize("size", [3, [3], (3,), torch.Size([3])])
def test_batch_explicit_size_fast_path_equals_general(size: Any) -> None:
    act = torch.arange(3)
    fast = Batch({"act": act, "logits": torch.zeros(3, 2)}, batch_size=size)
    general = Batch(act=act, logits=torch.zeros(3, 2), batch_size=size)  # kwargs: general
    assert fast.batch_size == general.batch_size == torch.Size([3])
    assert fast.act is act  # stored as is, no copy
    assert fast.keys() == general.keys()
    assert not fast._inferred and not general._inferred
    assert type(fast.batch_size) is torch.Size


def test_batch_explicit_size_fast_path_falls_back() -> None:
    # a numpy array, a nested dict and a list take the general conversion
    b = Batch({"act": np.arange(3), "info": {"x": torch.zeros(3)}}, batch_size=[3])
    assert b.act.dtype == torch.int64 and type(b.info) is Batch
    assert Batch({"a": [1, 2, 3]}, batch_size=[3]).a.tolist() == [1, 2, 3]
    # a tensor that does not fit the size raises the general path's error
    with pytest.raises(ValueError, match="a"):
        Batch({"a": torch.zeros(2)}, batch_size=[3])
    # non-int sizes go to the general path too (and fail or convert as it does)
    assert _explicit_size([np.int64(3)]) is None
    assert Batch({"a": torch.zeros(3)}, batch_size=[np.int64(3)]).batch_size == (3,)
    # copy / device / lock / names: the general path
    t = torch.zeros(3)
    assert Batch({"a": t}, batch_size=[3], copy=True).a is not t
    assert Batch({"a": t}, batch_size=[3], device="cpu").device == torch.device("cpu")
    # a non-str key is refused, as before
    with pytest.raises(TypeError, match="keys must be str"):
        Batch({1: torch.zeros(3)}, batch_size=[3])  # type: ignore[dict-item]


# ----------------------------------------------------------------- finite checks


def test_step_finite_squares_and_sum_fallback() -> None:
    ok = np.zeros(3)
    big32 = np.full((3, 2), 1e30, np.float32)  # squares overflow, the sum does not
    assert _step_finite(ok, big32)
    assert _surely_finite(big32)
    with np.errstate(invalid="ignore"):  # the fallback sum of inf and -inf
        assert not _step_finite(ok, np.array([[np.inf, -np.inf]] * 3))
    assert not _step_finite(np.array([np.nan, 0.0, 0.0]), np.ones((3, 2), np.float32))
    assert not _surely_finite(np.array([np.nan]))


class _HugeObsEnv(MoveToRightEnv):
    """Finite observations whose squares overflow in float32."""

    def __init__(self) -> None:
        super().__init__(size=3)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def step(self, action: Any) -> Any:
        _, rew, term, trunc, info = super().step(action)
        return np.full(2, 1e30, np.float32), rew, term, trunc, info

    def reset(self, **kwargs: Any) -> Any:
        _, info = super().reset(**kwargs)
        return np.full(2, 1e30, np.float32), info


class _InfObsEnv(_HugeObsEnv):
    def step(self, action: Any) -> Any:
        obs, rew, term, trunc, info = super().step(action)
        obs[1] = -np.inf
        return obs, rew, term, trunc, info


def test_collector_huge_but_finite_obs_pass_and_inf_raises() -> None:
    envs = DummyVectorEnv([_HugeObsEnv for _ in range(2)])
    c = Collector(None, envs, VectorReplayBuffer(20, 2))
    c.reset(seed=0)
    assert c.collect(n_step=6, random=True).n_collected_steps == 6
    bad = DummyVectorEnv([_InfObsEnv for _ in range(2)])
    c = Collector(None, bad, VectorReplayBuffer(20, 2))
    c.reset(seed=0)
    with pytest.raises(NonFiniteError, match="obs_next"):
        c.collect(n_step=2, random=True)
    assert len(c.buffer) == 0


# ----------------------------------------------------------------- loop fallbacks


def _policy(batch: Batch, state: Any = None) -> Batch:
    n = len(batch)
    return Batch({"act": torch.ones(n, dtype=torch.int64)}, batch_size=[n])


def _collect(collector_cls: type, envs: Any, policy: Any = _policy) -> Any:
    c = collector_cls(policy, envs, VectorReplayBuffer(40, 2))
    c.reset(seed=0)
    stats = c.collect(n_step=10)
    return c, stats


def _envs() -> DummyVectorEnv:
    return DummyVectorEnv([lambda: MoveToRightEnv(size=3) for _ in range(2)])


def test_overridden_store_and_map_action_are_called() -> None:
    calls = {"store": 0, "map": 0}

    class Mine(Collector):
        def _store(self, *args: Any) -> Any:
            calls["store"] += 1
            return super()._store(*args)

        def _map_action(self, act: np.ndarray) -> np.ndarray:
            calls["map"] += 1
            return super()._map_action(act)

    base, base_stats = _collect(Collector, _envs())
    mine, mine_stats = _collect(Mine, _envs())
    assert calls == {"store": 5, "map": 5}
    assert base_stats.n_collected_episodes == mine_stats.n_collected_episodes
    for key in ("obs", "act", "rew", "terminated", "obs_next"):
        assert torch.equal(base.buffer[key], mine.buffer[key])
    assert torch.equal(base.buffer.info.env_id, mine.buffer.info.env_id)


class _MappedPolicy:
    """A policy whose raw actions (0/1) the envs see as 1/0."""

    def __init__(self) -> None:
        self.mapped = 0

    def __call__(self, batch: Batch, state: Any = None) -> Batch:
        n = len(batch)
        return Batch({"act": torch.zeros(n, dtype=torch.int64)}, batch_size=[n])

    def map_action(self, act: np.ndarray) -> np.ndarray:
        self.mapped += 1
        return 1 - act


def test_policy_map_action_still_applied() -> None:
    pol = _MappedPolicy()
    c, stats = _collect(Collector, _envs(), pol)
    assert pol.mapped == 5
    assert stats.n_collected_episodes > 0  # mapped to "right": episodes finish
    assert (c.buffer.act[: len(c.buffer)] == 0).all()  # the raw action is stored


class _InfoEnv(MoveToRightEnv):
    def step(self, action: Any) -> Any:
        obs, rew, term, trunc, info = super().step(action)
        return obs, rew, term, trunc, {**info, "score": 2.5}


def test_infos_with_more_keys_take_stack_infos() -> None:
    envs = DummyVectorEnv([lambda: _InfoEnv(size=3) for _ in range(2)])
    seen: list[Any] = []

    def policy(batch: Batch, state: Any = None) -> Batch:
        seen.append(sorted(batch.info.keys()))
        return _policy(batch)

    c, _ = _collect(Collector, envs, policy)
    n = len(c.buffer)
    assert (c.buffer.info.score[:n] == 2.5).any()
    assert all("score" in keys for keys in seen[1:])  # after the first step


def test_overridden_vector_env_step_is_called_and_stores_the_same() -> None:
    calls = {"step": 0}

    class Counted(DummyVectorEnv):
        def step(self, action: Any, env_id: Any = None, *, id: Any = None) -> Any:
            calls["step"] += 1
            return super().step(action, env_id, id=id)

    def make(cls: type[DummyVectorEnv]) -> DummyVectorEnv:
        return cls([lambda s=s: _InfoEnv(size=s) for s in (2, 3)])

    fast, fast_stats = _collect(Collector, make(DummyVectorEnv))
    general, general_stats = _collect(Collector, make(Counted))
    assert calls["step"] == 5
    assert fast_stats.n_collected_episodes == general_stats.n_collected_episodes > 0
    n = len(fast.buffer)
    assert n == len(general.buffer)
    for key in ("obs", "act", "rew", "terminated", "truncated", "obs_next"):
        assert torch.equal(fast.buffer[key][:n], general.buffer[key][:n])
    for key in ("env_id", "score"):
        assert torch.equal(fast.buffer.info[key][:n], general.buffer.info[key][:n])


def test_vector_env_step_replaced_on_the_instance_is_called() -> None:
    envs = _envs()
    calls = {"step": 0}
    step = envs.step

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls["step"] += 1
        return step(*args, **kwargs)

    envs.step = counted  # type: ignore[method-assign]
    _collect(Collector, envs)
    assert calls["step"] == 5


def test_n_episode_collect_shrinks_the_stepped_envs_on_both_paths() -> None:
    class Overridden(DummyVectorEnv):
        def step(self, action: Any, env_id: Any = None, *, id: Any = None) -> Any:
            return super().step(action, env_id, id=id)

    out = []
    for cls in (DummyVectorEnv, Overridden):
        envs = cls([lambda s=s: _InfoEnv(size=s) for s in (2, 5, 3)])
        c = Collector(_policy, envs, VectorReplayBuffer(60, 3))
        c.reset(seed=0)
        stats = c.collect(n_episode=4)  # the envs done with their share stop stepping
        out.append((stats.n_collected_episodes, stats.n_collected_steps, len(c.buffer)))
    assert out[0] == out[1]
    assert out[0][0] == 4
