"""Tianshou ``Batch`` API on tdrl's Batch (issue 24): the methods TensorDict lacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from tdrl.data import Batch, to_numpy, to_torch, to_torch_as
from tdrl.data.batch import dist_to_atleast_2d, get_sliced_dist


def test_constructor_mapping_plus_keywords_and_empty_len() -> None:
    b = Batch({"a": [1, 2]}, b=[3, 4])
    assert sorted(b.get_keys()) == ["a", "b"] and b.shape == (2,)
    assert len(Batch()) == 0 and list(Batch()) == []
    assert len(Batch(b={"c": {}})) == 0
    assert Batch(a=[1, 2, 3], b={"c": {}}).shape == (3,)
    assert Batch(a=[1, 2, 3], b=None).shape == (3,)
    with pytest.raises(TypeError, match="has no len"):
        len(Batch(a=1))


def test_equality_is_elementwise_with_a_truth_value() -> None:
    a, b = Batch(a=[1, 2], n={"x": [3, 4]}), Batch(a=[1, 2], n={"x": [3, 5]})
    eq = a == b
    assert eq["a"].tolist() == [True, True] and eq["n", "x"].tolist() == [True, False]
    assert not eq and (a != b) and a == a.clone()
    assert not bool(a != a.clone())
    assert (a == b).all() is False and (a != b).any() is True
    assert Batch(a=[1, 2]) != Batch(b=[1, 2])  # different keys: not equal (TensorDict raises)
    assert Batch(a=[1, 2, 3]) != Batch(a=[1, 2])  # shapes that do not broadcast
    assert Batch() == Batch() and Batch(a=(1, 2)) == Batch(a=[1, 2])
    with pytest.raises(RuntimeError):
        bool(Batch(a=[1]))


def test_cat_in_place_and_to_dict() -> None:
    b = Batch(a=[1, 2], n={"x": [0.0, 1.0]})
    same = b.cat_(Batch(a=[3], n={"x": [2.0]}))
    assert same is b and b.a.tolist() == [1, 2, 3] and b.shape == (3,)
    flat = b.to_dict(recursive=False)
    assert isinstance(flat["n"], Batch)
    assert isinstance(b.to_dict()["n"], dict)


def test_set_array_at_key() -> None:
    b = Batch(a=[4, 5, 6])
    b.set_array_at_key(np.array([1, 2]), "a", index=[2, 0])
    assert b.a.tolist() == [2, 5, 1]
    b.set_array_at_key(np.array([1, 2]), "k", index=[0, 1], default_value=0)
    assert b.k.tolist() == [1, 2, 0]
    b.set_array_at_key(np.array([1.0, 2.0]), "f", index=[0, 1])
    assert np.isnan(b.f[2].item())
    with pytest.raises(ValueError):
        b.set_array_at_key(np.array([1, 2]), "a")
    with pytest.raises(IndexError):
        b.set_array_at_key(np.array([1, 2]), "a", index=[10, 11])


def test_null_helpers_and_values_transform() -> None:
    b = Batch(a=[4, 5, 6], b=[7, 8, None], c={"d": np.array([1.0, np.nan, 3.0])})
    assert b.isnull().b.tolist() == [False, False, True]
    assert b.isnull().c.d.tolist() == [False, True, False]
    assert b.hasnull() and not Batch(a=[1, 2]).hasnull()
    assert b.dropnull().a.tolist() == [4]
    m = Batch(a=1, b=np.arange(3), c={"d": np.array([1, 2, 3])}).apply_values_transform(np.max)
    assert m.b.item() == 2 and m.c.d.item() == 3


def test_distributions_are_batched_and_sliced() -> None:
    probs = torch.rand(5, 3)
    b = Batch(a=np.arange(5), dist=Categorical(probs=probs))
    assert b.shape == (5,)
    assert torch.allclose(b[[1, 3]].dist.probs, Categorical(probs=probs[[1, 3]]).probs)
    assert torch.allclose(b[0].dist.probs, Categorical(probs=probs[0]).probs)
    assert len(b[:2]) == 2
    scalar = Batch(a=1, dist=Categorical(probs=torch.ones(3))).to_at_least_2d()
    assert scalar.dist.batch_shape == (1,) and scalar.a.shape == (1, 1)


@pytest.mark.parametrize(
    "dist",
    [
        Categorical(probs=torch.tensor([0.3, 0.7])),
        Normal(torch.tensor(0.0), torch.tensor(1.0)),
        Independent(Normal(torch.tensor(0.0), torch.tensor(1.0)), 0),
    ],
)
def test_dist_helpers(dist: torch.distributions.Distribution) -> None:
    out = dist_to_atleast_2d(dist)
    assert out.batch_shape == (1,) and dist_to_atleast_2d(out) is out
    assert get_sliced_dist(out, [0]).batch_shape == (1,)


def test_ellipsis_index_is_leafwise_beyond_the_batch_dims() -> None:
    b = Batch(a=Batch(a=[1, 2, 3]), b=[4, 5])
    out = b[..., 1:]
    assert out.a.a.tolist() == [2, 3] and out.b.tolist() == [5]


def test_module_conversions() -> None:
    assert to_torch(np.float64(1.0), dtype=torch.float32).dtype == torch.float32
    assert to_torch([np.zeros((3, 3)), np.ones((3, 3))]).shape == (2, 3, 3)
    assert to_torch(1).dtype == torch.int64 and to_torch(1.0).dtype == torch.float64
    with pytest.raises(TypeError):
        to_torch([np.zeros((3, 2)), np.zeros((3, 3))])
    with pytest.raises(TypeError):
        to_torch(None)
    assert isinstance(to_numpy(torch.zeros(0, 2)), np.ndarray)
    assert to_numpy(None).item() is None and to_numpy({"a": torch.tensor(1)})["a"] == 1
    assert isinstance(to_torch(Batch(a=np.arange(2)), dtype=torch.float32).a, torch.Tensor)
    y = torch.zeros(1, dtype=torch.float16)
    assert to_torch_as(np.ones(2), y).dtype == torch.float16


def test_to_hdf5_round_trip(tmp_path: object) -> None:
    h5py = pytest.importorskip("h5py")
    from tdrl.data import from_hdf5, to_hdf5

    path = f"{tmp_path}/x.hdf5"
    data = {"a": torch.arange(3), "n": {"b": np.ones(2)}, "s": "text"}
    with h5py.File(path, "w") as f:
        to_hdf5(data, f)
    with h5py.File(path, "r") as f:
        back = from_hdf5(f)
    assert back["a"].tolist() == [0, 1, 2] and back["n"]["b"].tolist() == [1.0, 1.0]
    assert back["s"] == "text"
    with h5py.File(path, "w") as f:
        with pytest.raises(NotImplementedError):
            to_hdf5({"f": lambda x: x}, f)
        with pytest.raises(RuntimeError):
            to_hdf5({"f": np.array(lambda x: x)}, f)


def test_buffer_repr() -> None:
    from tdrl.data import ReplayBuffer

    buf = ReplayBuffer(3)
    assert repr(buf) == "ReplayBuffer()"
    buf.add(Batch(obs=1, act=0, rew=1.0, terminated=False, truncated=False))
    assert repr(buf).startswith("ReplayBuffer(\n") and "obs: tensor([1, 0, 0])" in repr(buf)
