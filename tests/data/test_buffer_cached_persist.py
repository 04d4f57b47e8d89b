"""``CachedReplayBuffer`` as a TorchRL ``ReplayBuffer``; pickle/HDF5/state_dict round trips."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
import torchrl.data
from tensordict import TensorDict

from tdrl.data.buffer import CachedReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
from tdrl.data.buffer.cached_storage import CachedSampler, CachedStorage, CachedWriter


def _step(rng: np.random.Generator, ids: np.ndarray, t: int) -> dict:
    k = len(ids)
    return {
        "obs": (ids * 1000 + t).astype(np.float32)[:, None] + np.zeros((k, 2), np.float32),
        "act": rng.integers(0, 4, k),
        "rew": np.round(rng.standard_normal(k), 3),
        "terminated": rng.random(k) < 0.15,
        "truncated": rng.random(k) < 0.03,
        "obs_next": rng.standard_normal((k, 2)).astype(np.float32),
        "info": {"env": ids.copy()},
    }


def _run(buf: CachedReplayBuffer, steps: int, seed: int, t0: int = 0) -> list[list]:
    """Random adds on random cache subsets; returns every add's output as lists."""
    rng = np.random.default_rng(seed)
    n = buf.cached_buffer_num
    outs = []
    for t in range(t0, t0 + steps):
        ids = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
        outs.append([a.tolist() for a in buf.add(_step(rng, ids, t), buffer_ids=ids)])
    return outs


def _rows(batch) -> dict:  # type: ignore[no-untyped-def]
    return {
        ".".join((k,) if isinstance(k, str) else k): v.tolist()
        for k, v in batch.items(include_nested=True, leaves_only=True)
    }


def _signature(buf: CachedReplayBuffer) -> tuple:
    idx = buf.sample_indices(0)
    cst = buf.cache._storage
    return (
        len(buf),
        idx.tolist(),
        buf.prev(idx).tolist(),
        buf.next(idx).tolist(),
        buf.unfinished_index().tolist(),
        buf.last_index.tolist(),
        _rows(buf[idx]),
        cst.ep_return.tolist(),
        cst.ep_len.tolist(),
        cst.ep_start.tolist(),
    )


def _continue(buf: CachedReplayBuffer) -> tuple:
    outs = _run(buf, 25, seed=99, t0=500)
    return outs, _signature(buf), buf.sample_indices(9).tolist()


def _make(kind: str, seed: int | None = 4) -> CachedReplayBuffer:
    if kind == "prio":
        main: ReplayBuffer = PrioritizedReplayBuffer(40, alpha=0.7, beta=0.5, seed=1)
    elif kind == "stack":
        main = ReplayBuffer(40, stack_num=2, ignore_obs_next=True, seed=1)
    else:
        main = ReplayBuffer(40, seed=1)
    return CachedReplayBuffer(main, cached_buffer_num=3, max_episode_length=6, seed=seed)


@pytest.fixture(params=["plain", "prio", "stack"])
def cbuf(request: pytest.FixtureRequest) -> CachedReplayBuffer:
    buf = _make(request.param)
    _run(buf, 45, seed=0)
    if request.param == "prio":
        idx = buf.main_buffer.sample_indices(0)
        buf.main_buffer.update_weight(idx, np.linspace(0.1, 3.0, len(idx)))
    # finished episodes in a wrapped main buffer, open ones in the caches
    assert len(buf.main_buffer) == 40 and len(buf.cache) > 0
    assert len(buf.unfinished_index()) > 0
    return buf


def _prio_state(buf: CachedReplayBuffer) -> list | None:
    main = buf.main_buffer
    if not isinstance(main, PrioritizedReplayBuffer):
        return None
    return [main.prio_sampler.tree.leaves.tolist(), main.prio_sampler.max_priority]


def _check_same(clone: CachedReplayBuffer, buf: CachedReplayBuffer) -> None:
    assert type(clone.main_buffer) is type(buf.main_buffer)
    assert clone.options == buf.options and clone.maxsize == buf.maxsize
    assert _signature(clone) == _signature(buf)
    assert _prio_state(clone) == _prio_state(buf)
    assert _continue(clone) == _continue(buf)
    assert _prio_state(clone) == _prio_state(buf)


# ----------------------------------------------------------------- round trips
def test_pickle_round_trip(cbuf: CachedReplayBuffer) -> None:
    clone = pickle.loads(pickle.dumps(cbuf))
    assert clone.storage.main is clone.main_buffer._storage
    assert clone.storage.cache is clone.cache._storage
    assert clone.sampler.main_buffer is clone.main_buffer
    _check_same(clone, cbuf)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_hdf5_round_trip(cbuf: CachedReplayBuffer, tmp_path, compression: str | None) -> None:
    path = tmp_path / "cached.h5"
    cbuf.save_hdf5(path, compression=compression)
    loaded = CachedReplayBuffer.load_hdf5(path, device="cpu")
    assert isinstance(loaded, CachedReplayBuffer)
    assert loaded.cached_buffer_num == 3 and loaded.max_episode_length == 6
    _check_same(loaded, cbuf)


def test_hdf5_keeps_the_sub_buffer_generators(cbuf: CachedReplayBuffer, tmp_path) -> None:
    cbuf.save_hdf5(tmp_path / "c.h5")
    loaded = CachedReplayBuffer.load_hdf5(tmp_path / "c.h5")
    assert (
        loaded.main_buffer.sample_indices(5).tolist() == cbuf.main_buffer.sample_indices(5).tolist()
    )
    assert torch.equal(loaded.cache.generator.get_state(), cbuf.cache.generator.get_state())


def test_state_dict_round_trip(cbuf: CachedReplayBuffer) -> None:
    sd = cbuf.state_dict()
    assert {"_storage", "_sampler", "_writer", "_rng", "_sub_rngs"} <= set(sd)
    assert set(sd["_storage"]) == {"main", "cache"}
    fresh = _make("prio" if _prio_state(cbuf) else "stack" if cbuf.options["stack_num"] > 1 else "")
    fresh.load_state_dict(sd)
    _check_same(fresh, cbuf)


def test_torch_save_state_dict(cbuf: CachedReplayBuffer, tmp_path) -> None:
    torch.save(cbuf.state_dict(), tmp_path / "sd.pt")
    fresh = _make("prio" if _prio_state(cbuf) else "stack" if cbuf.options["stack_num"] > 1 else "")
    fresh.load_state_dict(torch.load(tmp_path / "sd.pt", weights_only=False))
    assert _signature(fresh) == _signature(cbuf)


def test_torchrl_dumps_loads(cbuf: CachedReplayBuffer, tmp_path) -> None:
    cbuf.dumps(tmp_path / "rb")
    fresh = _make("prio" if _prio_state(cbuf) else "stack" if cbuf.options["stack_num"] > 1 else "")
    fresh.loads(tmp_path / "rb")
    _check_same(fresh, cbuf)


# ------------------------------------------------------------- TorchRL surface
def test_is_a_torchrl_replay_buffer_with_real_components(cbuf: CachedReplayBuffer) -> None:
    assert isinstance(cbuf, torchrl.data.ReplayBuffer)
    assert isinstance(cbuf.storage, CachedStorage)
    assert isinstance(cbuf.sampler, CachedSampler) and isinstance(cbuf.writer, CachedWriter)
    assert len(cbuf) == len(cbuf.storage) == len(cbuf.main_buffer) + len(cbuf.cache)
    assert cbuf.storage.max_size == cbuf.maxsize
    idx = cbuf.sample_indices(0)
    # the storage returns the stored columns at global indices
    raw = cbuf.storage[idx]
    assert torch.equal(raw["obs"], torch.cat([cbuf.main_buffer.obs, cbuf.cache.obs])[idx])
    assert torch.equal(raw["done"], cbuf[idx].done)
    assert torch.equal(raw["info", "env"], cbuf.info.env[idx])
    assert torch.equal(raw["info", "env"], cbuf.get(idx, "info", stack_num=1).env)
    assert cbuf.storage[int(idx[-1])]["obs"].tolist() == raw["obs"][-1].tolist()
    assert all(cbuf.storage.contains(i) for i in idx)
    free = sorted(set(range(cbuf.maxsize)) - set(idx.tolist()))
    assert not any(cbuf.storage.contains(i) for i in free)
    # the sampler draws valid indices with the buffer's generator
    state = cbuf.generator.get_state()
    drawn, info = cbuf.sampler.sample(cbuf.storage, 500)
    assert info == {} and set(drawn.tolist()) <= set(idx.tolist())
    cbuf.generator.set_state(state)
    assert cbuf.sample_indices(500).tolist() == drawn.tolist()
    # rb.sample: the Tianshou signature
    batch, ind = cbuf.sample(7)
    assert len(ind) == 7 and set(ind.tolist()) <= set(idx.tolist())
    assert torch.equal(batch.obs, cbuf[ind].obs)


def test_torchrl_writes(cbuf: CachedReplayBuffer) -> None:
    before = _signature(cbuf)
    td = TensorDict({"obs": torch.zeros(2, 2)}, [2])
    for call in (
        lambda: cbuf.extend(td),
        lambda: cbuf.writer.extend(td),
        lambda: cbuf.writer.add(td[0]),
    ):
        with pytest.raises(NotImplementedError, match=r"add\(batch, buffer_ids\)"):
            call()
    with pytest.raises(NotImplementedError, match=r"add\(batch, buffer_ids\)"):
        cbuf.storage.set(torch.tensor([0, 1]), td)
    assert _signature(cbuf) == before
    # rb[idx] = data overwrites rows in place (main and cache), bookkeeping untouched
    main_row, cache_row = 3, int(cbuf.cache.sample_indices(0)[0]) + cbuf.main_buffer.maxsize
    done = cbuf.done[[main_row, cache_row]]
    cbuf[np.array([main_row, cache_row])] = TensorDict(
        {
            "obs": torch.full((2, 2), -7.0),
            "terminated": done.clone(),
            "truncated": torch.zeros(2, dtype=torch.bool),
        },
        [2],
    )
    assert cbuf.obs[[main_row, cache_row]].tolist() == [[-7.0, -7.0]] * 2
    cbuf[cache_row] = TensorDict(
        {"obs": torch.full((2,), 4.0), "terminated": done[1].clone(), "truncated": done[1] & False},
        [],
    )
    assert cbuf.obs[[main_row, cache_row]].tolist() == [[-7.0, -7.0], [4.0, 4.0]]
    after = _signature(cbuf)
    assert after[:6] == before[:6]
    with pytest.raises(ValueError, match="expected 2 rows"):
        cbuf.storage.set(torch.tensor([0, 1]), td[:1], set_cursor=False)
    cbuf.empty()
    assert len(cbuf) == 0 and len(cbuf.storage) == 0


def test_storage_episode_queries_match_the_buffer(cbuf: CachedReplayBuffer) -> None:
    st = cbuf.storage
    idx = cbuf.sample_indices(0)
    assert st.valid_indices().tolist() == idx.tolist()
    assert st.prev(idx).tolist() == cbuf.prev(idx).tolist()
    assert st.next(int(idx[0])) == cbuf.next(int(idx[0]))
    with pytest.raises(IndexError, match=rf"expected indices in \[0, {cbuf.maxsize}\)"):
        st.get([cbuf.maxsize])
    with pytest.raises(TypeError, match="expected a CachedStorage"):
        cbuf.sampler.sample(cbuf.main_buffer.storage, 2)


def test_bad_state_dict_and_file_leave_the_buffer_unchanged(cbuf, tmp_path) -> None:  # type: ignore[no-untyped-def]
    before = _signature(cbuf)
    other = CachedReplayBuffer(ReplayBuffer(40), cached_buffer_num=2, max_episode_length=6)
    with pytest.raises(ValueError, match=r"state_dict\['cache'\]: expected max_size=18"):
        cbuf.load_state_dict(other.state_dict())
    with pytest.raises(KeyError, match=r"expected keys \['main', 'cache'\]"):
        cbuf.load_state_dict(ReplayBuffer(40).state_dict())
    assert _signature(cbuf) == before
    ReplayBuffer(5).save_hdf5(tmp_path / "plain.h5")
    with pytest.raises(ValueError, match="expected a file written by CachedReplayBuffer"):
        CachedReplayBuffer.load_hdf5(tmp_path / "plain.h5")
