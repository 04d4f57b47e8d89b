"""Tests for the sum/min tree, the prioritized TorchRL sampler and the prioritized buffers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchrl.data import LazyTensorStorage
from torchrl.data import ReplayBuffer as TorchRLReplayBuffer

from tdrl.data.buffer.prio import (
    PrioritizedReplayBuffer,
    PrioritizedSampler,
    PrioritizedVectorReplayBuffer,
)
from tdrl.data.buffer.segtree import SumMinTree

EPS = float(np.finfo(np.float32).eps)


def _step(i: int, n: int = 1, done: bool = False) -> dict:
    if n == 1:
        return {
            "obs": np.float32(i),
            "act": 0,
            "rew": 1.0,
            "terminated": done,
            "truncated": False,
            "obs_next": np.float32(i + 1),
        }
    return {
        "obs": np.full(n, i, np.float32),
        "act": np.zeros(n, np.int64),
        "rew": np.ones(n),
        "terminated": np.full(n, done),
        "truncated": np.zeros(n, bool),
        "obs_next": np.full(n, i + 1, np.float32),
    }


def _chi2_ok(counts: np.ndarray, probs: np.ndarray) -> bool:
    """Pearson chi-square against the 99.9 % quantile (Wilson-Hilferty approximation)."""
    n = counts.sum()
    keep = probs > 0
    assert counts[~keep].sum() == 0, "drew a zero-probability slot"
    exp = probs[keep] * n
    stat = float(((counts[keep] - exp) ** 2 / exp).sum())
    df = keep.sum() - 1
    q = df * (1 - 2 / (9 * df) + 3.09 * np.sqrt(2 / (9 * df))) ** 3
    return stat < q


# ----------------------------------------------------------------------------- tree
@settings(max_examples=40, deadline=None)
@given(
    cap=st.integers(1, 300),
    branching=st.sampled_from([2, 4, 16]),
    top=st.sampled_from([1, 3, 1024]),
    ops=st.lists(
        st.tuples(
            st.lists(st.integers(0, 10_000), min_size=1, max_size=20),
            st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 100)), min_size=1, max_size=20),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_tree_matches_numpy_reference(cap, branching, top, ops):
    tree = SumMinTree(cap, branching, top)
    ref = np.zeros(cap)
    is_set = np.zeros(cap, bool)
    for raw_idx, raw_val, clear in ops:
        idx = np.array(raw_idx) % cap
        val = np.resize(np.array(raw_val), idx.shape)
        if clear:
            tree.clear(idx)
            ref[idx] = 0.0
            is_set[idx] = False
        else:
            tree[idx] = val
            ref[idx] = val  # duplicates: the last one wins in both
            is_set[idx] = True
        assert tree.sum() == pytest.approx(ref.sum(), rel=1e-9, abs=1e-9)
        assert tree.min() == (ref[is_set].min() if is_set.any() else np.inf)
        np.testing.assert_array_equal(tree.leaves, ref)
        np.testing.assert_array_equal(tree.is_set(np.arange(cap)), is_set)
        if ref.sum() > 0:
            q = np.linspace(0, ref.sum(), 37, endpoint=False)
            got = tree.find_prefix_sum_idx(q)
            assert (ref[got] > 0).all()
            exp = np.searchsorted(np.cumsum(ref), q, side="right")
            assert (got != exp).sum() <= 1  # a query exactly on a boundary may round
            u = np.linspace(0, 1, 41, endpoint=False)
            fast = tree.sample(u)  # the unguarded fast descent
            assert (ref[fast] > 0).all()
            assert (fast != tree.find_prefix_sum_idx(u * tree.sum())).sum() <= 1


def test_tree_prefix_sum_exact_small_case():
    tree = SumMinTree(5, branching=2, top=1)
    tree[[0, 1, 2, 3, 4]] = [1.0, 0.0, 2.0, 0.0, 3.0]
    got = tree.find_prefix_sum_idx([0.0, 0.5, 1.0, 2.99, 3.0, 5.99])
    assert got.tolist() == [0, 0, 2, 2, 4, 4]
    # a value past the total (rounding) lands on the last positive leaf
    assert tree.find_prefix_sum_idx([6.0]).tolist() == [4]


def test_tree_sample_falls_back_when_rounding_hits_an_empty_node():
    tree = SumMinTree(5000)
    tree[[3]] = 2.0
    # u = 1 maps past the total: the fast descent lands on an empty leaf, the exact one on 3
    assert tree.sample(np.array([1.0, 0.5])).tolist() == [3, 3]


def test_tree_bad_input():
    with pytest.raises(ValueError, match="capacity"):
        SumMinTree(0)
    tree = SumMinTree(4)
    with pytest.raises(IndexError, match=r"expected indices in \[0, 4\), got \[4\]"):
        tree[[4]] = 1.0
    with pytest.raises(ValueError, match="finite non-negative"):
        tree[[0]] = -1.0
    with pytest.raises(ValueError, match="finite non-negative"):
        tree[[0, 1]] = [1.0, float("nan")]
    with pytest.raises(ValueError, match="expected a scalar or 2 values"):
        tree[[0, 1]] = [1.0, 2.0, 3.0]
    assert tree.sum() == 0 and tree.min() == np.inf
    with pytest.raises(ValueError, match="sums to 0"):
        tree.sample(np.array([0.5]))


def test_tree_state_roundtrip_large():
    rng = np.random.default_rng(0)
    tree = SumMinTree(5000)
    idx = rng.integers(0, 5000, 3000)
    tree[idx] = rng.random(3000)
    other = SumMinTree(5000)
    other.load_state_dict(tree.state_dict())
    assert other.sum() == pytest.approx(tree.sum())
    assert other.min() == tree.min()
    u = rng.random(100)
    np.testing.assert_array_equal(other.sample(u), tree.sample(u))


def test_tree_sample_frequencies_large_capacity():
    rng = np.random.default_rng(1)
    cap = 70_000  # several levels with K=16, top=1024
    tree = SumMinTree(cap)
    hot = np.array([3, 40_000, 69_999])
    tree[np.arange(cap)] = 1e-3
    tree[hot] = [10.0, 20.0, 30.0]
    draws = tree.sample(rng.random(20_000))
    total = tree.sum()
    counts = np.array([(draws == h).sum() for h in hot] + [(~np.isin(draws, hot)).sum()])
    probs = np.array([10.0, 20.0, 30.0, (cap - 3) * 1e-3]) / total
    assert _chi2_ok(counts, probs)


# -------------------------------------------------------------------------- sampler
def test_sampler_in_plain_torchrl_replay_buffer(tmp_path):
    gen = torch.Generator().manual_seed(0)
    sampler = PrioritizedSampler(16, alpha=1.0, beta=0.5)
    rb = TorchRLReplayBuffer(storage=LazyTensorStorage(16), sampler=sampler, generator=gen)
    rb.extend(torch.arange(10.0))
    # new items got the max priority (1.0 ** alpha)
    np.testing.assert_allclose(sampler.tree.leaves[:10], 1.0)
    assert sampler.tree.leaves[10:].sum() == 0
    rb.update_priority(torch.arange(10), torch.tensor([0.0] * 9 + [9.0]))
    assert sampler.max_priority == pytest.approx(9.0 + EPS)
    data, info = rb.sample(4000, return_info=True)
    frac9 = float((data == 9.0).float().mean())
    assert frac9 == pytest.approx(1.0, abs=1e-3)  # the others have priority eps
    w = info["priority_weight"]
    # w = (p / min p) ** -beta with min p = eps (alpha = 1)
    expected = ((9.0 + EPS) / EPS) ** -0.5
    assert float(w[data == 9.0][0]) == pytest.approx(expected)
    # a new item gets the running max priority
    rb.extend(torch.tensor([42.0]))
    assert sampler.tree.leaves[10] == pytest.approx(9.0 + EPS)
    # state_dict / load_state_dict and dumps / loads
    sd = rb.state_dict()
    rb2 = TorchRLReplayBuffer(
        storage=LazyTensorStorage(16), sampler=PrioritizedSampler(16, alpha=1.0, beta=0.5)
    )
    rb2.load_state_dict(sd)
    np.testing.assert_array_equal(rb2.sampler.tree.leaves, sampler.tree.leaves)
    sampler.dumps(tmp_path / "s")
    fresh = PrioritizedSampler(16, alpha=0.3, beta=0.1)
    fresh.loads(tmp_path / "s")
    np.testing.assert_array_equal(fresh.tree.leaves, sampler.tree.leaves)
    assert (fresh.alpha, fresh.beta, fresh.max_priority) == (1.0, 0.5, sampler.max_priority)
    rb.empty()
    assert sampler.tree.sum() == 0 and sampler.max_priority == 1.0


def test_sampler_same_seed_same_samples():
    def draw(seed):
        rb = TorchRLReplayBuffer(
            storage=LazyTensorStorage(64),
            sampler=PrioritizedSampler(64, alpha=0.7, beta=0.4),
            generator=torch.Generator().manual_seed(seed),
        )
        rb.extend(torch.arange(50.0))
        rb.update_priority(torch.arange(50), torch.linspace(0.1, 5.0, 50))
        return rb.sample(32, return_info=True)

    a, b, c = draw(3), draw(3), draw(4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1]["index"], b[1]["index"])
    assert not torch.equal(a[0], c[0])


def test_sampler_bad_input_leaves_state():
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedSampler(4, alpha=0.0, beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        PrioritizedSampler(4, alpha=0.5, beta=-0.1)
    s = PrioritizedSampler(4, alpha=1.0, beta=1.0)
    s.init_priority([0, 1])
    before = s.tree.leaves.copy()
    with pytest.raises(ValueError, match=r"priority: expected numbers >= 0"):
        s.update_priority([0, 1], [1.0, -2.0])
    with pytest.raises(ValueError, match="expected 2 values"):
        s.update_priority([0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        s.update_priority([0, 1], [1.0, float("inf")])
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        s.update_priority([0, 7], [1.0, 1.0])
    np.testing.assert_array_equal(s.tree.leaves, before)
    assert s.max_priority == 1.0


# --------------------------------------------------------------------------- buffers
def _filled(n=6, alpha=1.0, beta=1.0, **kw):
    buf = PrioritizedReplayBuffer(8, alpha=alpha, beta=beta, seed=0, **kw)
    for i in range(n):
        buf.add(_step(i))
    return buf


def test_new_items_get_max_priority_and_update():
    buf = _filled(alpha=0.5)
    np.testing.assert_allclose(buf.prio_sampler.tree.leaves[:6], 1.0)
    buf.update_weight(np.array([1, 2]), torch.tensor([-4.0, 0.25]))  # abs of TD errors
    leaves = buf.prio_sampler.tree.leaves
    assert leaves[1] == pytest.approx((4.0 + EPS) ** 0.5)
    assert leaves[2] == pytest.approx((0.25 + EPS) ** 0.5)
    buf.add(_step(6))
    assert leaves[6] == pytest.approx((4.0 + EPS) ** 0.5)  # running max, alpha-powered
    buf.update_weight([1], [0.1])
    buf.add(_step(7))
    assert leaves[7] == pytest.approx((4.0 + EPS) ** 0.5)  # the max never decreases


def test_weights_exact_small_case():
    # priorities 1, 2, 4, 8 with alpha = 1, beta = 0.5
    buf = _filled(n=4, alpha=1.0, beta=0.5, weight_norm=False)
    buf.update_weight([0, 1, 2, 3], [1.0, 2.0, 4.0, 8.0])
    p = np.array([1.0, 2.0, 4.0, 8.0]) + EPS
    np.testing.assert_allclose(buf.get_weight([0, 1, 2, 3]), (p / p[0]) ** -0.5)
    np.testing.assert_allclose(buf[[3, 2]].weight.numpy(), (p[[3, 2]] / p[0]) ** -0.5, rtol=1e-6)
    # alpha-powered in numerator and minimum (tdrl's deviation): alpha = 0.5
    buf2 = _filled(n=4, alpha=0.5, beta=1.0, weight_norm=False)
    buf2.update_weight([0, 1, 2, 3], [1.0, 4.0, 9.0, 16.0])
    pa = (np.array([1.0, 4.0, 9.0, 16.0]) + EPS) ** 0.5
    np.testing.assert_allclose(buf2.get_weight([1, 3]), pa[[1, 3]] ** -1 * pa[0])
    # weight_norm: divided by the batch max = (p_i / min_batch p) ** -beta
    buf3 = _filled(n=4, alpha=1.0, beta=0.5, weight_norm=True)
    buf3.update_weight([0, 1, 2, 3], [1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(buf3[[2, 3]].weight.numpy(), [1.0, 0.5**0.5], rtol=1e-6)
    assert buf3[2].weight.item() == 1.0
    # beta updates apply to the next batch
    buf3.set_beta(1.0)
    np.testing.assert_allclose(buf3[[2, 3]].weight.numpy(), [1.0, 0.5], rtol=1e-6)


def test_sampling_frequencies_follow_priorities():
    buf = PrioritizedReplayBuffer(16, alpha=0.6, beta=0.4, seed=123)
    for i in range(10):
        buf.add(_step(i))
    prio = np.arange(1, 11, dtype=np.float64)
    buf.update_weight(np.arange(10), prio)
    idx = buf.sample_indices(30_000)
    counts = np.bincount(idx, minlength=16)
    p = np.zeros(16)
    p[:10] = (prio + EPS) ** 0.6
    assert _chi2_ok(counts, p / p.sum())
    batch, _ = buf.sample(64)
    assert batch.weight.shape == (64,) and batch.weight.dtype == torch.float32
    assert float(batch.weight.max()) == 1.0


def test_vector_buffer_samples_all_rings_by_priority():
    buf = PrioritizedVectorReplayBuffer(40, 4, alpha=1.0, beta=0.4, seed=7)
    for i in range(3):
        buf.add(_step(i, n=4, done=i == 2))
    valid = buf.sample_indices(0)
    assert valid.tolist() == [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]
    buf.update_weight(valid, np.where(valid >= 30, 3.0, 1.0))
    idx = buf.sample_indices(20_000)
    assert set(np.unique(idx).tolist()) == set(valid.tolist())
    p = np.zeros(40)
    p[valid] = np.where(valid >= 30, 3.0, 1.0) + EPS
    assert _chi2_ok(np.bincount(idx, minlength=40), p / p.sum())
    ptr, *_ = buf.add(_step(3, n=2), buffer_ids=[1, 3])
    assert ptr.tolist() == [13, 33]
    assert buf.prio_sampler.tree.leaves[[13, 33]].tolist() == pytest.approx([3 + EPS] * 2)


def test_same_seed_same_samples_and_weights():
    def run(seed):
        buf = PrioritizedVectorReplayBuffer(64, 4, alpha=0.6, beta=0.4, seed=seed)
        for i in range(10):
            buf.add(_step(i, n=4))
        buf.update_weight(buf.sample_indices(0), np.linspace(0.1, 3, 40))
        batch, idx = buf.sample(32)
        return batch.weight, idx

    (w1, i1), (w2, i2), (_, i3) = run(5), run(5), run(6)
    assert np.array_equal(i1, i2) and torch.equal(w1, w2)
    assert not np.array_equal(i1, i3)


def test_update_weight_bad_input_leaves_buffer_unchanged():
    buf = _filled(n=4)
    before = buf.prio_sampler.tree.leaves.copy()
    max_before = buf.prio_sampler.max_priority
    with pytest.raises(ValueError, match=r"new_weight: expected 2 values \(one per index\), got 3"):
        buf.update_weight([0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="new_weight: expected finite numbers"):
        buf.update_weight([0, 1], [1.0, float("nan")])
    with pytest.raises(IndexError, match=r"index: expected indices in \[0, 8\), got \[8\]"):
        buf.update_weight([0, 8], [1.0, 1.0])
    with pytest.raises(IndexError, match=r"stored transitions, got empty slots \[5\]"):
        buf.update_weight([0, 5], [1.0, 1.0])
    with pytest.raises(TypeError, match="integer indices"):
        buf.update_weight(np.array([0.5]), [1.0])
    np.testing.assert_array_equal(buf.prio_sampler.tree.leaves, before)
    assert buf.prio_sampler.max_priority == max_before
    with pytest.raises(ValueError, match="alpha: expected a finite number > 0, got 0"):
        PrioritizedReplayBuffer(8, alpha=0, beta=0.5)
    with pytest.raises(ValueError, match="beta: expected a finite number >= 0, got -1"):
        PrioritizedVectorReplayBuffer(8, 2, alpha=0.5, beta=-1)
    with pytest.raises(ValueError, match="beta"):
        buf.set_beta(-0.5)
    assert buf.prio_sampler.beta == 1.0


def test_reset_update_and_sample_special_sizes():
    buf = _filled(n=3)
    assert len(buf.sample_indices(0)) == 3
    assert len(buf.sample_indices(-1)) == 0
    assert sorted(buf.sample_indices(None).tolist()) == [0, 1, 2]
    buf.reset()
    assert buf.prio_sampler.tree.sum() == 0
    with pytest.raises(ValueError, match="empty"):
        buf.sample(4)
    src = _filled(n=5)
    src.update_weight([0], [7.0])
    dst = PrioritizedReplayBuffer(8, alpha=1.0, beta=1.0)
    dst.add(_step(0))
    new = dst.update(src)
    assert new.tolist() == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(dst.prio_sampler.tree.leaves[:6], 1.0)


def test_persistence_keeps_priorities(tmp_path):
    pytest.importorskip("h5py")
    buf = _filled(n=5, alpha=0.5, beta=0.3)
    buf.update_weight([0, 1, 2, 3, 4], [5.0, 1.0, 2.0, 0.5, 3.0])
    path = tmp_path / "buf.h5"
    buf.save_hdf5(path)
    loaded = PrioritizedReplayBuffer.load_hdf5(path)
    np.testing.assert_array_equal(loaded.prio_sampler.tree.leaves, buf.prio_sampler.tree.leaves)
    assert loaded.options["alpha"] == 0.5 and loaded.options["beta"] == 0.3
    assert np.array_equal(loaded.sample_indices(50), buf.sample_indices(50))
    twin = PrioritizedReplayBuffer(8, alpha=0.5, beta=0.3)
    twin.load_state_dict(buf.state_dict())
    np.testing.assert_array_equal(twin.prio_sampler.tree.leaves, buf.prio_sampler.tree.leaves)
    assert twin.prio_sampler.max_priority == buf.prio_sampler.max_priority
    clone = pickle.loads(pickle.dumps(buf))
    np.testing.assert_array_equal(clone.prio_sampler.tree.leaves, buf.prio_sampler.tree.leaves)
    torch.testing.assert_close(clone[[0, 1]].weight, buf[[0, 1]].weight)


# ------------------------------------------------------------------------- tianshou
def test_matches_tianshou_distribution_and_weights():
    ts = pytest.importorskip("tianshou.data")
    alpha, beta = 0.6, 0.4
    ours = PrioritizedVectorReplayBuffer(48, 3, alpha=alpha, beta=beta, seed=0)
    theirs = ts.PrioritizedVectorReplayBuffer(48, 3, alpha=alpha, beta=beta)
    rng = np.random.default_rng(0)
    for i in range(9):
        done = rng.random(3) < 0.2
        step = _step(i, n=3)
        step["terminated"] = done
        ours.add(step)
        theirs.add(ts.Batch(**step, info={}))
    idx = ours.sample_indices(0)
    assert np.array_equal(idx, theirs.sample_indices(0))
    td = rng.normal(size=len(idx))
    ours.update_weight(idx, td)
    theirs.update_weight(idx, td)
    np.testing.assert_allclose(ours.prio_sampler.tree.leaves[idx], theirs.weight[idx])
    # same importance weights with batch normalisation (the global min cancels out)
    probe = rng.choice(idx, 16)
    np.testing.assert_allclose(ours[probe].weight.numpy(), theirs[probe].weight, rtol=1e-6)
    # same sampling distribution
    np.random.seed(0)
    t_counts = np.bincount(theirs.sample_indices(40_000), minlength=48)
    o_counts = np.bincount(ours.sample_indices(40_000), minlength=48)
    p = theirs.weight[np.arange(48)] / theirs.weight.reduce()
    assert _chi2_ok(t_counts, p) and _chi2_ok(o_counts, p)
