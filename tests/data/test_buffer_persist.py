"""Buffer round trips: pickle, HDF5, state_dict, TorchRL dumps/loads, memmap, from_data."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer


def _fill_vector(buf: VectorReplayBuffer, steps: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = buf.buffer_num
    for t in range(steps):
        buf.add(
            {
                "obs": {"pos": rng.standard_normal((n, 3)).astype(np.float32)},
                "act": rng.integers(0, 4, n),
                "rew": rng.standard_normal(n),
                "terminated": rng.random(n) < 0.2,
                "truncated": rng.random(n) < 0.1,
                "obs_next": {"pos": rng.standard_normal((n, 3)).astype(np.float32)},
                "info": {"env_id": np.arange(n)},
            },
            buffer_ids=np.arange(n),
        )
        # leave the last sub-buffer partially filled and rings out of step
        if t % 3 == 0:
            buf.add(
                {
                    "obs": {"pos": np.zeros((1, 3), np.float32)},
                    "act": np.zeros(1, np.int64),
                    "rew": np.ones(1),
                    "terminated": np.zeros(1, bool),
                    "truncated": np.zeros(1, bool),
                    "obs_next": {"pos": np.zeros((1, 3), np.float32)},
                    "info": {"env_id": np.zeros(1, np.int64)},
                },
                buffer_ids=[0],
            )


def _signature(buf: ReplayBuffer) -> tuple:
    idx = buf.sample_indices(0)
    return (
        len(buf),
        idx.tolist(),
        buf.prev(idx).tolist(),
        buf.next(idx).tolist(),
        buf.unfinished_index().tolist(),
        buf[idx].obs.pos.tolist(),
        buf._storage.ep_return.tolist(),
        buf._storage.ep_len.tolist(),
        buf._storage.ep_start.tolist(),
    )


def _continue(buf: ReplayBuffer) -> tuple:
    n = buf.buffer_num
    out = buf.add(
        {
            "obs": {"pos": np.ones((n, 3), np.float32)},
            "act": np.ones(n, np.int64),
            "rew": np.ones(n),
            "terminated": np.ones(n, bool),
            "truncated": np.zeros(n, bool),
            "obs_next": {"pos": np.ones((n, 3), np.float32)},
            "info": {"env_id": np.arange(n)},
        }
    )
    return (*[a.tolist() for a in out], buf.sample_indices(7).tolist())


@pytest.fixture
def vbuf() -> VectorReplayBuffer:
    buf = VectorReplayBuffer(30, 3, seed=5)
    _fill_vector(buf, 13)
    return buf


def test_pickle_round_trip(vbuf: VectorReplayBuffer) -> None:
    clone = pickle.loads(pickle.dumps(vbuf))
    assert _signature(clone) == _signature(vbuf)
    assert _continue(clone) == _continue(vbuf)
    # the clone's storage is independent and its numpy views are live
    clone.add(
        {
            "obs": {"pos": np.full((1, 3), 9, np.float32)},
            "act": np.zeros(1, np.int64),
            "rew": np.ones(1),
            "terminated": np.zeros(1, bool),
            "truncated": np.zeros(1, bool),
            "obs_next": {"pos": np.zeros((1, 3), np.float32)},
            "info": {"env_id": np.zeros(1, np.int64)},
        },
        buffer_ids=[1],
    )
    assert clone.obs.pos[clone.last_index[1]].tolist() == [9.0, 9.0, 9.0]
    assert (vbuf.obs.pos != 9).all()


def test_hdf5_round_trip(vbuf: VectorReplayBuffer, tmp_path) -> None:
    path = tmp_path / "buf.h5"
    vbuf.save_hdf5(path, compression="gzip")
    loaded = VectorReplayBuffer.load_hdf5(path)
    assert type(loaded) is VectorReplayBuffer and loaded.buffer_num == 3
    assert _signature(loaded) == _signature(vbuf)
    assert _continue(loaded) == _continue(vbuf)


def test_state_dict_round_trip(vbuf: VectorReplayBuffer) -> None:
    sd = vbuf.state_dict()
    fresh = VectorReplayBuffer(30, 3)
    fresh.load_state_dict(sd)
    assert _signature(fresh) == _signature(vbuf)
    assert _continue(fresh) == _continue(vbuf)


def test_torch_save_state_dict(vbuf: VectorReplayBuffer, tmp_path) -> None:
    torch.save(vbuf.state_dict(), tmp_path / "sd.pt")
    fresh = VectorReplayBuffer(30, 3)
    fresh.load_state_dict(torch.load(tmp_path / "sd.pt", weights_only=False))
    assert _signature(fresh) == _signature(vbuf)


def test_torchrl_dumps_loads(vbuf: VectorReplayBuffer, tmp_path) -> None:
    vbuf.dumps(tmp_path / "rb")
    fresh = VectorReplayBuffer(30, 3)
    fresh.loads(tmp_path / "rb")
    assert _signature(fresh) == _signature(vbuf)
    assert _continue(fresh) == _continue(vbuf)


def test_memmap_storage(tmp_path) -> None:
    buf = VectorReplayBuffer(30, 3, seed=5, memmap_dir=tmp_path / "mm")
    _fill_vector(buf, 13)
    ref = VectorReplayBuffer(30, 3, seed=5)
    _fill_vector(ref, 13)
    assert _signature(buf) == _signature(ref)
    files = {p.name for p in (tmp_path / "mm").iterdir()}
    assert "obs.pos.memmap" in files and "done.memmap" in files
    assert _continue(buf) == _continue(ref)
    clone = pickle.loads(pickle.dumps(buf))
    assert _signature(clone) == _signature(buf)


def test_from_data() -> None:
    n = 6
    obs = np.arange(n, dtype=np.float32)[:, None]
    term = np.array([0, 0, 1, 0, 0, 0], bool)
    trunc = np.array([0, 0, 0, 0, 1, 0], bool)
    buf = ReplayBuffer.from_data(obs, np.arange(n), np.ones(n), term, trunc, term | trunc, obs + 1)
    assert len(buf) == n == buf.maxsize
    assert buf.done.tolist() == [False, False, True, False, True, False]
    idx = np.arange(n)
    assert buf.prev(idx).tolist() == [0, 0, 1, 3, 3, 5]
    assert buf.next(idx).tolist() == [1, 2, 2, 4, 4, 5]
    assert buf.unfinished_index().tolist() == [5]
    assert buf[idx].obs_next[:, 0].tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="act: expected length 6"):
        ReplayBuffer.from_data(obs, np.arange(5), np.ones(n), term, trunc, term, obs)


def test_from_data_h5py(tmp_path) -> None:
    h5py = pytest.importorskip("h5py")
    n = 4
    with h5py.File(tmp_path / "d.h5", "w") as f:
        for name, arr in {
            "obs": np.arange(n),
            "act": np.arange(n),
            "rew": np.ones(n),
            "terminated": np.array([0, 1, 0, 0], bool),
            "truncated": np.zeros(n, bool),
            "done": np.array([0, 1, 0, 0], bool),
            "obs_next": np.arange(1, n + 1),
        }.items():
            f.create_dataset(name, data=arr)
    with h5py.File(tmp_path / "d.h5", "r") as f:
        buf = ReplayBuffer.from_data(
            *(f[k] for k in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next"))
        )
    assert buf.obs.tolist() == [0, 1, 2, 3] and buf.unfinished_index().tolist() == [3]


def test_deepcopy_is_independent(vbuf: VectorReplayBuffer) -> None:
    import copy

    clone = copy.deepcopy(vbuf)
    assert _signature(clone) == _signature(vbuf)
    assert _continue(clone) == _continue(vbuf)
    clone.add(
        {
            "obs": {"pos": np.full((3, 3), 7, np.float32)},
            "act": np.zeros(3, np.int64),
            "rew": np.ones(3),
            "terminated": np.zeros(3, bool),
            "truncated": np.zeros(3, bool),
            "obs_next": {"pos": np.zeros((3, 3), np.float32)},
            "info": {"env_id": np.arange(3)},
        }
    )
    assert (vbuf.obs.pos != 7).all() and (clone.obs.pos == 7).any()
