"""Unit tests of tdrl.data.Batch: construction, access, indexing, combining, conversion, errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from tensordict import NonTensorStack, TensorDict, TensorDictBase

from tdrl.data.batch import Batch


# ------------------------------------------------------------------------- construction
def test_kwargs_dict_and_nested_dicts() -> None:
    b = Batch(obs={"pos": np.zeros((3, 2)), "vel": {"x": np.ones(3)}}, act=[1, 2, 3])
    c = Batch({"obs": {"pos": np.zeros((3, 2)), "vel": {"x": np.ones(3)}}, "act": [1, 2, 3]})
    for batch in (b, c):
        assert isinstance(batch, TensorDictBase)
        assert isinstance(batch.obs, Batch) and isinstance(batch.obs.vel, Batch)
        assert batch.batch_size == torch.Size([3])
        assert batch.obs.vel.x.tolist() == [1.0, 1.0, 1.0]
    assert b.obs.batch_size == torch.Size([3, 2]) or b.obs.batch_size[0] == 3


def test_dtype_policy() -> None:
    b = Batch(
        f=1.5,
        i=3,
        t=True,
        lf=[1.0, 2.0],
        li=[1, 2],
        lb=[True, False],
        f32=np.zeros(2, dtype=np.float32),
        f64=np.zeros(2),
        u8=np.zeros(2, dtype=np.uint8),
        npscalar=np.float32(2.0),
        tens=torch.zeros(2, dtype=torch.float16),
    )
    assert b.f.dtype == torch.float64 and b.lf.dtype == torch.float64
    assert b.i.dtype == torch.int64 and b.li.dtype == torch.int64
    assert b.t.dtype == torch.bool and b.lb.dtype == torch.bool
    assert b.f32.dtype == torch.float32 and b.f64.dtype == torch.float64
    assert b.u8.dtype == torch.uint8 and b.npscalar.dtype == torch.float32
    assert b.tens.dtype == torch.float16


def test_numpy_shares_memory_and_copy() -> None:
    arr = np.zeros(3)
    t = torch.zeros(3)
    b = Batch(a=arr, t=t)
    arr[0] = 7.0
    assert b.a[0].item() == 7.0
    assert b.t is t
    c = Batch(a=arr, t=t, copy=True)
    arr[1] = 5.0
    t[0] = 1.0
    assert c.a[1].item() == 0.0 and c.t[0].item() == 0.0


def test_readonly_and_negative_stride_arrays() -> None:
    ro = np.arange(4.0)
    ro.flags.writeable = False
    b = Batch(a=ro, r=np.arange(4)[::-1])
    assert b.a.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert b.r.tolist() == [3, 2, 1, 0]


def test_non_tensor_data() -> None:
    b = Batch(obs=np.zeros(2), labels=["x", "y"], meta=[{"k": 1}, {"k": 2}], batch_size=[2])
    assert b.labels.tolist() == ["x", "y"]
    assert isinstance(b.get("labels"), NonTensorStack)
    assert b[1].labels == "y"
    assert isinstance(b.meta, Batch) and b.meta.k.tolist() == [1, 2]
    b.tag = "shared"
    assert b[0].tag == "shared" and b.batch_size == torch.Size([2])
    c = Batch(x=None, o=object)
    assert c.x is None and c.o is object


def test_object_array_of_dicts_is_stacked() -> None:
    info = np.array([{"env_id": 0, "s": "a"}, {"env_id": 1, "s": "b"}], dtype=object)
    b = Batch(obs=np.zeros((2, 4)), info=info)
    assert b.batch_size == torch.Size([2])
    assert b.info.env_id.tolist() == [0, 1]
    assert b.info.s.tolist() == ["a", "b"]


def test_list_of_batches_and_tensors() -> None:
    b = Batch([Batch(a=1.0), Batch(a=2.0, b=[1, 2])])
    assert b.a.tolist() == [1.0, 2.0]
    assert b.b.tolist() == [[0, 0], [1, 2]]
    t = Batch(x=[torch.ones(2), torch.zeros(2)])
    assert t.x.shape == (2, 2)


def test_inferred_and_explicit_batch_size() -> None:
    assert Batch(a=np.zeros((4, 3)), b=np.zeros((4, 2))).batch_size == torch.Size([4])
    assert Batch(a=np.zeros((4, 3))).batch_size == torch.Size([4, 3])
    assert Batch(a=np.zeros(4), s=5).batch_size == torch.Size([])
    assert Batch(a=np.zeros((4, 3)), batch_size=[4]).batch_size == torch.Size([4])
    assert Batch(a=np.zeros(4), batch_size=4).batch_size == torch.Size([4])
    assert Batch().batch_size == torch.Size([])
    assert Batch(a=np.zeros(4), info={}).batch_size == torch.Size([4])


def test_from_tensordict_and_source_td() -> None:
    td = TensorDict({"a": torch.zeros(3), "n": {"x": torch.ones(3)}}, [3])
    b = Batch.from_tensordict(td)
    assert isinstance(b.n, Batch) and b.a is td["a"]
    c = Batch(td)
    assert c.batch_size == torch.Size([3]) and isinstance(c.n, Batch)


def test_device_and_lock_path() -> None:
    b = Batch(a=np.zeros(2), device="cpu")
    assert b.device == torch.device("cpu")
    assert b.a.device.type == "cpu"


# ---------------------------------------------------------------------- attribute access
def test_attribute_get_set_del_nested() -> None:
    b = Batch(obs={"index": np.arange(3)}, act=np.zeros(3))
    assert b.obs.index.tolist() == [0, 1, 2]
    b.rew = [1.0, 2.0, 3.0]
    assert b["rew"].tolist() == [1.0, 2.0, 3.0]
    b.obs.index = np.ones(3)
    assert b["obs", "index"].tolist() == [1.0, 1.0, 1.0]
    del b.rew
    assert "rew" not in b
    b["rew"] = np.zeros(3)
    assert "rew" in b and ("obs", "index") in b


def test_unknown_attribute_names_it() -> None:
    b = Batch(a=[1])
    with pytest.raises(AttributeError, match="'missing_key'"):
        _ = b.missing_key
    with pytest.raises(AttributeError):
        del b.missing_key


def test_mapping_api() -> None:
    b = Batch(a=[1, 2], b=[3, 4])
    assert list(b.keys()) == ["a", "b"]
    assert [v.tolist() for v in b.values()] == [[1, 2], [3, 4]]
    assert b.get("zz", None) is None
    assert b.pop("b").tolist() == [3, 4]
    b.update({"c": np.zeros(2)})
    assert sorted(b.keys()) == ["a", "c"]
    assert len(b) == 2 and "a" in b and "b" not in b


def test_empty_batch_adopts_first_entry_and_inferred_shrinks() -> None:
    b = Batch()
    b.obs = np.zeros((4, 3))
    assert b.batch_size == torch.Size([4, 3])
    b.act = np.zeros(4)
    assert b.batch_size == torch.Size([4])
    b.logits = np.zeros((4, 6))
    assert b.batch_size == torch.Size([4])
    with pytest.raises(ValueError, match=r"'bad' has shape \[5\].*batch size \[4\]"):
        b.bad = np.zeros(5)


def test_explicit_batch_size_does_not_shrink() -> None:
    b = Batch(a=np.zeros((4, 3)), batch_size=[4, 3])
    with pytest.raises(ValueError, match=r"'b' has shape \[4\].*\[4, 3\]"):
        b.b = np.zeros(4)


# ------------------------------------------------------------------------------ indexing
@pytest.mark.parametrize(
    "index",
    [
        1,
        -1,
        slice(1, 3),
        np.array([0, 2]),
        torch.tensor([3, 0]),
        torch.tensor([True, False, True, False]),
        np.array([False, True, True, False]),
        [0, 1],
    ],
)
def test_index_returns_batch(index: object) -> None:
    obs = np.arange(12.0).reshape(4, 3)
    b = Batch(obs=obs, info={"id": np.arange(4)}, batch_size=[4])
    sub = b[index]
    assert isinstance(sub, Batch) and isinstance(sub.info, Batch)
    np.testing.assert_array_equal(sub.obs.numpy(), obs[index])
    np.testing.assert_array_equal(sub.info.id.numpy(), np.arange(4)[index])


def test_multidim_index_within_and_past_batch_dims() -> None:
    b = Batch(a=np.arange(6).reshape(2, 3), batch_size=[2, 3])
    assert b[:, 1].a.tolist() == [1, 4]
    c = Batch(a=np.arange(6).reshape(2, 3), s="x", batch_size=[2])
    assert c[:, 1].a.tolist() == [1, 4]
    with pytest.raises(IndexError, match="'a'"):
        _ = c[:, :, 0]


def test_setitem_batch_and_missing_keys() -> None:
    b = Batch(a=np.zeros(3), b=np.ones(3), s=["x", "y", "z"], batch_size=[3])
    b[1] = Batch(a=5.0)
    assert b.a.tolist() == [0.0, 5.0, 0.0]
    assert b.b.tolist() == [1.0, 0.0, 1.0]
    assert b.s.tolist() == ["x", None, "z"]
    b[0:2] = {"a": [7.0, 8.0], "b": [2.0, 3.0], "s": ["p", "q"]}
    assert b.a.tolist() == [7.0, 8.0, 0.0] and b.b.tolist() == [2.0, 3.0, 1.0]
    b[:, ...] = Batch(a=np.full(3, 2.0), b=np.zeros(3), s=["a", "b", "c"], batch_size=[3])
    assert b.a.tolist() == [2.0, 2.0, 2.0]


def test_setitem_inplace_arithmetic_on_slices() -> None:
    b = Batch(a=np.zeros((2, 3)), batch_size=[2])
    b[:, 1] += 6
    assert b.a.tolist() == [[0.0, 6.0, 0.0], [0.0, 6.0, 0.0]]
    b[0] += 1
    assert b.a[0].tolist() == [1.0, 7.0, 1.0]


def test_iteration_yields_samples() -> None:
    b = Batch(a=[1, 2, 3])
    assert [s.a.item() for s in b] == [1, 2, 3]
    with pytest.raises(TypeError, match="0-d"):
        iter(b[0]).__next__()


# ----------------------------------------------------------------------------- combining
def test_stack_nested_inconsistent_keys() -> None:
    x = Batch(a=np.zeros(2), n={"p": np.ones(3)}, batch_size=[])
    y = Batch(a=np.ones(2), n={"q": [1, 2]}, s="hi", batch_size=[])
    s = Batch.stack([x, y])
    assert s.batch_size == torch.Size([2])
    assert s.n.p.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert s.n.q.tolist() == [[0, 0], [1, 2]]
    assert s.s.tolist() == [None, "hi"]


def test_stack_axis_and_dicts() -> None:
    s = Batch.stack([{"a": np.zeros(3)}, {"a": np.ones(3)}], axis=1)
    assert s.a.shape == (3, 2) and s.batch_size == torch.Size([3, 2])
    assert Batch.stack([Batch(), Batch()]).is_empty()


def test_cat_fills_and_skips_empty() -> None:
    x = Batch(a=np.zeros((2, 3)), s=["u", "v"])
    y = Batch(b=np.ones(1), n={"z": [4]})
    c = Batch.cat([x, Batch(), y])
    assert c.batch_size == torch.Size([3])
    assert c.a.tolist()[2] == [0.0, 0.0, 0.0]
    assert c.b.tolist() == [0.0, 0.0, 1.0]
    assert c.n.z.tolist() == [0, 0, 4]
    assert c.s.tolist() == ["u", "v", None]


def test_torch_stack_and_cat_keep_batch() -> None:
    b = Batch(a=np.zeros((2, 3)), n={"x": np.ones(2)}, batch_size=[2])
    for out in (torch.stack([b, b]), torch.cat([b, b]), b.clone(), b.apply(lambda t: t + 1)):
        assert isinstance(out, Batch) and isinstance(out.n, Batch)


@pytest.mark.parametrize(
    ("length", "size", "merge", "expected"),
    [
        (5, 2, False, [2, 2, 1]),
        (5, 2, True, [2, 3]),
        (4, 2, True, [2, 2]),
        (3, -1, False, [3]),
        (3, 10, False, [3]),
        (1, 1, True, [1]),
    ],
)
def test_split_sizes(length: int, size: int, merge: bool, expected: list[int]) -> None:
    b = Batch(a=np.arange(length))
    chunks = b.split(size, shuffle=False, merge_last=merge)
    assert [len(c) for c in chunks] == expected
    assert torch.cat([c.a for c in chunks]).tolist() == list(range(length))


def test_split_shuffle_is_permutation_and_td_split_compat() -> None:
    b = Batch(a=np.arange(10))
    got = torch.cat([c.a for c in b.split(3, shuffle=True)])
    assert sorted(got.tolist()) == list(range(10))
    parts = b.split([4, 6], dim=0)
    assert [len(p) for p in parts] == [4, 6]
    with pytest.raises(ValueError, match="split size"):
        b.split(0)


# --------------------------------------------------------------------- empty / is_empty
def test_empty_and_is_empty() -> None:
    b = Batch(a=[1.0, 2.0], n={"c": [3, 4]}, s=["x", "y"])
    e = Batch.empty(b)
    assert e.a.tolist() == [0.0, 0.0] and e.n.c.tolist() == [0, 0]
    assert e.s.tolist() == [None, None]
    assert b.a.tolist() == [1.0, 2.0]
    b.empty_(1)
    assert b.a.tolist() == [1.0, 0.0] and b.s.tolist() == ["x", None]
    assert Batch().is_empty() and not Batch(a=Batch()).is_empty()
    assert Batch(a=Batch()).is_empty(recurse=True)
    assert b.empty().batch_size == b.batch_size  # TensorDict's empty() on instances


# ----------------------------------------------------------------- arithmetic, conversion
def test_arithmetic() -> None:
    a = Batch(x=[1.0, 2.0], n={"y": [3.0, 4.0]})
    assert (a + 1).x.tolist() == [2.0, 3.0]
    assert (a - a).n.y.tolist() == [0.0, 0.0]
    assert (a * 2).n.y.tolist() == [6.0, 8.0]
    assert (a / 2).x.tolist() == [0.5, 1.0]
    assert isinstance(a + a, Batch)


def test_to_numpy_and_to_torch() -> None:
    b = Batch(a=[1, 2], n={"f": np.zeros(2, dtype=np.float32)}, s=["x", "y"])
    d = b.to_numpy()
    assert isinstance(d["a"], np.ndarray) and d["n"]["f"].dtype == np.float32
    assert d["s"].tolist() == ["x", "y"]
    t = b.to_torch(dtype=torch.float64)
    assert t.a.dtype == torch.float64 and t.n.f.dtype == torch.float64
    assert b.a.dtype == torch.int64 and t is not b
    assert b.to_torch_(torch.float32) is b and b.n.f.dtype == torch.float32
    assert b.to_numpy_() is b


def test_repr_layout() -> None:
    assert repr(Batch()) == "Batch()"
    text = repr(Batch(a=[1, 2], n={"s": "x"}))
    assert text == (
        "Batch(\n    a: tensor([1, 2]),\n    n: Batch(\n           s: 'x',\n       ),\n)"
    )


def test_pickle_round_trip_keeps_inferred_flag() -> None:
    b = Batch(a=np.zeros((3, 2)), s=["a", "b", "c"])
    c = pickle.loads(pickle.dumps(b))
    assert isinstance(c, Batch) and c.s.tolist() == ["a", "b", "c"]
    c.z = np.zeros((3, 5))
    assert c.batch_size == torch.Size([3])


# ---------------------------------------------------------------------------------- errors
def test_explicit_mismatch_names_key_and_shapes() -> None:
    with pytest.raises(ValueError, match=r"'act' has shape \[5\].*batch size \[4\]"):
        Batch(obs=np.zeros(4), act=np.zeros(5), batch_size=[4])
    with pytest.raises(ValueError, match=r"'s' has shape \[3\]"):
        Batch(s=["a", "b", "c"], batch_size=[2])


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="mapping"):
        Batch(3)
    with pytest.raises(TypeError, match="keys must be str"):
        Batch({1: 2})
    with pytest.raises(TypeError, match="keys must be str"):
        Batch({("a", "b"): np.zeros(2)})
    with pytest.raises(ValueError, match="not a sequence"):
        Batch([{"a": 1}], b=2)
    assert Batch({"a": 1}, b=2).to_dict() == {"a": torch.tensor(1), "b": torch.tensor(2)}
    with pytest.raises(TypeError, match="'a'"):
        Batch.stack([Batch(a=1), Batch(a={"x": 1})])
    with pytest.raises(ValueError, match="'a'"):
        Batch.stack([Batch(a=np.zeros(2)), Batch(a=np.zeros(3))])
    with pytest.raises(TypeError, match="0-d"):
        Batch.cat([Batch(a=1), Batch(a=2)])
    with pytest.raises(TypeError, match="has no len"):
        len(Batch(a=1))


def test_td_attribute_keys_need_item_access() -> None:
    b = Batch(obs=np.zeros(2))
    b["data"] = np.ones(2)
    assert b["data"].tolist() == [1.0, 1.0]
    with pytest.raises(AttributeError, match=r"batch\['data'\] = value"):
        b.data = np.ones(2)


def test_leafwise_set_rejects_non_tensor_entries() -> None:
    b = Batch(a=np.zeros((2, 3)), s=["x", "y"], batch_size=[2])
    with pytest.raises(IndexError, match="'s'"):
        b[:, 1] = Batch(a=np.ones(2), s=["p", "q"])


def test_fast_index_edge_cases() -> None:
    b = Batch(a=np.arange(5), n={"x": np.arange(5) * 2}, batch_size=[5])
    assert b[np.array([-1, 0])].a.tolist() == [4, 0]
    assert b[torch.tensor([4, -5], dtype=torch.int32)].n.x.tolist() == [8, 0]
    assert len(b[np.array([], dtype=np.int64)]) == 0
    assert b[np.array([1, 2], dtype=np.uint8)].a.tolist() == [1, 2]
    with pytest.raises(IndexError):
        _ = b[np.array([7])]
    grad = Batch(w=torch.ones(3, requires_grad=True), batch_size=[3])
    assert grad[torch.tensor([0, 2])].w.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_device_round_trip() -> None:
    b = Batch(a=np.arange(4.0), n={"x": np.ones((4, 2))}).to_torch(device="cuda")
    assert b.a.is_cuda and b.n.x.is_cuda
    assert b[np.array([0, 3])].a.is_cuda
    assert b.to_numpy()["a"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_nested_empty_batch_follows_parent_size() -> None:
    b = Batch(obs=np.zeros(3), info={})
    assert b.info.batch_size == torch.Size([3])
    with pytest.raises(ValueError, match=r"'x' has shape \[5\].*batch size \[3\]"):
        b.info.x = np.zeros(5)
    b.info.y = np.zeros((3, 4))
    assert b.info.batch_size == torch.Size([3]) and b[0].info.y.shape == (4,)


def test_stack_and_cat_nested_batch_missing_in_some_members() -> None:
    s = Batch.stack([Batch(a=1.0, n={"x": [1, 2]}), Batch(a=2.0)])
    assert s.n.x.tolist() == [[1, 2], [0, 0]]
    c = Batch.cat([Batch(a=[1.0], n={"x": [[1, 2]]}), Batch(a=[2.0, 3.0])])
    assert c.n.x.tolist() == [[1, 2], [0, 0], [0, 0]]
    assert isinstance(c.n, Batch) and c.batch_size == torch.Size([3])


def test_to_torch_does_not_touch_original_nested() -> None:
    b = Batch(a=[1, 2], n={"f": np.zeros(2, dtype=np.float32)}, device="cpu")
    t = b.to_torch(torch.float64)
    assert t.n.f.dtype == torch.float64 and b.n.f.dtype == torch.float32
    assert t.device == torch.device("cpu")


def test_scalar_set_on_batched_batch_raises_but_object_is_shared() -> None:
    b = Batch(obs=np.zeros((3, 2)), act=np.zeros(3))
    with pytest.raises(ValueError, match=r"'w' has shape \[\].*batch size \[3\]"):
        b.w = 1.0
    b.tag = "run-1"
    assert b.batch_size == torch.Size([3]) and b[2].tag == "run-1"


def test_shape_error_is_value_and_runtime_error() -> None:
    from tdrl.data.batch import BatchShapeError

    b = Batch(a=np.zeros(3), batch_size=[3])
    for exc in (BatchShapeError, ValueError, RuntimeError):
        with pytest.raises(exc):
            b.update({"z": np.zeros(4)})
