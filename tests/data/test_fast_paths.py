"""The per-step fast paths (issue 28) give exactly what the general paths give.

* ``Batch`` remembers the numpy arrays it wrapped; ``numpy_entries`` (the buffer's ``add``
  of a ``Batch``) reuses them only while the tensor is untouched.
* ``wrap_entries`` and the collector's policy input equal the ``Batch`` constructor's result.
* ``common_prefix`` (lexicographic extremes) equals the pairwise definition.
* A vector buffer's lockstep writes bring ``cursor``/``lengths``/``last_index``/``stop``/
  ``prv_base`` up to date lazily: every read equals the eager bookkeeping's.
* ``add`` with ``buffer_ids`` as a list, and a nested ``info`` dict, take the cached plan
  and store what the general path stores.
* The collector's combined NaN/inf test, its cached ``map_action`` lookup, and ``env.step``
  called for all envs.
"""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.data.batch import Batch, wrap_entries
from tdrl.data.batch_ops import common_prefix, numpy_entries
from tdrl.data.buffer import PrioritizedVectorReplayBuffer, ReplayBuffer, VectorReplayBuffer
from tdrl.data.collector import Collector, NonFiniteError, _policy_input, _step_finite
from tdrl.env import DummyVectorEnv
from tdrl.env.testing import MoveToRightEnv

# ----------------------------------------------------------------- numpy_entries


def _step(rng: np.random.Generator, n: int = 4) -> dict[str, np.ndarray]:
    return {
        "obs": rng.standard_normal((n, 3)).astype(np.float32),
        "act": rng.standard_normal((n, 2)).astype(np.float32),
        "rew": rng.standard_normal(n).astype(np.float32),
        "terminated": rng.random(n) < 0.2,
        "truncated": np.zeros(n, dtype=bool),
        "obs_next": rng.standard_normal((n, 3)).astype(np.float32),
    }


def test_numpy_entries_reuses_the_source_array_of_an_untouched_entry() -> None:
    a = np.zeros((2, 3), np.float32)
    b = Batch(obs=a, act=[1, 2])
    obs, act = numpy_entries(b, ("obs", "act"))
    assert obs is a
    assert act.tolist() == [1, 2]  # built from a list: converted, nothing to reuse


@pytest.mark.parametrize(
    "touch",
    [
        lambda b: b.obs.add_(1.0),  # in place: version bump
        lambda b: b.obs.unsqueeze_(0).squeeze_(0),  # metadata in place, same shape
        lambda b: b.__setitem__("obs", torch.full((2, 3), 5.0)),  # another tensor
        lambda b: setattr(b.obs, "data", torch.full((2, 3), 7.0)),  # .data swapped
        lambda b: b.obs.share_memory_(),  # memory moved
    ],
)
def test_numpy_entries_equals_tensor_numpy_once_the_entry_was_touched(touch: Any) -> None:
    a = np.zeros((2, 3), np.float32)
    b = Batch(obs=a)
    touch(b)
    b.obs.numpy()[0, 0] = 9.0  # a write torch does not see: only the tensor's memory
    (got,) = numpy_entries(b, ("obs",))
    assert np.array_equal(got, b.obs.numpy())
    assert got.shape == tuple(b.obs.shape)


def test_numpy_entries_of_a_read_only_or_inference_source_converts() -> None:
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    b = Batch(obs=ro)  # copied: the tensor does not share the array's memory
    b.obs[0, 0] = 4.0
    assert numpy_entries(b, ("obs",))[0][0, 0] == 4.0
    with torch.inference_mode():
        c = Batch(obs=np.zeros((2, 3), np.float32))
    assert numpy_entries(c, ("obs",))[0].shape == (2, 3)


def test_pickled_or_cloned_batch_carries_no_source_arrays() -> None:
    b = Batch(obs=np.zeros((2, 3), np.float32))
    for other in (pickle.loads(pickle.dumps(b)), b.clone(), b[:1]):
        assert "_np_sources" not in other.__dict__
    assert "_np_sources" in b.__dict__  # pickling leaves the original as it was


def test_buffer_add_of_a_batch_stores_the_current_tensor_values() -> None:
    rng = np.random.default_rng(0)
    ref, buf = VectorReplayBuffer(40, 4), VectorReplayBuffer(40, 4)
    for i in range(12):
        step = _step(rng)
        b = Batch({**step, "info": {}})
        if i % 3 == 1:
            b.obs.mul_(2.0)  # version bump: converted again
        if i % 3 == 2:
            b.rew = torch.arange(4, dtype=torch.float32)  # replaced entry
        ref.add({k: v.numpy() for k, v in b.items() if k != "info"}, buffer_ids=np.arange(4))
        buf.add(b, buffer_ids=list(range(4)))
    for key in ("obs", "act", "rew", "terminated", "truncated", "obs_next", "done"):
        assert np.array_equal(getattr(buf, key).numpy(), getattr(ref, key).numpy()), key


# ------------------------------------------------------------ Batch construction


def test_wrap_entries_equals_the_constructor() -> None:
    size = torch.Size([3])
    entries = {"obs": torch.zeros(3, 2), "info": wrap_entries(Batch, {}, size)}
    fast = wrap_entries(Batch, dict(entries), size)
    slow = Batch(entries, batch_size=size)
    assert fast.batch_size == slow.batch_size and list(fast.keys()) == list(slow.keys())
    assert fast.obs is slow.obs
    assert type(fast.info) is Batch and fast.info.batch_size == size
    assert not fast._inferred and not slow._inferred


def test_collector_policy_input_equals_the_general_batch() -> None:
    obs = np.arange(6, dtype=np.float32).reshape(3, 2)
    info = {"env_id": np.arange(3), "x": np.ones(3)}
    fast = _policy_input(obs, info, torch.Size([3]))
    slow = Batch({"obs": obs, "info": Batch(info, batch_size=[3])}, batch_size=[3])
    assert fast is not None
    assert fast.batch_size == slow.batch_size
    assert torch.equal(fast.obs, slow.obs) and torch.equal(fast.info.x, slow.info.x)
    assert np.shares_memory(fast.obs.numpy(), obs)
    # what the fast path does not take: the general path builds it
    assert _policy_input({"a": obs}, info, torch.Size([3])) is None
    assert _policy_input(obs, {"s": np.array(["a", "b", "c"])}, torch.Size([3])) is None
    assert _policy_input(obs, {"n": {"x": np.ones(3)}}, torch.Size([3])) is None
    assert _policy_input(obs[:2], info, torch.Size([3])) is None


def test_policy_input_reuses_the_env_id_tensor_of_the_same_array_only() -> None:
    obs = np.zeros((3, 2), np.float32)
    ids = np.arange(3)
    memo: list = [(None, None)]  # a collector's own
    first = _policy_input(obs, {"env_id": ids}, torch.Size([3]), memo)
    again = _policy_input(obs, {"env_id": ids}, torch.Size([3]), memo)
    assert first is not None and again is not None
    assert again.info.env_id is first.info.env_id  # the same array: its tensor, reused
    ids[1] = 7  # and it shares the array's memory, as a fresh conversion would
    assert again.info.env_id.tolist() == [0, 7, 2]
    other = _policy_input(obs, {"env_id": np.array([2, 1, 0])}, torch.Size([3]), memo)
    assert other is not None and other.info.env_id.tolist() == [2, 1, 0]
    # a value the fast path cannot take still sends the caller to the general path
    assert _policy_input(obs, {"env_id": None}, torch.Size([3]), memo) is None
    assert _policy_input(obs, {0: ids}, torch.Size([3]), memo) is None


def _common_prefix_pairwise(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    first = shapes[0]
    n = min(len(s) for s in shapes)
    i = 0
    while i < n and all(s[i] == first[i] for s in shapes):
        i += 1
    return tuple(first[:i])


def test_common_prefix_matches_the_pairwise_definition() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        shapes = [
            tuple(int(d) for d in rng.integers(1, 3, size=rng.integers(0, 4)))
            for _ in range(rng.integers(1, 5))
        ]
        assert common_prefix(shapes) == _common_prefix_pairwise(shapes), shapes
    assert common_prefix([torch.Size([4, 2]), (4, 2, 1)]) == (4, 2)
    assert common_prefix([]) == ()


# ------------------------------------------------------- lazy lockstep bookkeeping


def _bookkeeping(buf: ReplayBuffer) -> list[Any]:
    st = buf._storage
    out: list[Any] = [len(buf)]
    out += [a.copy() for a in (st.cursor, st.lengths, st.last_index, st.stop, st.prv_base)]
    if len(buf):
        idx = buf.sample_indices(0)
        out += [idx, buf.prev(idx), buf.next(idx), buf.unfinished_index()]
    return out


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("size,num", [(12, 4), (7, 2), (3, 3), (30, 1)])
def test_lazy_lockstep_bookkeeping_equals_reading_after_every_write(size: int, num: int) -> None:
    rng = np.random.default_rng(size * 10 + num)
    lazy, eager = VectorReplayBuffer(size, num), VectorReplayBuffer(size, num)
    for step in range(5 * size):
        data = _step(rng, num)
        assert all(
            np.array_equal(x, y) for x, y in zip(lazy.add(data), eager.add(data), strict=True)
        )
        eager_state = _bookkeeping(eager)  # read after every write: never lazy for long
        if step % 7 == 6:
            assert _same(_bookkeeping(lazy), eager_state)
        if step % 11 == 10:  # a write to some rings only leaves lockstep
            ids = np.array([0])
            part = _step(rng, 1)
            lazy.add(part, buffer_ids=ids)
            eager.add(part, buffer_ids=ids)
        if step % 13 == 12:
            lazy = pickle.loads(pickle.dumps(lazy))
        if step == 2 * size:
            lazy.reset(keep_statistics=True)
            eager.reset(keep_statistics=True)
    assert _same(_bookkeeping(lazy), _bookkeeping(eager))
    assert np.array_equal(lazy[:].obs.numpy(), eager[:].obs.numpy())


def test_lazy_writes_wrapping_a_ring_many_times_before_a_read() -> None:
    rng = np.random.default_rng(1)
    lazy, eager = VectorReplayBuffer(6, 2), VectorReplayBuffer(6, 2)
    for _ in range(17):  # 17 writes into rings of 3: several wraps, one read at the end
        data = _step(rng, 2)
        lazy.add(data)
        eager.add(data)
        _bookkeeping(eager)
    assert _same(_bookkeeping(lazy), _bookkeeping(eager))


def test_len_while_writes_are_pending_does_not_need_the_arrays() -> None:
    buf = VectorReplayBuffer(20, 4)
    rng = np.random.default_rng(2)
    for i in range(7):
        buf.add(_step(rng))
        assert len(buf) == 4 * min(i + 1, 5)
    assert buf._storage._lazy  # len() left the pending writes pending


# ----------------------------------------------------------------- add fast paths


def test_add_with_a_list_of_all_ids_equals_an_array_of_them() -> None:
    rng = np.random.default_rng(3)
    a, b = VectorReplayBuffer(16, 4), VectorReplayBuffer(16, 4)
    for _ in range(9):
        data = _step(rng)
        out_a = a.add(data, buffer_ids=[0, 1, 2, 3])
        out_b = b.add(data, buffer_ids=np.arange(4))
        assert all(np.array_equal(x, y) for x, y in zip(out_a, out_b, strict=True))
    assert np.array_equal(a[:].obs.numpy(), b[:].obs.numpy())
    with pytest.raises(ValueError, match="distinct"):
        a.add(_step(rng), buffer_ids=[0, 0, 1, 2])


def test_add_with_a_nested_info_dict_takes_the_plan_and_falls_back_on_a_new_layout() -> None:
    rng = np.random.default_rng(4)
    buf, ref = VectorReplayBuffer(16, 4), VectorReplayBuffer(16, 4)
    for i in range(6):
        data: dict[str, Any] = {**_step(rng), "info": {"env_id": np.arange(4)}}
        if i == 3:  # a key under info comes: stored, zeros elsewhere
            data["info"] = {"env_id": np.arange(4), "x": np.ones(4)}
        if i == 4:  # and goes
            data["info"] = {"env_id": np.arange(4)}
        buf.add(data, buffer_ids=np.arange(4))
        ref.add(Batch(data), buffer_ids=np.arange(4))
        if i < 3:  # the layout seen so far: the cached plan, info read without recursion
            assert buf._fast_plan is not None and buf._fast_plan.nested == ((6, ("env_id",)),)
    assert np.array_equal(buf.info.env_id.numpy(), ref.info.env_id.numpy())
    assert np.array_equal(buf.info.x.numpy(), ref.info.x.numpy())
    with pytest.raises(ValueError):
        buf.add({**_step(rng), "info": {"env_id": np.arange(3)}}, buffer_ids=np.arange(4))


def test_prioritized_sample_batch_carries_weight_and_empty_groups() -> None:
    buf = PrioritizedVectorReplayBuffer(16, 4, alpha=0.6, beta=0.4, seed=0)
    rng = np.random.default_rng(5)
    for _ in range(4):
        buf.add({**_step(rng), "info": {}})
    batch, idx = buf.sample(8)
    assert type(batch) is Batch and batch.batch_size == torch.Size([8])
    assert batch.weight.dtype == torch.float32 and batch.weight.shape == (8,)
    assert type(batch.info) is Batch and batch.info.batch_size == torch.Size([8])
    assert torch.equal(batch.obs, buf[idx].obs)


# --------------------------------------------------------------------- collector


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_step_finite_agrees_with_the_separate_checks() -> None:
    ok = np.zeros(3)
    assert _step_finite(ok, np.ones((3, 2), np.float32))
    assert not _step_finite(np.array([0.0, np.inf, 0.0]), np.ones((3, 2)))
    assert not _step_finite(ok, np.array([[np.nan, 0.0]] * 3))
    big = np.full((3, 2), 1e308)
    assert not _step_finite(ok, big)  # the sum overflows: "look closer", not an error
    one_big = np.array([1e308, 0.0, 0.0])
    assert _step_finite(one_big, one_big.reshape(3, 1))  # each sum finite on its own
    assert _step_finite(ok, np.ones((3, 2), np.int64))  # integer observations: finite


class _BigObsEnv(MoveToRightEnv):
    def step(self, action: Any) -> Any:
        _, rew, term, trunc, info = super().step(action)
        return np.full(2, 1e308), rew, term, trunc, info

    def reset(self, **kwargs: Any) -> Any:
        _, info = super().reset(**kwargs)
        return np.full(2, 1e308), info


class _NanRewEnv(MoveToRightEnv):
    def step(self, action: Any) -> Any:
        obs, _, term, trunc, info = super().step(action)
        return obs, float("nan"), term, trunc, info


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_collector_finite_check_raises_on_nan_and_not_on_an_overflowing_sum() -> None:
    big = Collector(None, DummyVectorEnv([lambda: _BigObsEnv(size=3)] * 2))
    big.reset()
    assert big.collect(n_step=4, random=True).n_collected_steps == 4
    nan = Collector(None, DummyVectorEnv([lambda: _NanRewEnv(size=3)] * 2))
    nan.reset()
    with pytest.raises(NonFiniteError, match="rew"):
        nan.collect(n_step=2, random=True)


class _MapPolicy(torch.nn.Module):
    """An ``nn.Module`` policy: its ``map_action`` can change between collects."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0
        self.lookups = 0

    def forward(self, batch: Batch, state: Any = None) -> Batch:
        n = len(batch)
        return Batch({"act": torch.zeros(n, dtype=torch.int64)}, batch_size=[n])

    def __getattr__(self, name: str) -> Any:
        if name == "map_action":
            self.__dict__["lookups"] = self.__dict__.get("lookups", 0) + 1
            offset = self.__dict__["offset"]
            return lambda act: act + offset
        return super().__getattr__(name)


def test_collector_looks_map_action_up_once_per_collect() -> None:
    pol = _MapPolicy()
    envs = DummyVectorEnv([lambda: MoveToRightEnv(size=5)] * 2)
    c = Collector(pol, envs, VectorReplayBuffer(40, 2))
    c.reset()
    pol.lookups = 0
    c.collect(n_step=6)
    assert pol.lookups == 1
    assert envs.get_env_attr("index") == [0, 0]  # act 0 moves left: stays at 0
    pol.offset = 1  # the next collect sees the new mapping
    c.collect(n_step=4)
    assert envs.get_env_attr("index") == [2, 2]
    assert c.buffer.act[:2].tolist() == [0, 0]  # the buffer keeps the raw policy action


def test_collector_all_env_steps_match_an_explicit_id_loop() -> None:
    envs = [gym.make("CartPole-v1") for _ in range(3)]
    c = Collector(None, DummyVectorEnv.from_envs(envs), VectorReplayBuffer(300, 3))
    c.reset(seed=3)
    c.collect(n_step=60, random=True)
    ref_envs = [gym.make("CartPole-v1") for _ in range(3)]
    r = Collector(None, DummyVectorEnv.from_envs(ref_envs), VectorReplayBuffer(300, 3))
    r.reset(seed=3)
    step = r.env.step

    def step_by_ids(act: Any, env_id: Any = None) -> Any:
        return step(act, np.arange(3))

    r.env.step = step_by_ids  # type: ignore[method-assign, assignment]
    r.collect(n_step=60, random=True)
    assert np.array_equal(c.buffer.obs.numpy(), r.buffer.obs.numpy())
    assert np.array_equal(c.buffer.done.numpy(), r.buffer.done.numpy())
