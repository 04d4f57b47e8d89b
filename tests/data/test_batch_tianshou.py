"""Differential tests: tdrl's Batch against Tianshou's on identical inputs.

Run in the Tianshou venv: ``/opt/tsenv/bin/python -m pytest tests/data/test_batch_tianshou.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tdrl.data.batch import Batch

ts = pytest.importorskip("tianshou")
TBatch = ts.data.Batch


def ts_dict(b: Any) -> dict[str, Any]:
    """A Tianshou Batch as a nested dict of numpy values."""
    out: dict[str, Any] = {}
    for key, value in b.items():
        if isinstance(value, TBatch):
            out[key] = ts_dict(value)
        elif isinstance(value, torch.Tensor):
            out[key] = value.numpy()
        else:
            out[key] = value
    return out


def same(ours: dict[str, Any], theirs: dict[str, Any], path: str = "") -> None:
    assert sorted(ours) == sorted(theirs), path
    for key in ours:
        a, b = ours[key], theirs[key]
        where = f"{path}.{key}"
        if isinstance(b, dict):
            assert isinstance(a, dict), where
            same(a, b, where)
            continue
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        assert a_arr.shape == b_arr.shape, where
        if b_arr.dtype == object or a_arr.dtype == object:
            assert a_arr.tolist() == b_arr.tolist(), where
        else:
            assert a_arr.dtype == b_arr.dtype, where
            np.testing.assert_array_equal(a_arr, b_arr, err_msg=where)


CONSTRUCT: list[Callable[[type], Any]] = [
    lambda B: B(a=4, b=[5, 5], c="2312312", d=("a", -2, -3)),
    lambda B: B(obs={"index": np.zeros((2, 3))}, act=np.zeros((2, 2))),
    lambda B: B(a=[False, True], b={"c": [2.0, "st"], "d": [1.0, 0.0]}),
    lambda B: B([{"a": {"b": [0.0, "info"]}}]),
    lambda B: B(a=1.5, i=[1, 2, 3], f=np.zeros(3, dtype=np.float32)),
    lambda B: B(info=np.array([{"env_id": 0}, {"env_id": 1}], dtype=object), obs=np.ones((2, 4))),
    lambda B: B([{"x": 1.0, "y": [1, 2]}, {"x": 2.0, "y": [3, 4]}]),
]


@pytest.mark.parametrize("make", CONSTRUCT)
def test_construction_matches(make: Callable[[type], Any]) -> None:
    same(make(Batch).to_numpy(), ts_dict(make(TBatch)))


def test_index_and_leafwise_setitem_match() -> None:
    ours = Batch(obs={"index": np.zeros((2, 3))}, act=np.zeros((2, 2)))
    theirs = TBatch(obs={"index": np.zeros((2, 3))}, act=np.zeros((2, 2)))
    ours[:, 1] += 6
    theirs[:, 1] += 6
    same(ours.to_numpy(), ts_dict(theirs))
    same(ours[-1].to_numpy(), ts_dict(theirs[-1]))
    o2 = Batch(a=np.array([[0.0, 2.0], [1.0, 3.0]]), b=[[5, -5]])
    t2 = TBatch(a=np.array([[0.0, 2.0], [1.0, 3.0]]), b=[[5, -5]])
    same(o2[0].to_numpy(), ts_dict(t2[0]))
    o2[:, 1] += 1
    t2[:, 1] += 1
    same(o2.to_numpy(), ts_dict(t2))


@pytest.mark.parametrize("seed", range(5))
def test_random_index_matches(seed: int) -> None:
    rng = np.random.default_rng(seed)
    obs, act, nest = rng.normal(size=(8, 3)), rng.integers(0, 4, 8), rng.normal(size=(8, 2))
    ours = Batch(obs=obs, act=act, n={"x": nest})
    theirs = TBatch(obs=obs, act=act, n={"x": nest})
    for index in (rng.integers(0, 8, 5), slice(2, 7, 2), rng.random(8) > 0.5, 3, -2):
        same(ours[index].to_numpy(), ts_dict(theirs[index]))


def test_stack_cat_split_inconsistent_keys_match() -> None:
    def members(B: type) -> list[Any]:
        return [B(a=np.array([0.0, 2.0]), b=5), B(a=np.array([1.0, 3.0]), b=-5)]

    same(Batch.stack(members(Batch)).to_numpy(), ts_dict(TBatch.stack(members(TBatch))))
    s_o, s_t = Batch.stack(members(Batch)), TBatch.stack(members(TBatch))
    for c_o, c_t in zip(s_o.split(1, False), s_t.split(1, False)):
        same(c_o.to_numpy(), ts_dict(c_t))
    same(
        Batch.cat(list(s_o.split(1, False))).to_numpy(),
        ts_dict(TBatch.cat(list(s_t.split(1, False)))),
    )

    def ragged(B: type) -> list[Any]:
        return [B(a=np.array([0.0, 2.0])), B(a=np.array([1.0, 3.0]), b="done")]

    same(Batch.stack(ragged(Batch)).to_numpy(), ts_dict(TBatch.stack(ragged(TBatch))))

    # Tianshou 2.0.1's Batch.cat rejects members with different keys; tdrl fills them
    # (tested in test_batch.py::test_cat_fills_and_skips_empty).
    with pytest.raises(ValueError):
        TBatch.cat([TBatch(a=np.zeros((2, 3))), TBatch(b=np.ones(1), a=np.ones((1, 3)))])


@pytest.mark.parametrize(("size", "merge"), [(1, False), (2, True), (3, False), (-1, False)])
def test_split_lengths_match(size: int, merge: bool) -> None:
    ours = Batch(a=np.arange(7))
    theirs = TBatch(a=np.arange(7))
    got = [c.a.tolist() for c in ours.split(size, shuffle=False, merge_last=merge)]
    want = [c.a.tolist() for c in theirs.split(size, shuffle=False, merge_last=merge)]
    assert got == want


def test_empty_matches() -> None:
    def make(B: type) -> Any:
        return B(a=[False, True], b={"c": [2.0, "st"], "d": [1.0, 0.0]})

    o, t = make(Batch), make(TBatch)
    o[0] = Batch.empty(o[1])
    t[0] = TBatch.empty(t[1])
    same(o.to_numpy(), ts_dict(t))
    same(make(Batch).empty_().to_numpy(), ts_dict(make(TBatch).empty_()))
    same(make(Batch).empty_(1).to_numpy(), ts_dict(make(TBatch).empty_(1)))


def test_shapes_and_len_match() -> None:
    for make in (
        lambda B: B(a=[5.0, 4.0], b=np.zeros((2, 3, 4))),
        lambda B: B(a=4, b=[5, 5]),
        lambda B: B(obs=np.zeros((4, 3)), act=np.zeros(4)),
    ):
        o, t = make(Batch), make(TBatch)
        assert list(o.shape) == list(t.shape)
        if t.shape:
            assert len(o) == len(t)
        else:
            with pytest.raises(TypeError):
                len(o)


def test_arithmetic_matches() -> None:
    o = Batch(x=np.array([1.0, 2.0]), n={"y": np.array([3.0, 4.0])})
    t = TBatch(x=np.array([1.0, 2.0]), n={"y": np.array([3.0, 4.0])})
    same((o + 1).to_numpy(), ts_dict(t + 1))
    same((o * 2).to_numpy(), ts_dict(t * 2))
    same((o / 2).to_numpy(), ts_dict(t / 2))
    same((o - 1).to_numpy(), ts_dict(t + (-1)))  # Tianshou has no __sub__
