"""Hypothesis property tests: stack / cat / split / index / setitem round trips of Batch."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.data.batch import Batch

SETTINGS = settings(max_examples=30, deadline=None)
DTYPES = [np.float32, np.float64, np.int64, np.bool_]


Schema = dict[str, tuple[tuple[int, ...], type]]


@st.composite
def schemas(draw: st.DrawFn, keys: list[str] | None = None) -> Schema:
    """Trailing shape and dtype of each tensor key."""
    keys = keys or draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, unique=True))
    return {
        k: (draw(st.sampled_from([(), (2,), (3, 2)])), draw(st.sampled_from(DTYPES))) for k in keys
    }


def make_batch(schema: Schema, n: int, seed: int) -> Batch:
    """A Batch of ``n`` samples following ``schema``, plus a nested Batch and a string column."""
    rng = np.random.default_rng(seed)
    data: dict[str, object] = {
        k: (rng.normal(size=(n, *trail)) * 10).astype(dtype) for k, (trail, dtype) in schema.items()
    }
    data["nest"] = {"x": rng.integers(0, 9, size=(n, 2))}
    data["tag"] = [f"s{i}" for i in rng.integers(0, 99, size=n)]
    return Batch(data, batch_size=[n])


@st.composite
def batches(draw: st.DrawFn, n: int | None = None, schema: Schema | None = None) -> Batch:
    """A random Batch (see :func:`make_batch`)."""
    n = draw(st.integers(1, 6)) if n is None else n
    schema = draw(schemas()) if schema is None else schema
    return make_batch(schema, n, draw(st.integers(0, 2**16)))


def assert_same(x: Batch, y: Batch) -> None:
    assert x.batch_size == y.batch_size
    assert sorted(x.keys()) == sorted(y.keys())
    for key in list(x.keys()):
        a, b = x[key], y[key]
        if isinstance(a, Batch):
            assert_same(a, b)
        elif isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype
            assert torch.equal(a, b)
        else:
            assert np.asarray(a).tolist() == np.asarray(b).tolist()


@SETTINGS
@given(st.data())
def test_stack_then_index_recovers_members(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    schema = data.draw(schemas())
    members = [data.draw(batches(n=n, schema=schema)) for _ in range(data.draw(st.integers(1, 4)))]
    stacked = Batch.stack(members)
    assert stacked.batch_size == torch.Size([len(members), n])
    for i, m in enumerate(members):
        assert_same(stacked[i], m)


@SETTINGS
@given(st.data())
def test_cat_then_slice_recovers_members(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    members = [data.draw(batches(schema=schema)) for _ in range(data.draw(st.integers(1, 4)))]
    cat = Batch.cat(members)
    start = 0
    for m in members:
        assert_same(cat[start : start + len(m)], m)
        start += len(m)
    assert len(cat) == start


@SETTINGS
@given(batches(), st.integers(-1, 7), st.booleans())
def test_split_then_cat_is_identity(b: Batch, size: int, merge_last: bool) -> None:
    if size == 0:
        size = 1
    chunks = b.split(size, shuffle=False, merge_last=merge_last)
    eff = len(b) if size == -1 else size
    assert all(len(c) >= 1 for c in chunks)
    if not merge_last:
        assert all(len(c) == eff for c in chunks[:-1])
    else:
        assert all(len(c) == eff for c in chunks[:-1])
        assert len(chunks[-1]) < 2 * eff or len(chunks) == 1
    assert_same(Batch.cat(chunks), b)


@SETTINGS
@given(batches(), st.data())
def test_index_matches_leafwise_numpy(b: Batch, data: st.DataObject) -> None:
    n = len(b)
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=8)))
    sub = b[idx]
    assert isinstance(sub, Batch) and isinstance(sub.nest, Batch)
    for key in ["a", "b", "c"]:
        if key in b:
            np.testing.assert_array_equal(sub[key].numpy(), b[key].numpy()[idx])
    np.testing.assert_array_equal(sub.nest.x.numpy(), b.nest.x.numpy()[idx])
    assert sub.tag.tolist() == np.asarray(b.tag)[idx].tolist()
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    assert len(b[mask]) == int(mask.sum())


@SETTINGS
@given(st.data())
def test_setitem_round_trip(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 6))
    b = data.draw(batches(n=n, schema={"a": ((2,), np.float32)}))
    other = b.clone().apply(lambda t: t if t.dtype == torch.bool else t + 1)
    idx = np.unique(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1))))
    target = b.clone()
    target[idx] = other[idx]
    assert_same(target[idx], other[idx])
    rest = np.setdiff1d(np.arange(n), idx)
    if rest.size:  # an empty index cannot select from a NonTensorStack (tensordict limit)
        assert_same(target[rest], b[rest])


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5))
def test_stack_fills_missing_keys_with_zeros(n_with: int, n_without: int) -> None:
    with_key = [Batch(a=np.ones(2), z=np.full(3, 7.0)) for _ in range(n_with)]
    without = [Batch(a=np.zeros(2)) for _ in range(n_without)]
    s = Batch.stack(with_key + without)
    assert s.z.shape == (n_with + n_without, 3)
    assert (s.z[:n_with] == 7).all() and (s.z[n_with:] == 0).all()


@SETTINGS
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 3),
    st.data(),
)
def test_leafwise_index_matches_numpy(n: int, m: int, k: int, data: st.DataObject) -> None:
    """An index past the batch dims is applied to each entry, as numpy would."""
    a = np.arange(n * m * k, dtype=np.float64).reshape(n, m, k)
    c = np.arange(n * m).reshape(n, m) * 10
    b = Batch(a=a.copy(), n={"c": c.copy()}, batch_size=[n])  # no shared memory
    j = data.draw(st.integers(-m, m - 1))
    rows = data.draw(st.sampled_from([slice(None), slice(0, 1), np.arange(n)[::-1].copy()]))
    got = b[rows, j]
    np.testing.assert_array_equal(got.a.numpy(), a[rows, j])
    np.testing.assert_array_equal(got.n.c.numpy(), c[rows, j])
    b[rows, j] = Batch(a=np.zeros_like(a[rows, j]), n={"c": np.zeros_like(c[rows, j])})
    a[rows, j] = 0
    c[rows, j] = 0
    np.testing.assert_array_equal(b.a.numpy(), a)
    np.testing.assert_array_equal(b.n.c.numpy(), c)
