"""A buffer add must fit the layout earlier adds established (issue 16, bad input).

A key earlier adds stored that is missing from an add (``obs_next``, a nested ``obs`` key,
an extra key), or a value of another per-transition shape or dtype kind, raises naming the
key, the expected and the actual, and leaves the buffer unchanged, for every buffer class.
Keys under ``info`` and ``policy`` may come and go (stored as zeros when absent, as in
Tianshou), since env infos vary between steps and random-action steps carry no policy data.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tdrl.data.buffer import (
    CachedReplayBuffer,
    HERReplayBuffer,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tdrl.data.buffer.schema import BufferKeyError


def reward_fn(ag: np.ndarray, g: np.ndarray) -> np.ndarray:
    return -(np.abs(ag - g).sum(-1) > 1e-6).astype(np.float64)


# name -> (factory, number of envs per add (0: one non-stacked transition), goal-dict obs)
FACTORIES: dict[str, tuple[Callable[[], Any], int, bool]] = {
    "ReplayBuffer": (lambda: ReplayBuffer(8, seed=0), 0, False),
    "VectorReplayBuffer": (lambda: VectorReplayBuffer(8, 2, seed=0), 2, False),
    "PrioritizedReplayBuffer": (lambda: PrioritizedReplayBuffer(8, 0.6, 0.4, seed=0), 0, False),
    "PrioritizedVectorReplayBuffer": (
        lambda: PrioritizedVectorReplayBuffer(8, 2, 0.6, 0.4, seed=0),
        2,
        False,
    ),
    "CachedReplayBuffer": (lambda: CachedReplayBuffer(ReplayBuffer(16), 2, 4, seed=0), 2, False),
    "HERReplayBuffer": (lambda: HERReplayBuffer(8, reward_fn, horizon=4, seed=0), 0, True),
    "HERVectorReplayBuffer": (
        lambda: HERVectorReplayBuffer(8, 2, reward_fn, horizon=4, seed=0),
        2,
        True,
    ),
}


def make_step(n: int, goal: bool, t: int = 0, **over: Any) -> dict:
    """One add: ``n`` envs (``0``: a single non-stacked transition)."""
    lead = (n,) if n else ()

    def obs(v: float) -> Any:
        x = np.full((*lead, 3), v, np.float32)
        if goal:
            g = np.full((*lead, 1), -1.0, np.float32)
            return {"observation": x, "achieved_goal": x[..., :1].copy(), "desired_goal": g}
        return x

    batch: dict[str, Any] = {
        "obs": obs(t),
        "act": np.zeros(lead, np.int64),
        "rew": np.ones(lead),
        "terminated": np.zeros(lead, bool),
        "truncated": np.zeros(lead, bool),
        "obs_next": obs(t + 1),
        "info": {"env_id": np.arange(n) if n else np.int64(0)},
    }
    batch.update(over)
    return {k: v for k, v in batch.items() if v is not None}


def snapshot(buf: Any) -> bytes:
    """Everything a write may change: columns, bookkeeping, links, priorities, generators."""
    parts = [buf.main_buffer, buf.cache] if isinstance(buf, CachedReplayBuffer) else [buf]
    out: list[Any] = []
    for b in parts:
        st = b._storage
        out.append({".".join(k): v.numpy().copy() for k, v in st.columns.items()})
        out.append({k: np.asarray(v).copy() for k, v in st.meta_state().items()})
        out.append((st.stop.copy(), st.prv_base.copy(), b.generator.get_state().numpy()))
        tree = getattr(b._sampler, "_tree", None)
        if tree is not None:
            out.append(np.asarray(tree.leaves).copy())
    return pickle.dumps(out)


@pytest.fixture(params=sorted(FACTORIES))
def filled(request: pytest.FixtureRequest) -> tuple[Any, int, bool]:
    factory, n, goal = FACTORIES[request.param]
    buf = factory()
    for t in range(3):  # several adds: the fast path's plan is in place
        buf.add(make_step(n, goal, t))
    return buf, n, goal


def _bad_obs(n: int, goal: bool, tail: tuple[int, ...], dtype: Any) -> Any:
    lead = (n,) if n else ()
    x = np.zeros((*lead, *tail), dtype)
    if goal:
        g = np.zeros((*lead, 1), np.float32)
        return {"observation": x, "achieved_goal": g, "desired_goal": g}
    return x


CASES: dict[str, tuple[Callable[[int, bool], dict], type, str]] = {
    "missing obs_next": (
        lambda n, goal: make_step(n, goal, obs_next=None),
        BufferKeyError,
        r"obs_next(\.\w+)*: missing from this add; expected the keys earlier adds stored "
        r"\[.*'obs_next.*\], got \[",
    ),
    "per-transition shape": (
        lambda n, goal: make_step(n, goal, obs=_bad_obs(n, goal, (4,), np.float32)),
        ValueError,
        r"obs(\.observation)?: expected per-transition shape \(3,\), got \(4,\)",
    ),
    "float into an integer column": (
        lambda n, goal: make_step(n, goal, act=np.zeros((n,) if n else (), np.float64)),
        ValueError,
        r"act: expected dtype int64, got float64 \(float values into an integer column\)",
    ),
    "integer into a float column": (
        lambda n, goal: make_step(n, goal, obs=_bad_obs(n, goal, (3,), np.int32)),
        ValueError,
        r"obs(\.observation)?: expected dtype float32, got int32 "
        r"\(integer values into a float column\)",
    ),
    "bool into an integer column": (
        lambda n, goal: make_step(n, goal, act=np.zeros((n,) if n else (), bool)),
        ValueError,
        r"act: expected dtype int64, got bool \(bool values into an integer column\)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_add_raises_and_leaves_buffer_unchanged(
    filled: tuple[Any, int, bool], case: str
) -> None:
    buf, n, goal = filled
    make, err, match = CASES[case]
    before = snapshot(buf)
    with pytest.raises(err, match=match):
        buf.add(make(n, goal))
    assert snapshot(buf) == before
    buf.add(make_step(n, goal, 3))  # still usable, the same layout
    assert len(buf) == (4 * max(n, 1) if not isinstance(buf, CachedReplayBuffer) else 8)


def test_missing_key_error_is_a_key_error_and_a_value_error() -> None:
    buf = ReplayBuffer(4)
    buf.add(make_step(0, False))
    with pytest.raises(KeyError) as info:
        buf.add(make_step(0, False, obs_next=None))
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("obs_next: missing from this add")  # not repr-quoted


def test_missing_nested_and_extra_keys() -> None:
    buf = VectorReplayBuffer(8, 2)
    obs = {"pos": np.zeros((2, 2), np.float32), "vel": np.zeros((2, 2), np.float32)}
    buf.add(make_step(2, False, obs=obs, obs_next=obs, extra=np.ones(2)))
    with pytest.raises(BufferKeyError, match=r"obs\.vel: missing from this add"):
        buf.add(make_step(2, False, obs={"pos": obs["pos"]}, obs_next=obs, extra=np.ones(2)))
    with pytest.raises(BufferKeyError, match=r"^extra: missing from this add"):
        buf.add(make_step(2, False, obs=obs, obs_next=obs))
    assert len(buf) == 2


def test_missing_keys_after_reset_still_raise() -> None:
    """The layout outlives ``reset``: the columns stay allocated."""
    buf = VectorReplayBuffer(8, 2)
    buf.add(make_step(2, False))
    buf.reset()
    with pytest.raises(BufferKeyError, match="obs_next"):
        buf.add(make_step(2, False, obs_next=None))
    assert len(buf) == 0


def test_info_and_policy_keys_may_come_and_go() -> None:
    """Tianshou's rule kept for optional groups: an absent key is stored as zeros."""
    buf = VectorReplayBuffer(8, 2)
    buf.add(make_step(2, False, info={"env_id": np.arange(2), "lives": np.array([3, 2])}))
    buf.add(make_step(2, False, policy={"logp": np.ones(2, np.float32)}))
    buf.add(make_step(2, False, info={}))
    out = buf[buf.sample_indices(0)]
    assert out.info.lives.tolist() == [3, 0, 0, 2, 0, 0]
    assert out.policy.logp.tolist() == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def test_info_values_may_change_kind() -> None:
    """An info entry that is an int on one step and a float on another is kept (cast)."""
    buf = ReplayBuffer(4)
    buf.add(make_step(0, False, info={"x": np.float64(0.5)}))
    buf.add(make_step(0, False, info={"x": np.int64(2)}))
    assert buf.info.x[:2].tolist() == [0.5, 2.0]


def test_same_kind_casts_still_accepted() -> None:
    """float64 into float32 is rejected (unsafe) as before; float32 into float64 and
    uint8 into int64 are accepted: same kind, safe cast."""
    buf = ReplayBuffer(4)
    buf.add(make_step(0, False, obs=np.zeros(3), obs_next=np.zeros(3)))
    buf.add(make_step(0, False, act=np.uint8(1)))  # float32 obs into float64, uint8 act
    assert buf.obs.dtype == torch.float64 and buf.act[:2].tolist() == [0, 1]
    with pytest.raises(ValueError, match="act: expected dtype int64, got uint64"):
        buf.add(make_step(0, False, act=np.uint64(1)))


def test_update_from_buffer_checks_kind() -> None:
    """``update(other)`` goes through the same column check."""
    a, b = ReplayBuffer(4), ReplayBuffer(4)
    a.add(make_step(0, False))
    b.add(make_step(0, False, obs=np.zeros(3, np.int64), obs_next=np.zeros(3, np.int64)))
    before = snapshot(a)
    with pytest.raises(
        ValueError, match=r"obs: expected dtype float32, got int64 \(integer values"
    ):
        a.update(b)
    assert snapshot(a) == before


def test_torchrl_extend_checks_the_layout_too() -> None:
    """TorchRL's ``extend`` (through ``EpisodeWriter``/``EpisodeStorage.set``) appends
    rows, so it is held to the same layout: a missing key or another kind raises."""
    from tensordict import TensorDict

    buf = ReplayBuffer(8)

    def td(**over: Any) -> TensorDict:
        data = {
            "obs": torch.zeros(2, 3),
            "act": torch.zeros(2, dtype=torch.long),
            "rew": torch.ones(2),
            "terminated": torch.zeros(2, dtype=torch.bool),
            "truncated": torch.zeros(2, dtype=torch.bool),
            "obs_next": torch.ones(2, 3),
        }
        data.update(over)
        return TensorDict({k: v for k, v in data.items() if v is not None}, [2])

    buf.extend(td())
    before = snapshot(buf)
    with pytest.raises(BufferKeyError, match="obs_next: missing from this add"):
        buf.extend(td(obs_next=None))
    with pytest.raises(ValueError, match=r"act: expected dtype int64, got float32 \(float"):
        buf.extend(td(act=torch.zeros(2)))
    assert snapshot(buf) == before
    buf.extend(td())
    assert len(buf) == 4
