"""Tianshou buffer API on tdrl's buffers (issue 24): sub-buffer views, ``weight``,
``SegmentTree``, ``set_array_at_key`` and columns that exist only once stored."""

from __future__ import annotations

import numpy as np
import pytest

from tdrl.data import (
    Batch,
    CachedReplayBuffer,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    SegmentTree,
    VectorReplayBuffer,
)


def _step(n: int, obs: list[int]) -> dict:
    return {
        "obs": np.array(obs), "act": np.zeros(n), "rew": np.ones(n),
        "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool),
    }  # fmt: skip


def test_vector_buffer_sub_buffers_are_views() -> None:
    buf = VectorReplayBuffer(9, 3)
    buf.add(_step(2, [1, 2]), buffer_ids=[0, 2])
    buf.add(_step(1, [3]), buffer_ids=[2])
    subs = buf.buffers
    assert [len(b) for b in subs] == [1, 0, 2] and subs[2].maxsize == 3
    assert subs[2].obs.tolist() == [2, 3, 0]
    assert subs[2][:].obs.tolist() == [2, 3]
    assert subs[2].prev(np.array([1])).tolist() == [0]
    subs[1].stack_num = 2  # reading options are shared with the parent
    assert buf.stack_num == 2
    with pytest.raises(AttributeError):
        subs[0].obs = 1


def test_cached_and_her_buffers_have_buffers() -> None:
    cached = CachedReplayBuffer(ReplayBuffer(5), cached_buffer_num=2, max_episode_length=3)
    assert cached.buffers[0] is cached.main_buffer and len(cached.buffers) == 3
    her = HERVectorReplayBuffer(8, 2, compute_reward_fn=lambda *a: 0.0, horizon=4)
    assert len(her.buffers) == 2


def test_prioritized_weight_is_the_priority_tree() -> None:
    buf = PrioritizedReplayBuffer(8, alpha=0.5, beta=0.4)
    for i in range(3):
        buf.add(Batch(obs=i, act=0, rew=1.0, terminated=False, truncated=False))
    buf.update_weight(np.array([1]), np.array([4.0]))
    assert np.allclose(buf.weight[np.array([1])], 4.0**0.5)


def test_info_exists_only_once_stored() -> None:
    buf = ReplayBuffer(4)
    buf.add(Batch(obs=0, act=0, rew=1.0, terminated=False, truncated=False))
    assert not hasattr(buf, "info")
    buf.add(Batch(obs=0, act=0, rew=1.0, terminated=False, truncated=False, info={"k": 1}))
    assert buf.info.k.tolist()[:2] == [0, 1]


def test_buffer_set_array_at_key() -> None:
    buf = ReplayBuffer(4)
    for i in range(3):
        buf.add(Batch(obs=i, act=0, rew=1.0, terminated=i == 2, truncated=False))
    buf.set_array_at_key(np.array([5.0, 6.0]), "g", index=[0, 2])
    assert np.isnan(buf.g[1].item()) and buf[np.array([0, 2])].g.tolist() == [5.0, 6.0]
    buf.add(Batch(obs=3, act=0, rew=1.0, terminated=False, truncated=False, g=1.0))
    assert buf.g[3].item() == 1.0


def test_segment_tree() -> None:
    tree = SegmentTree(8)
    rng = np.random.default_rng(0)
    naive = np.zeros(8)
    for _ in range(50):
        idx = rng.choice(8, size=3)
        val = rng.random(3)
        tree[idx] = val
        for i, v in zip(idx, val):
            naive[i] = v
        lo, hi = sorted(rng.choice(9, size=2, replace=False))
        assert np.isclose(tree.reduce(lo, hi), naive[lo:hi].sum())
    assert np.isclose(tree.reduce(end=-1), naive[:-1].sum())
    assert tree[3] == naive[3] and len(tree) == 8
    with pytest.raises(IndexError):
        tree[8]
    tree = SegmentTree(10)
    tree[np.arange(3)] = np.array([0.1, 0.0, 0.1])
    out = tree.get_prefix_sum_idx(np.array([0.0, 0.1, 0.1 + 1e-6, 0.2 - 1e-6]))
    assert out.tolist() == [0, 0, 2, 2] and tree.get_prefix_sum_idx(0.05) == 0
    with pytest.raises(AssertionError):
        tree.get_prefix_sum_idx(0.2)
