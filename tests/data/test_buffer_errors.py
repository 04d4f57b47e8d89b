"""Bad input: a clear error naming key, expected and actual; the buffer is left unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer


def vstep(n: int = 2, **over: object) -> dict:
    batch: dict = {
        "obs": np.zeros((n, 3), np.float32),
        "act": np.zeros(n, np.int64),
        "rew": np.ones(n),
        "terminated": np.zeros(n, bool),
        "truncated": np.zeros(n, bool),
    }
    batch.update(over)
    return {k: v for k, v in batch.items() if v is not None}


def _snapshot(buf: ReplayBuffer) -> dict:
    st = buf._storage
    snap = {".".join(k): v.numpy().tolist() for k, v in st.columns.items()}
    snap.update({k: np.asarray(v).tolist() for k, v in st.meta_state().items()})
    snap["rng"] = buf.generator.get_state().tolist()
    snap["stop"] = st.stop.tolist()
    return snap


@pytest.fixture
def vbuf() -> VectorReplayBuffer:
    buf = VectorReplayBuffer(8, 2, seed=0)
    buf.add(vstep())
    buf.add(vstep(terminated=np.array([True, False])))
    return buf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"act": None}, r"missing reserved key\(s\) \['act'\]"),
        (
            {"obs": np.zeros((3, 3), np.float32)},
            r"obs: expected leading dimension 2.*got shape \(3, 3\)",
        ),
        (
            {"obs": np.zeros((2, 4), np.float32)},
            r"obs: expected per-transition shape \(3,\), got \(4,\)",
        ),
        (
            {"act": np.zeros(2, np.float64)},
            r"act: expected dtype int64, got float64 \(float values into an integer column\)",
        ),
        ({"terminated": np.zeros((2, 2), bool)}, r"terminated: expected shape \(2,\)"),
        ({"obs": np.array(["a", "b"])}, r"obs: expected a numeric or boolean array"),
    ],
)
def test_bad_batch_leaves_buffer_unchanged(
    vbuf: VectorReplayBuffer, kwargs: dict, match: str
) -> None:
    before = _snapshot(vbuf)
    with pytest.raises((ValueError, TypeError), match=match):
        vbuf.add(vstep(**kwargs))
    assert _snapshot(vbuf) == before
    vbuf.add(vstep())  # still usable


def test_bad_extra_key_does_not_allocate(vbuf: VectorReplayBuffer) -> None:
    keys = set(vbuf._storage.columns)
    with pytest.raises(ValueError, match="obs: expected per-transition shape"):
        vbuf.add(vstep(obs=np.zeros((2, 5), np.float32), extra=np.ones(2)))
    assert set(vbuf._storage.columns) == keys


@pytest.mark.parametrize(
    ("ids", "match"),
    [
        ([0, 2], r"buffer_ids: expected ids in \[0, 2\), got \[0, 2\]"),
        ([-1, 0], r"buffer_ids: expected ids in \[0, 2\)"),
        ([1, 1], r"buffer_ids: expected distinct ids, got \[1, 1\]"),
    ],
)
def test_bad_buffer_ids(vbuf: VectorReplayBuffer, ids: list, match: str) -> None:
    before = _snapshot(vbuf)
    with pytest.raises(ValueError, match=match):
        vbuf.add(vstep(), buffer_ids=ids)
    assert _snapshot(vbuf) == before


def test_leading_dim_vs_buffer_ids(vbuf: VectorReplayBuffer) -> None:
    with pytest.raises(ValueError, match=r"leading dimension 1 \(= len\(buffer_ids\)\)"):
        vbuf.add(vstep(), buffer_ids=[1])


def test_single_buffer_buffer_ids() -> None:
    buf = ReplayBuffer(4)
    buf.add(vstep(1), buffer_ids=[0])
    with pytest.raises(ValueError, match=r"expected ids in \[0, 1\)"):
        buf.add(vstep(1), buffer_ids=[1])
    assert len(buf) == 1


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: ReplayBuffer(0), r"size: expected a positive integer, got 0"),
        (lambda: ReplayBuffer(-3), r"size: expected a positive integer, got -3"),
        (lambda: ReplayBuffer(4, stack_num=0), r"stack_num: expected an integer >= 1, got 0"),
        (lambda: VectorReplayBuffer(4, 0), r"buffer_num: expected a positive integer, got 0"),
        (lambda: VectorReplayBuffer(0, 2), r"total_size: expected a positive integer, got 0"),
        (lambda: ReplayBuffer(4, bogus=1), r"unexpected keyword arguments \['bogus'\]"),
    ],
)
def test_bad_constructor(factory, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        factory()


def test_sampling_empty_buffer() -> None:
    buf = VectorReplayBuffer(8, 2)
    with pytest.raises(ValueError, match=r"empty buffer: expected len\(buffer\) > 0, got 0"):
        buf.sample(4)
    with pytest.raises(ValueError, match="empty buffer"):
        buf.sample_indices(4)
    assert buf.sample_indices(0).tolist() == []
    assert buf.sample_indices(None).tolist() == []


def test_update_errors() -> None:
    with pytest.raises(NotImplementedError):
        VectorReplayBuffer(8, 2).update(ReplayBuffer(4))
    buf = ReplayBuffer(4)
    buf.add({"obs": np.zeros(3), "act": 0, "rew": 0.0, "terminated": False, "truncated": False})
    other = ReplayBuffer(4)
    other.add({"obs": np.zeros(2), "act": 0, "rew": 0.0, "terminated": False, "truncated": False})
    with pytest.raises(ValueError, match=r"obs: expected per-transition shape \(3,\)"):
        buf.update(other)
    assert len(buf) == 1


def test_missing_column_get() -> None:
    buf = ReplayBuffer(4)
    buf.add({"obs": 1, "act": 0, "rew": 0.0, "terminated": False, "truncated": False})
    with pytest.raises(KeyError, match="obs_next: no such column"):
        buf.get(0, "obs_next")
    assert buf.get(0, "obs_next", default=-1) == -1
    with pytest.raises(AttributeError, match="no attribute or column 'nothing'"):
        _ = buf.nothing


def test_nested_input_checked_after_fast_path() -> None:
    buf = VectorReplayBuffer(8, 2)
    good = vstep(obs={"x": np.zeros((2, 3), np.float32)}, info={"id": np.arange(2)})
    buf.add(good)
    buf.add(good)
    assert buf._fast_plan is not None and buf._fast_plan.struct is not None
    before = _snapshot(buf)
    with pytest.raises(
        ValueError, match=r"obs.x: expected per-transition shape \(3,\), got \(4,\)"
    ):
        buf.add(vstep(obs={"x": np.zeros((2, 4), np.float32)}, info={"id": np.arange(2)}))
    with pytest.raises(ValueError, match=r"info.id: expected dtype int64, got float64"):
        buf.add(vstep(obs={"x": np.zeros((2, 3), np.float32)}, info={"id": np.zeros(2)}))
    assert _snapshot(buf) == before
    # a key that is missing now is zero-filled in the written rows
    buf.add(vstep(obs={"x": np.ones((2, 3), np.float32)}))
    assert buf.info.id[buf.last_index].tolist() == [0, 0]


def test_batch_with_empty_info_fast_path_then_other_layouts() -> None:
    """A ``Batch`` with ``info={}`` takes the cached TensorDict path; a later ``info`` with
    keys, or a non-empty ``policy``, leaves it for the checked path and stores the same
    rows a dict input does."""
    from tdrl.data.batch import Batch

    rng = np.random.default_rng(0)
    steps = [
        vstep(obs=rng.normal(size=(2, 3)).astype(np.float32), rew=rng.normal(size=2))
        for _ in range(5)
    ]
    extra = [{}, {}, {"id": np.arange(2)}, {}, {}]
    ours, ref = VectorReplayBuffer(10, 2), VectorReplayBuffer(10, 2)
    for i, (step, info) in enumerate(zip(steps, extra)):
        ours.add(Batch(info=info, **step))
        ref.add({**step, "info": info} if info else step)
        if i == 1:  # the second add took the cached path, ``info`` seen as empty
            assert ours._fast_plan is not None and ours._fast_plan.td_empty == ("info",)
    for key in ("obs", "rew", "info.id"):
        a = ours[np.arange(10)].get(tuple(key.split(".")))
        b = ref[np.arange(10)].get(tuple(key.split(".")))
        assert torch.equal(a, b), key
    before = _snapshot(ours)
    with pytest.raises(ValueError, match=r"obs: expected per-transition shape \(3,\)"):
        ours.add(Batch(info={}, **vstep(obs=np.zeros((2, 4), np.float32))))
    assert _snapshot(ours) == before
