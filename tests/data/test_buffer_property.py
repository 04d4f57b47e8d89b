"""Property tests: random add sequences against a small pure-Python model of the episode rules."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import TensorDict

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer


class RingModel:
    """Tianshou's per-sub-buffer rules, written out one transition at a time."""

    def __init__(self, num: int, size: int) -> None:
        self.num, self.size = num, size
        self.obs = [0] * (num * size)
        self.done = [False] * (num * size)
        self.cursor = [0] * num
        self.length = [0] * num
        self.last = [r * size for r in range(num)]
        self.ret = [0.0] * num
        self.eplen = [0] * num
        self.start = [r * size for r in range(num)]

    def add(self, ring: int, obs: int, rew: float, done: bool) -> tuple:
        off = ring * self.size
        ptr = off + self.cursor[ring]
        self.obs[ptr], self.done[ptr] = obs, done
        self.last[ring] = ptr
        self.cursor[ring] = (self.cursor[ring] + 1) % self.size
        self.length[ring] = min(self.length[ring] + 1, self.size)
        self.ret[ring] += rew
        self.eplen[ring] += 1
        out = (
            ptr,
            self.ret[ring] if done else 0.0,
            self.eplen[ring] if done else 0,
            self.start[ring],
        )
        if done:
            self.ret[ring], self.eplen[ring] = 0.0, 0
            self.start[ring] = off + self.cursor[ring]
        return out

    def _ring(self, i: int) -> tuple[int, int, int]:
        ring = i // self.size
        return ring, ring * self.size, max(self.length[ring], 1)

    def prev(self, i: int) -> int:
        ring, off, n = self._ring(i)
        p = (i - off - 1) % n
        end = self.done[off + p] or off + p == self.last[ring]
        return off + (p + end) % n

    def next(self, i: int) -> int:
        ring, off, n = self._ring(i)
        end = self.done[i] or i == self.last[ring]
        return off + (i - off + 1 - end) % n

    def unfinished(self) -> list[int]:
        return [
            self.last[r] for r in range(self.num) if self.length[r] and not self.done[self.last[r]]
        ]

    def valid(self) -> list[int]:
        out = []
        for r in range(self.num):
            off, c, n = r * self.size, self.cursor[r], self.length[r]
            local = list(range(n)) if n < self.size else list(range(c, self.size)) + list(range(c))
            out += [off + j for j in local]
        return out


def _check(buf: ReplayBuffer, model: RingModel) -> None:
    valid = buf.sample_indices(0)
    assert valid.tolist() == model.valid()
    assert len(buf) == len(valid)
    assert buf.prev(valid).tolist() == [model.prev(i) for i in valid.tolist()]
    assert buf.next(valid).tolist() == [model.next(i) for i in valid.tolist()]
    assert buf.unfinished_index().tolist() == model.unfinished()
    if len(valid):
        assert buf[valid].obs.tolist() == [model.obs[i] for i in valid.tolist()]
        assert buf.done[torch.from_numpy(valid)].tolist() == [model.done[i] for i in valid.tolist()]
        i = int(valid[-1])
        assert buf.prev(i) == model.prev(i) and buf.next(i) == model.next(i)


step_strategy = st.tuples(
    st.lists(st.integers(0, 2), min_size=0, max_size=3, unique=True),  # ring ids (subset)
    st.lists(st.sampled_from(["", "term", "trunc", "both"]), min_size=3, max_size=3),
    st.lists(st.integers(-3, 3), min_size=3, max_size=3),
)


@settings(max_examples=60, deadline=None)
@given(
    num=st.integers(1, 3),
    size=st.integers(1, 5),
    steps=st.lists(step_strategy, min_size=1, max_size=25),
    default_ids=st.booleans(),
)
def test_vector_matches_model(num: int, size: int, steps: list, default_ids: bool) -> None:
    buf = VectorReplayBuffer(num * size, num)
    model = RingModel(num, size)
    counter = 0
    for rings, flags, rews in steps:
        rings = [r for r in rings if r < num]
        if default_ids:
            rings = list(range(num))
        if not rings:
            continue
        k = len(rings)
        flags = (flags * 2)[:k]
        term = np.array([f in ("term", "both") for f in flags])
        trunc = np.array([f in ("trunc", "both") for f in flags])
        rew = np.array(rews * 2, dtype=np.float64)[:k]
        obs = np.arange(counter, counter + k)
        counter += k
        batch = {"obs": obs, "act": obs, "rew": rew, "terminated": term, "truncated": trunc}
        got = buf.add(batch, None if default_ids else rings)
        want = [
            model.add(r, int(o), float(w), bool(a or b))
            for r, o, w, a, b in zip(rings, obs, rew, term, trunc)
        ]
        assert [list(x) for x in zip(*(g.tolist() for g in got))] == [list(w) for w in want]
        _check(buf, model)


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 6),
    steps=st.lists(
        st.tuples(st.sampled_from(["", "term", "trunc"]), st.integers(-2, 2)),
        min_size=1,
        max_size=20,
    ),
    stacked=st.booleans(),
    chunk=st.integers(1, 4),
)
def test_single_matches_model_and_extend(size: int, steps: list, stacked: bool, chunk: int) -> None:
    buf = ReplayBuffer(size)
    ext = ReplayBuffer(size)  # the same data through TorchRL's ``extend``
    model = RingModel(1, size)
    for t, (flag, rew) in enumerate(steps):
        batch = {
            "obs": t,
            "act": t,
            "rew": float(rew),
            "terminated": flag == "term",
            "truncated": flag == "trunc",
        }
        if stacked:
            batch = {k: np.asarray([v]) for k, v in batch.items()}
        got = buf.add(batch, [0] if stacked else None)
        want = model.add(0, t, float(rew), flag != "")
        assert tuple(g.tolist()[0] for g in got) == want
        _check(buf, model)
    for lo in range(0, len(steps), chunk):
        part = steps[lo : lo + chunk]
        ext.extend(
            TensorDict(
                {
                    "obs": torch.arange(lo, lo + len(part)),
                    "rew": torch.tensor([float(r) for _, r in part]),
                    "terminated": torch.tensor([f == "term" for f, _ in part]),
                    "truncated": torch.tensor([f == "trunc" for f, _ in part]),
                },
                [len(part)],
            )
        )
    _check(ext, model)
    st_, sm = ext._storage, buf._storage
    assert (st_.ep_return.tolist(), st_.ep_len.tolist(), st_.ep_start.tolist()) == (
        sm.ep_return.tolist(),
        sm.ep_len.tolist(),
        sm.ep_start.tolist(),
    )


@settings(max_examples=30, deadline=None)
@given(
    src_size=st.integers(1, 6),
    dst_size=st.integers(1, 6),
    n_src=st.integers(0, 10),
    n_dst=st.integers(0, 8),
)
def test_update_matches_model(src_size: int, dst_size: int, n_src: int, n_dst: int) -> None:
    src, dst = ReplayBuffer(src_size), ReplayBuffer(dst_size)
    model = RingModel(1, dst_size)
    for t in range(n_dst):
        dst.add({"obs": t, "act": t, "rew": 1.0, "terminated": t % 3 == 2, "truncated": False})
        model.add(0, t, 1.0, t % 3 == 2)
    for t in range(n_src):
        src.add(
            {"obs": 100 + t, "act": t, "rew": 1.0, "terminated": t % 4 == 3, "truncated": False}
        )
    stats = (model.ret[0], model.eplen[0], model.start[0])
    new = dst.update(src)
    for i in src.sample_indices(0).tolist():
        ptr = model.cursor[0]
        model.obs[ptr], model.done[ptr] = src.obs[i].item(), bool(src.done[i])
        model.last[0] = ptr
        model.cursor[0] = (ptr + 1) % dst_size
        model.length[0] = min(model.length[0] + 1, dst_size)
    assert len(new) == len(src)
    _check(dst, model)
    assert (dst._storage.ep_return[0], dst._storage.ep_len[0], dst._storage.ep_start[0]) == stats
