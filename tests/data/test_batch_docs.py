"""Every Batch example of the seed docs (concepts-current.rst, concepts-legacy.txt).

Values are compared, not numpy-vs-torch types. Where tdrl deliberately differs from a
printed value the test says so and asserts tdrl's documented behaviour.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from tensordict import TensorDictBase

from tdrl.data.batch import Batch


def val(x: object) -> np.ndarray:
    """Any stored value as a numpy array, for value comparisons."""
    if isinstance(x, torch.Tensor):
        return x.numpy()
    return np.asarray(x)


def eq(x: object, expected: object) -> None:
    got, exp = val(x), np.asarray(expected)
    assert got.shape == exp.shape, (got, exp)
    if exp.dtype == object or got.dtype == object:
        assert got.tolist() == exp.tolist()
    else:
        np.testing.assert_array_equal(got, exp)


# ----------------------------------------------------------------- concepts-current.rst
def test_current_scalar_list_str_tuple() -> None:
    data = Batch(a=4, b=[5, 5], c="2312312", d=("a", -2, -3))
    eq(data.b, [5, 5])
    data.b = np.array([3, 4, 5])
    eq(data.a, 4)
    eq(data.b, [3, 4, 5])
    assert data.c == "2312312"
    eq(data.d, np.array(["a", "-2", "-3"], dtype=object))
    assert data.shape == torch.Size([])
    text = str(data)
    assert text.startswith("Batch(\n    a: tensor(4),\n    b: tensor([3, 4, 5]),\n")
    assert "    c: '2312312',\n" in text
    assert "    d: array(['a', '-2', '-3'], dtype=object),\n)" in text


def test_current_nested_and_multidim_index() -> None:
    data = Batch(obs={"index": np.zeros((2, 3))}, act=torch.zeros((2, 2)))
    data[:, 1] += 6
    last = data[-1]
    assert isinstance(last, Batch) and isinstance(last.obs, Batch)
    eq(last.obs.index, [0.0, 6.0, 0.0])
    eq(last.act, [0.0, 6.0])
    assert str(last) == (
        "Batch(\n"
        "    obs: Batch(\n"
        "             index: tensor([0., 6., 0.], dtype=torch.float64),\n"
        "         ),\n"
        "    act: tensor([0., 6.]),\n"
        ")"
    )


# ----------------------------------------------------------------- concepts-legacy.txt
def test_legacy_basic() -> None:
    data = Batch(a=4, b=[5, 5], c="2312312")
    eq(data.b, [5, 5])
    data.b = np.array([3, 4, 5])
    eq(data.a, 4)
    eq(data.b, [3, 4, 5])
    assert data.c == "2312312"


def test_legacy_list_of_dicts_is_stacked() -> None:
    data = Batch([{"a": {"b": [0.0, "info"]}}])
    # Tianshou 2.x (like tdrl) converts the mixed list with numpy: 0.0 becomes '0.0'
    eq(data[0].a.b, np.array(["0.0", "info"], dtype=object))
    assert data.shape == torch.Size([1, 2])


def test_legacy_dict_api() -> None:
    data = Batch(a=4, b=[5, 5])
    eq(data["a"], 4)
    items = dict(data.items())
    assert list(items) == ["a", "b"]
    eq(items["a"], 4)
    eq(items["b"], [5, 5])


def test_legacy_leafwise_index_past_batch_dims() -> None:
    data = Batch(a=np.array([[0.0, 2.0], [1.0, 3.0]]), b=[[5, -5]])
    first = data[0]
    eq(first.a, [0.0, 2.0])
    eq(first.b, [5, -5])
    # Deliberate difference: Tianshou reports shape [1, 2] (the per-dim minimum) and
    # iterates once; the leading dims disagree (2 vs 1), so a TensorDict batch size is [].
    assert data.shape == torch.Size([])
    with pytest.raises(TypeError):
        len(data)
    data[:, 1] += 1
    eq(data.a, [[0.0, 3.0], [1.0, 4.0]])
    eq(data.b, [[5, -4]])


def test_legacy_stack_split_cat() -> None:
    data_1 = Batch(a=np.array([0.0, 2.0]), b=5)
    data_2 = Batch(a=np.array([1.0, 3.0]), b=-5)
    data = Batch.stack((data_1, data_2))
    eq(data.b, [5, -5])
    eq(data.a, [[0.0, 2.0], [1.0, 3.0]])
    # np.mean(data) in the doc: the TensorDict spelling is data.mean(0) on float entries
    mean = data.to_torch(torch.float64).mean(0)
    eq(mean.b, 0.0)
    eq(mean.a, [0.5, 2.5])
    data_split = list(data.split(1, False))
    assert len(data_split) == 2
    eq(data_split[0].b, [5])
    eq(data_split[0].a, [[0.0, 2.0]])
    eq(data_split[1].b, [-5])
    eq(data_split[1].a, [[1.0, 3.0]])
    data_cat = Batch.cat(data_split)
    eq(data_cat.b, [5, -5])
    eq(data_cat.a, [[0.0, 2.0], [1.0, 3.0]])


def test_legacy_stack_inconsistent_and_empty() -> None:
    data_1 = Batch(a=np.array([0.0, 2.0]))
    data_2 = Batch(a=np.array([1.0, 3.0]), b="done")
    data = Batch.stack((data_1, data_2))
    eq(data.a, [[0.0, 2.0], [1.0, 3.0]])
    eq(data.b, np.array([None, "done"], dtype=object))
    data.empty_()
    eq(data.a, [[0.0, 0.0], [0.0, 0.0]])
    eq(data.b, np.array([None, None], dtype=object))


def test_legacy_empty_item_assignment() -> None:
    data = Batch(a=[False, True], b={"c": [2.0, "st"], "d": [1.0, 0.0]})
    data[0] = Batch.empty(data[1])
    eq(data.a, [False, True])
    eq(data.b.c, np.array([None, "st"], dtype=object))
    eq(data.b.d, [0.0, 0.0])


def test_legacy_shape_and_len() -> None:
    data = Batch(a=[5.0, 4.0], b=np.zeros((2, 3, 4)))
    assert list(data.shape) == [2]
    assert len(data) == 2
    assert list(data[0].shape) == []
    with pytest.raises(TypeError, match="has no len"):
        len(data[0])


def test_legacy_iterate_samples() -> None:
    data = Batch(a=np.array([[0.0, 2.0], [1.0, 3.0]]), b=[5, -5])
    samples = list(data)
    assert len(samples) == 2
    eq(samples[0].a, [0.0, 2.0])
    eq(samples[1].b, -5)


def test_legacy_pickle() -> None:
    data = Batch(a=[1, 2], s=["x", "y"], n={"q": np.ones((2, 3))}, t="tag")
    back = pickle.loads(pickle.dumps(data))
    assert isinstance(back, Batch) and isinstance(back.n, Batch)
    eq(back.a, [1, 2])
    eq(back.n.q, np.ones((2, 3)))
    assert back.t == "tag"


def test_current_policy_forward_example() -> None:
    obs = np.zeros(4, dtype=np.float32)
    batch = Batch(obs=[obs])
    assert batch.shape == torch.Size([1, 4])
    assert batch.obs.shape == (1, 4)
    assert isinstance(batch, TensorDictBase)
