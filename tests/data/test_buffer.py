"""ReplayBuffer / VectorReplayBuffer: the seed-doc examples (values included) and the API."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch
import torchrl.data

from tdrl.data.batch import Batch
from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer


def step(i: int, terminated: bool = False, truncated: bool = False, **extra: object) -> dict:
    return {
        "obs": i,
        "act": i,
        "rew": i,
        "terminated": terminated,
        "truncated": truncated,
        "obs_next": i + 1,
        "info": {},
        **extra,
    }


def test_is_torchrl_replay_buffer() -> None:
    buf = ReplayBuffer(4)
    assert isinstance(buf, torchrl.data.ReplayBuffer)
    assert isinstance(VectorReplayBuffer(8, 2), torchrl.data.ReplayBuffer)


def test_tutorial_basic_usage() -> None:
    buf = ReplayBuffer(size=10)
    assert (buf.maxsize, len(buf)) == (10, 0)
    for i in range(3):
        buf.add(Batch(step(i, done=0)))
    assert len(buf) == 3
    assert buf.obs.tolist() == [0, 1, 2, 0, 0, 0, 0, 0, 0, 0]
    assert buf.rew.tolist() == [0.0, 1.0, 2.0] + [0.0] * 7
    assert buf.obs_next.tolist() == [1, 2, 3, 0, 0, 0, 0, 0, 0, 0]
    for i in range(3, 13):
        buf.add(Batch(step(i, done=0)))
    assert len(buf) == 10
    assert buf.obs.tolist() == [10, 11, 12, 3, 4, 5, 6, 7, 8, 9]
    assert buf.obs_next.tolist() == [11, 12, 13, 4, 5, 6, 7, 8, 9, 10]
    assert not buf.done.any()
    last = buf[-1]
    assert (last.obs.item(), last.obs_next.item(), last.rew.item()) == (9, 10, 9.0)
    assert last.batch_size == torch.Size([])
    tail = buf[-3:]
    assert tail.obs.tolist() == [7, 8, 9] and tail.obs_next.tolist() == [8, 9, 10]
    assert set(tail.keys()) >= {"obs", "act", "rew", "terminated", "truncated", "done"}
    assert {"info", "policy"} <= set(tail.keys())
    clone = pickle.loads(pickle.dumps(buf))
    assert clone.obs.tolist() == buf.obs.tolist() and len(clone) == 10
    batch, idx = buf.sample(batch_size=5)
    assert batch.obs.shape == (5,) and torch.equal(batch.obs, buf[idx].obs)
    assert torch.equal(batch.obs_next, batch.obs + 1)


def _trajectory_buffer() -> tuple[ReplayBuffer, list]:
    buf = ReplayBuffer(size=10)
    results = []
    for i in range(3):
        results.append(buf.add(Batch(step(i, terminated=i == 2, done=i == 2))))
    for i in range(3, 8):
        results.append(buf.add(Batch(step(i, terminated=i == 7, done=i == 7))))
    for i in range(8, 13):
        results.append(buf.add(Batch(step(i))))
    return buf, results


def test_tutorial_trajectory_tracking() -> None:
    buf, results = _trajectory_buffer()
    expected = [
        (0, 0.0, 0, 0),
        (1, 0.0, 0, 0),
        (2, 3.0, 3, 0),
        (3, 0.0, 0, 3),
        (4, 0.0, 0, 3),
        (5, 0.0, 0, 3),
        (6, 0.0, 0, 3),
        (7, 25.0, 5, 3),
        (8, 0.0, 0, 8),
        (9, 0.0, 0, 8),
        (0, 0.0, 0, 8),
        (1, 0.0, 0, 8),
        (2, 0.0, 0, 8),
    ]
    for (ptr, ep_rew, ep_len, ep_idx), exp in zip(results, expected, strict=True):
        assert ptr.shape == ep_rew.shape == ep_len.shape == ep_idx.shape == (1,)
        assert (ptr[0], ep_rew[0], ep_len[0], ep_idx[0]) == exp
        assert ep_rew.dtype.kind == "f" and ep_len.dtype.kind == "i"
    assert buf.obs.tolist() == [10, 11, 12, 3, 4, 5, 6, 7, 8, 9]
    assert buf.terminated.tolist() == [False] * 7 + [True, False, False]
    assert buf.done.tolist() == [False] * 7 + [True, False, False]
    assert len(buf) == 10
    item = buf[6]
    assert (item.obs.item(), item.obs_next.item(), item.done.item()) == (6, 7, False)
    assert buf.prev(np.array([0, 1, 2, 3, 4, 5, 6])).tolist() == [9, 0, 1, 3, 3, 4, 5]
    assert buf.next(np.array([4, 5, 6, 7, 8, 9])).tolist() == [5, 6, 7, 7, 9, 0]
    assert buf.unfinished_index().tolist() == [2]


def test_concepts_update_and_sample(tmp_path) -> None:
    buf = ReplayBuffer(size=20)
    for i in range(3):
        buf.add(Batch(step(i)))
    assert buf.obs.tolist() == [0, 1, 2] + [0] * 17
    assert len(buf) == 3
    with open(tmp_path / "buf.pkl", "wb") as f:
        pickle.dump(buf, f)
    buf.save_hdf5(tmp_path / "buf.hdf5")
    buf2 = ReplayBuffer(size=10)
    for i in range(15):
        buf2.add(Batch(step(i, terminated=i % 4 == 0)))
    assert len(buf2) == 10
    assert buf2.obs.tolist() == [10, 11, 12, 13, 14, 5, 6, 7, 8, 9]
    buf.update(buf2)
    assert buf.obs.tolist() == [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] + [0] * 7
    indices = buf.sample_indices(0)
    assert indices.tolist() == list(range(13))
    assert buf.prev(indices).tolist() == [0, 0, 1, 2, 3, 4, 5, 7, 7, 8, 9, 11, 11]
    assert buf.next(indices).tolist() == [1, 2, 3, 4, 5, 6, 6, 8, 9, 10, 10, 12, 12]
    batch_data, indices = buf.sample(batch_size=4)
    assert (batch_data.obs == buf[indices].obs).all()
    assert len(buf) == 13
    with open(tmp_path / "buf.pkl", "rb") as f:
        assert len(pickle.load(f)) == 3
    loaded = ReplayBuffer.load_hdf5(tmp_path / "buf.hdf5")
    assert len(loaded) == 3 and loaded.obs[:3].tolist() == [0, 1, 2]


def test_concepts_stack_num_ignore_obs_next() -> None:
    buf = ReplayBuffer(size=9, stack_num=4, ignore_obs_next=True)
    lens, rews = [], []
    for i in range(16):
        _, ep_rew, ep_len, _ = buf.add(
            {
                "obs": {"id": i},
                "act": i,
                "rew": i,
                "terminated": i % 5 == 0,
                "truncated": False,
                "obs_next": {"id": i + 1},
            }
        )
        lens.append(int(ep_len[0]))
        rews.append(float(ep_rew[0]))
    assert lens == [1, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5]
    assert rews == [0, 0, 0, 0, 0, 15, 0, 0, 0, 0, 40, 0, 0, 0, 0, 65]
    assert buf.obs.id.tolist() == [9, 10, 11, 12, 13, 14, 15, 7, 8]
    assert buf.done.tolist() == [False, True, False, False, False, False, True, False, False]
    assert not any(k[0] == "obs_next" for k in buf._storage.columns)
    index = np.arange(len(buf))
    stacked = buf.get(index, "obs").id
    assert stacked.tolist() == [
        [7, 7, 8, 9],
        [7, 8, 9, 10],
        [11, 11, 11, 11],
        [11, 11, 11, 12],
        [11, 11, 12, 13],
        [11, 12, 13, 14],
        [12, 13, 14, 15],
        [7, 7, 7, 7],
        [7, 7, 7, 8],
    ]
    assert int((buf.get(index, "obs")["id"] - buf[index].obs.id).abs().sum()) == 0
    expected_next = [
        [7, 7, 7, 8],
        [7, 7, 8, 9],
        [7, 8, 9, 10],
        [7, 8, 9, 10],
        [11, 11, 11, 12],
        [11, 11, 12, 13],
        [11, 12, 13, 14],
        [12, 13, 14, 15],
        [12, 13, 14, 15],
    ]
    assert buf[:].obs_next.id.tolist() == expected_next
    full_index = np.array([7, 8, 0, 1, 2, 3, 4, 5, 6])
    assert torch.equal(buf[:].obs_next.id, buf[full_index].obs_next.id)
    assert buf[:].obs.id.shape == (9, 4)


def test_vector_add_and_episode_api() -> None:
    buf = VectorReplayBuffer(total_size=20, buffer_num=4)
    assert buf.maxsize == 20 and buf.buffer_num == 4
    assert buf.subbuffer_edges.tolist() == [0, 5, 10, 15, 20]
    batch = {
        "obs": np.arange(3),
        "act": np.arange(3),
        "rew": np.ones(3),
        "terminated": np.array([0, 0, 1]),
        "truncated": np.zeros(3),
    }
    ptr, ep_rew, ep_len, ep_idx = buf.add(batch, buffer_ids=[0, 1, 2])
    assert ptr.tolist() == [0, 5, 10]
    assert ep_rew.tolist() == [0.0, 0.0, 1.0] and ep_len.tolist() == [0, 0, 1]
    assert ep_idx.tolist() == [0, 5, 10]
    assert buf.unfinished_index().tolist() == [0, 5]
    ptr, *_ = buf.add(batch, buffer_ids=[2, 3, 0])
    assert ptr.tolist() == [11, 15, 1]
    assert len(buf) == 6
    assert buf.sample_indices(0).tolist() == [0, 1, 5, 10, 11, 15]
    assert buf.prev(np.array([1, 11, 15])).tolist() == [0, 11, 15]
    assert buf.next(np.array([0, 5, 10])).tolist() == [1, 5, 10]
    assert VectorReplayBuffer(10, 3).maxsize == 12


def test_vector_default_buffer_ids_and_wraparound() -> None:
    buf = VectorReplayBuffer(6, 2)
    for t in range(5):
        buf.add(
            {
                "obs": np.full(2, t),
                "act": np.zeros(2),
                "rew": np.ones(2),
                "terminated": np.array([t == 1, False]),
                "truncated": np.zeros(2, bool),
            }
        )
    assert len(buf) == 6
    assert buf.obs.tolist() == [3, 4, 2, 3, 4, 2]
    assert buf.sample_indices(0).tolist() == [2, 0, 1, 5, 3, 4]
    assert buf.unfinished_index().tolist() == [1, 4]
    assert buf.next(np.array([2, 0, 1])).tolist() == [0, 1, 1]
    assert buf.prev(np.array([2, 0, 1, 5, 3, 4])).tolist() == [2, 2, 0, 5, 5, 3]


def test_sample_indices_modes_and_generator() -> None:
    buf = VectorReplayBuffer(40, 4, seed=3)
    for t in range(7):
        buf.add(
            {
                "obs": np.full(4, t),
                "act": np.zeros(4),
                "rew": np.ones(4),
                "terminated": np.zeros(4, bool),
                "truncated": np.zeros(4, bool),
            }
        )
    valid = set(buf.sample_indices(0).tolist())
    perm = buf.sample_indices(None)
    assert sorted(perm.tolist()) == sorted(valid) and len(perm) == len(buf)
    draws = buf.sample_indices(1000)
    assert set(draws.tolist()) <= valid and draws.dtype == np.int64
    assert buf.sample_indices(-1).tolist() == []
    twin = VectorReplayBuffer(40, 4, seed=3)
    for t in range(7):
        twin.add(
            {
                "obs": np.full(4, t),
                "act": np.zeros(4),
                "rew": np.ones(4),
                "terminated": np.zeros(4, bool),
                "truncated": np.zeros(4, bool),
            }
        )
    twin.sample_indices(None), twin.sample_indices(1000)
    assert np.array_equal(buf.sample(16)[1], twin.sample(16)[1])
    assert buf.generator is buf._sampler._rng


def test_sample_avail_with_stack() -> None:
    buf = ReplayBuffer(10, stack_num=3, sample_avail=True, seed=0)
    for i in range(8):
        buf.add(step(i, terminated=i in (2, 3)))
    # episodes [0 1 2] [3] [4 5 6 7]: a full 3-frame stack exists at indices 2, 6, 7
    assert buf.sample_indices(0).tolist() == [2, 6, 7]
    assert set(buf.sample_indices(50).tolist()) == {2, 6, 7}
    assert sorted(buf.sample_indices(None).tolist()) == [2, 6, 7]


def test_reset_keep_statistics() -> None:
    buf = ReplayBuffer(5)
    buf.add(step(0, rew=2))
    buf.add(step(1, rew=3))
    buf.reset(keep_statistics=True)
    assert len(buf) == 0 and buf.sample_indices(0).tolist() == []
    _, ep_rew, ep_len, ep_idx = buf.add(step(2, rew=4, terminated=True))
    assert (ep_rew[0], ep_len[0], ep_idx[0]) == (9.0, 3, 0)
    buf.add(step(0, rew=2))
    buf.reset()
    _, ep_rew, ep_len, _ = buf.add(step(2, rew=4, terminated=True))
    assert (ep_rew[0], ep_len[0]) == (4.0, 1)


def test_extra_keys_info_policy_and_late_keys() -> None:
    buf = ReplayBuffer(4)
    buf.add(step(0, info={"env_id": 3}, policy={"logp": 0.5}, extra=np.ones(2)))
    # info and policy keys may come and go (zeros when absent); other keys may not
    buf.add(step(1, info={"env_id": 4, "new": 1.5}, extra=np.zeros(2)))
    out = buf[np.array([0, 1])]
    assert out.info.env_id.tolist() == [3, 4]
    assert out.info.new.tolist() == [0.0, 1.5]
    assert out.policy.logp.tolist() == [0.5, 0.0]
    assert out.extra.tolist() == [[1.0, 1.0], [0.0, 0.0]]


@pytest.mark.parametrize("as_batch", [False, True])
def test_non_numeric_info_is_skipped_with_one_warning_per_key(as_batch: bool) -> None:
    key = f"label_{as_batch}"  # the warning fires once per key and process
    buf = VectorReplayBuffer(8, 2)

    def batch(i: int) -> object:
        data = {
            "obs": [i, i],
            "act": [0, 0],
            "rew": [1.0, 1.0],
            "terminated": [False, False],
            "truncated": [False, False],
            "info": {key: np.array(["a", "b"]), "lives": np.array([3, 2])},
        }
        return Batch(data) if as_batch else data

    with pytest.warns(UserWarning, match=rf"info\.{key}: expected a numeric .* not stored"):
        buf.add(batch(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf.add(batch(1))
    out = buf[buf.sample_indices(0)]
    assert out.info.lives.tolist() == [3, 3, 2, 2]
    assert key not in out.info


def test_get_buffer_indices() -> None:
    buf = VectorReplayBuffer(10, 2)
    assert buf.get_buffer_indices(2, 4).tolist() == [2, 3]
    assert buf.get_buffer_indices(4, 2).tolist() == [4, 0, 1]
    assert buf.get_buffer_indices(8, 7).tolist() == [8, 9, 5, 6]
    with pytest.raises(ValueError, match="one sub-buffer"):
        buf.get_buffer_indices(1, 6)
    with pytest.raises(ValueError, match="one sub-buffer"):
        buf.get_buffer_indices(8, 1)


def test_nulls() -> None:
    buf = ReplayBuffer(5)
    for i in range(4):
        buf.add(step(i, rew=float("nan") if i == 1 else 1.0))
    assert buf.hasnull()
    assert buf.isnull().rew.tolist() == [False, True, False, False]
    buf.dropnull()
    assert len(buf) == 3 and not buf.hasnull()
    assert buf[:].obs.tolist() == [0, 2, 3]
    assert buf.unfinished_index().tolist() == [2]


def test_set_batch() -> None:
    buf = ReplayBuffer(3)
    buf.set_batch(Batch(obs=torch.arange(3), rew=torch.ones(3)))
    assert buf.obs.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="leading dimension 3"):
        buf.set_batch(Batch(obs=torch.arange(4)))
    with pytest.raises(ValueError, match="reserved keys"):
        buf.set_batch(Batch(foo=torch.arange(3)))


def test_scalar_prev_next_and_tensor_index() -> None:
    buf, _ = _trajectory_buffer()
    assert buf.prev(3) == 3 and buf.next(4) == 5
    assert isinstance(buf.prev(3), np.integer)
    assert buf.next(torch.tensor([4, 5])).tolist() == [5, 6]
    assert buf[torch.tensor([3, 4])].obs.tolist() == [3, 4]
    assert buf[np.array([True] + [False] * 9)].obs.tolist() == [10]


def test_torchrl_interop_plain_buffer() -> None:
    from tensordict import TensorDict

    from tdrl.data.buffer import EpisodeSampler, EpisodeStorage

    storage = EpisodeStorage(6)
    rb = torchrl.data.ReplayBuffer(storage=storage, sampler=EpisodeSampler(), batch_size=4)
    td = TensorDict(
        {
            "obs": torch.arange(4.0),
            "rew": torch.ones(4),
            "terminated": torch.tensor([False, True, False, False]),
            "truncated": torch.zeros(4, dtype=torch.bool),
        },
        [4],
    )
    assert rb.extend(td).tolist() == [0, 1, 2, 3]
    assert storage.prev(np.arange(4)).tolist() == [0, 0, 2, 2]
    assert storage.unfinished_index().tolist() == [3]
    sample = rb.sample()
    assert sample.batch_size == torch.Size([4]) and set(sample["obs"].tolist()) <= {0, 1, 2, 3}
    rb.extend(td)
    assert len(rb) == 6 and storage.valid_indices().tolist() == [2, 3, 4, 5, 0, 1]
    # a tdrl buffer also accepts TorchRL's extend
    buf = ReplayBuffer(6)
    buf.extend(td)
    assert buf.next(np.arange(4)).tolist() == [1, 1, 3, 3] and len(buf) == 4


def test_input_forms_agree() -> None:
    """dict of numpy, Batch of tensors (fast paths) and nested mappings give one result."""
    rng = np.random.default_rng(0)
    bufs = [VectorReplayBuffer(12, 3) for _ in range(3)]
    for t in range(9):
        obs = rng.standard_normal((3, 2)).astype(np.float32)
        term = rng.random(3) < 0.3
        as_dict = {
            "obs": obs,
            "act": np.full(3, t),
            "rew": np.ones(3),
            "terminated": term,
            "truncated": np.zeros(3, bool),
        }
        as_batch = Batch({k: torch.from_numpy(v) for k, v in as_dict.items()})
        as_batch["obs"] = as_batch["obs"].requires_grad_(t % 2 == 0)
        outs = [
            bufs[0].add(as_dict),
            bufs[1].add(as_batch, buffer_ids=np.arange(3)),
            bufs[2].add({**as_dict, "obs": obs.tolist(), "info": {}}, buffer_ids=[0, 1, 2]),
        ]
        for out in outs[1:]:
            for a, b in zip(out, outs[0], strict=True):
                np.testing.assert_array_equal(a, b)
    for buf in bufs[1:]:
        for key in ("obs", "act", "rew", "terminated", "done"):
            assert torch.equal(getattr(buf, key), getattr(bufs[0], key))
    with pytest.raises(ValueError, match="act: expected dtype int64, got float64"):
        bufs[1].add(
            Batch(
                obs=torch.zeros(3, 2),
                act=torch.zeros(3, dtype=torch.float64),
                rew=torch.ones(3, dtype=torch.float64),
                terminated=torch.zeros(3, dtype=torch.bool),
                truncated=torch.zeros(3, dtype=torch.bool),
            )
        )


def test_torch_write_path_matches_numpy_path() -> None:
    """The non-CPU code path (torch indexing instead of numpy views), exercised on CPU."""
    rng = np.random.default_rng(1)
    fast, slow = VectorReplayBuffer(10, 2, seed=0), VectorReplayBuffer(10, 2, seed=0)
    slow._storage._numpy_ok = False
    for t in range(13):
        batch = {
            "obs": {"x": rng.standard_normal((2, 2))},
            "act": np.full(2, t),
            "rew": np.ones(2),
            "terminated": rng.random(2) < 0.3,
            "truncated": np.zeros(2, bool),
        }
        ids = [0, 1] if t % 3 else [1]
        sub = {
            k: (v[ids] if not isinstance(v, dict) else {"x": v["x"][ids]})  # type: ignore[index]
            for k, v in batch.items()
        }
        for a, b in zip(fast.add(sub, ids), slow.add(sub, ids), strict=True):
            np.testing.assert_array_equal(a, b)
    assert not slow._storage.np_columns
    idx = fast.sample_indices(0)
    np.testing.assert_array_equal(idx, slow.sample_indices(0))
    np.testing.assert_array_equal(fast.prev(idx), slow.prev(idx))
    np.testing.assert_array_equal(fast.next(idx), slow.next(idx))
    np.testing.assert_array_equal(fast.unfinished_index(), slow.unfinished_index())
    assert torch.equal(fast[idx].obs.x, slow[idx].obs.x)
    assert torch.equal(fast[idx].act, slow[idx].act)


def test_reset_rings() -> None:
    buf = VectorReplayBuffer(9, 3)
    for t in range(5):
        buf.add(
            {
                "obs": np.full(3, t),
                "act": np.zeros(3),
                "rew": np.ones(3),
                "terminated": np.array([t == 2, False, False]),
                "truncated": np.zeros(3, bool),
            }
        )
    buf._storage.reset_rings([1])
    assert len(buf) == 6 and buf.unfinished_index().tolist() == [1, 7]
    buf.add(
        {
            "obs": np.full(1, 9),
            "act": np.zeros(1),
            "rew": np.ones(1),
            "terminated": np.zeros(1, bool),
            "truncated": np.zeros(1, bool),
        },
        buffer_ids=[1],
    )
    valid = buf.sample_indices(0)
    assert valid.tolist() == [2, 0, 1, 3, 8, 6, 7]
    assert buf.prev(valid).tolist() == [2, 0, 0, 3, 8, 8, 6]
    assert buf.next(valid).tolist() == [2, 1, 1, 3, 6, 7, 7]
    assert buf.unfinished_index().tolist() == [1, 3, 7]
