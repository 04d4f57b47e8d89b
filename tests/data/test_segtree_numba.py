"""The compiled (numba) sum-tree search against the numpy one: identical leaves, always."""

from __future__ import annotations

import numpy as np
import pytest

from tdrl.data.buffer import segtree
from tdrl.data.buffer.segtree import SumMinTree

pytest.importorskip("numba")


def _pair(capacity: int, index: np.ndarray, values: np.ndarray) -> tuple[SumMinTree, SumMinTree]:
    fast = SumMinTree(capacity, backend="numba")
    ref = SumMinTree(capacity, backend="numpy")
    fast[index] = values
    ref[index] = values
    return fast, ref


def _assert_same(fast: SumMinTree, ref: SumMinTree, uniform: np.ndarray) -> None:
    got, want = fast.sample(uniform), ref.sample(uniform)
    np.testing.assert_array_equal(got, want)
    assert (fast.leaves[got] > 0).all()
    total = ref.sum()
    values = uniform * total
    np.testing.assert_array_equal(fast.find_prefix_sum_idx(values), ref.find_prefix_sum_idx(values))


def test_backends_are_reported() -> None:
    assert SumMinTree(4, backend="numba").backend == "numba"
    assert SumMinTree(4, backend="numpy").backend == "numpy"
    assert SumMinTree(4).backend == "numba"  # the default when numba is installed


@pytest.mark.parametrize("capacity", [1, 7, 16, 17, 1000, 1025, 20_000, 300_000])
def test_random_trees_give_identical_leaves(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    for fill in (0.05, 0.5, 1.0):
        index = rng.integers(0, capacity, max(1, int(fill * capacity)))
        values = rng.random(index.size) * (rng.random(index.size) < 0.7)  # many zeros
        values[0] = 1.0
        fast, ref = _pair(capacity, index, values)
        _assert_same(fast, ref, rng.random(4096))
        _assert_same(fast, ref, np.array([0.0, np.nextafter(1.0, 0.0)]))


def test_boundaries_and_rounding_give_identical_leaves() -> None:
    rng = np.random.default_rng(0)
    capacity = 50_000
    index = np.arange(capacity)
    # magnitudes from 1e-300 to 1e300: prefix sums lose the small ones to rounding
    values = 10.0 ** rng.uniform(-300, 300, capacity) * (rng.random(capacity) < 0.5)
    values[-1] = 1e300
    fast, ref = _pair(capacity, index, values)
    _assert_same(fast, ref, rng.random(2048))
    # queries exactly at prefix sums, and at and past the total
    leaves = ref.leaves.copy()
    small = np.where(leaves > 0, 1.0 + rng.random(capacity), 0.0)
    fast, ref = _pair(capacity, index, small)
    csum = np.cumsum(small)
    at = np.concatenate([csum[::97], np.nextafter(csum[::89], 0.0), [ref.sum()]])
    np.testing.assert_array_equal(fast.find_prefix_sum_idx(at), ref.find_prefix_sum_idx(at))
    assert (fast.leaves[fast.find_prefix_sum_idx(at)] > 0).all()


def test_one_positive_leaf_is_always_drawn() -> None:
    for capacity in (5, 4096, 100_003):
        for leaf in (0, capacity // 2, capacity - 1):
            fast, ref = _pair(capacity, np.array([leaf]), np.array([1e-310]))  # subnormal
            u = np.linspace(0.0, np.nextafter(1.0, 0.0), 64)
            assert (fast.sample(u) == leaf).all()
            assert (ref.sample(u) == leaf).all()


def test_updates_then_search_stay_identical() -> None:
    rng = np.random.default_rng(3)
    fast, ref = _pair(10_000, np.arange(10_000), rng.random(10_000))
    for _ in range(20):
        idx = rng.integers(0, 10_000, 256)
        val = rng.random(256)
        fast[idx] = val
        ref[idx] = val
        gone = rng.integers(0, 10_000, 8)
        fast.clear(gone)
        ref.clear(gone)
        _assert_same(fast, ref, rng.random(256))


def test_numpy_fallback_when_numba_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segtree, "_load_kernel", lambda: None)
    assert not segtree.numba_available()
    tree = SumMinTree(8)
    assert tree.backend == "numpy"
    tree[[1, 3]] = [1.0, 3.0]
    assert tree.sample(np.array([0.1, 0.9])).tolist() == [1, 3]
    with pytest.raises(ImportError, match="backend: expected 'numba'"):
        SumMinTree(8, backend="numba")


def test_bad_backend_is_named() -> None:
    with pytest.raises(ValueError, match=r"backend: expected None, 'numba' or 'numpy', got 'c'"):
        SumMinTree(8, backend="c")


def test_the_kernel_is_compiled_before_the_first_search() -> None:
    SumMinTree(4)
    kernel = segtree._load_kernel()
    assert kernel is not None
    assert len(kernel.signatures) == 1  # type: ignore[attr-defined]
