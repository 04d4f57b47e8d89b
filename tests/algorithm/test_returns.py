"""Tests for tdrl.algorithm.returns: GAE / Monte-Carlo and n-step returns.

Values are checked three ways: by hand for small buffers, against a per-element reference
loop (Tianshou's formulas written out) on random buffers, and against Tianshou itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.algorithm.returns import (
    compute_episodic_return,
    compute_nstep_return,
    discounted_segment_sum,
)


class FakeVectorBuffer:
    """A minimal ring buffer with Tianshou's episode rules (``buffer_num`` sub-buffers).

    Implements exactly what the return functions use: ``next``, ``unfinished_index``,
    ``sample_indices(0)``, ``__getitem__`` and the ``rew``/``terminated``/``truncated``/``done``
    columns as torch tensors of length ``maxsize``.
    """

    def __init__(self, size: int, buffer_num: int = 1) -> None:
        self.sub = size
        self.num = buffer_num
        self.maxsize = size * buffer_num
        self.rew = torch.zeros(self.maxsize, dtype=torch.float64)
        self.terminated = torch.zeros(self.maxsize, dtype=torch.bool)
        self.truncated = torch.zeros(self.maxsize, dtype=torch.bool)
        self.done = torch.zeros(self.maxsize, dtype=torch.bool)
        self.ptr = np.zeros(buffer_num, dtype=np.int64)
        self.len = np.zeros(buffer_num, dtype=np.int64)
        self.last = np.zeros(buffer_num, dtype=np.int64)

    def add(self, rew, terminated, truncated, buffer_ids=None) -> np.ndarray:
        ids = np.arange(self.num) if buffer_ids is None else np.asarray(buffer_ids)
        out = []
        for j, b in enumerate(ids):
            i = b * self.sub + self.ptr[b]
            self.rew[i] = float(np.asarray(rew)[j])
            self.terminated[i] = bool(np.asarray(terminated)[j])
            self.truncated[i] = bool(np.asarray(truncated)[j])
            self.done[i] = self.terminated[i] | self.truncated[i]
            self.last[b] = i
            self.ptr[b] = (self.ptr[b] + 1) % self.sub
            self.len[b] = min(self.len[b] + 1, self.sub)
            out.append(i)
        return np.array(out)

    def next(self, index) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        sub = index // self.sub
        off = sub * self.sub
        end = self.done.numpy()[index] | (index == self.last[sub])
        return off + (index - off + (~end).astype(np.int64)) % self.len[sub]

    def unfinished_index(self) -> np.ndarray:
        out = [self.last[b] for b in range(self.num) if self.len[b] and not self.done[self.last[b]]]
        return np.array(out, dtype=np.int64)

    def sample_indices(self, batch_size: int) -> np.ndarray:
        assert batch_size == 0
        parts = []
        for b in range(self.num):
            off = b * self.sub
            if self.len[b] < self.sub:
                parts.append(off + np.arange(self.len[b]))
            else:
                parts.append(off + np.r_[np.arange(self.ptr[b], self.sub), np.arange(self.ptr[b])])
        return np.concatenate(parts).astype(np.int64)

    def __getitem__(self, idx) -> dict:
        return {
            "rew": self.rew[idx],
            "terminated": self.terminated[idx],
            "truncated": self.truncated[idx],
            "done": self.done[idx],
        }


# --- reference implementations: Tianshou's formulas, one element at a time -------------------


def ref_gae(buf, idx, v_s_, v_s, gamma, lam):
    rew = buf.rew.numpy()[idx]
    vn = np.asarray(v_s_, dtype=np.float64) * ~buf.terminated.numpy()[idx]
    end = buf.done.numpy()[idx] | np.isin(idx, buf.unfinished_index())
    adv = np.zeros(len(idx))
    gae = 0.0
    for i in range(len(idx) - 1, -1, -1):
        delta = rew[i] + gamma * vn[i] - v_s[i]
        gae = delta + (0.0 if end[i] else gamma * lam) * gae
        adv[i] = gae
    return adv + np.asarray(v_s), adv


def ref_nstep(buf, idx, q_next, gamma, n):
    """q_next[i] = Q(obs_next of buffer index i); walk each index forward one by one."""
    rew, done, term = buf.rew.numpy(), buf.done.numpy(), buf.terminated.numpy()
    unf = set(buf.unfinished_index().tolist())
    out = np.zeros(len(idx))
    for j, t in enumerate(idx):
        ret, disc, cur = 0.0, 1.0, int(t)
        for k in range(n):
            ret += disc * rew[cur]
            disc *= gamma
            if done[cur] or cur in unf or k == n - 1:
                break
            cur = int(buf.next(np.array([cur]))[0])
        out[j] = ret + disc * q_next[cur] * (not term[cur])
    return out


def make_buffer(rng, size, num, steps, p_term=0.1, p_trunc=0.1, ids_fn=None):
    buf = FakeVectorBuffer(size, num)
    for _ in range(steps):
        ids = np.arange(num) if ids_fn is None else ids_fn(rng)
        buf.add(
            rng.standard_normal(len(ids)),
            rng.random(len(ids)) < p_term,
            rng.random(len(ids)) < p_trunc,
            ids,
        )
    return buf


# --- the kernel -------------------------------------------------------------------------------


def loop_segment_sum(a, end, g):
    x, s = np.zeros(len(a)), 0.0
    for i in range(len(a) - 1, -1, -1):
        s = a[i] + (0.0 if end[i] else g) * s
        x[i] = s
    return x


@pytest.mark.parametrize("g", [0.0, 1e-300, 1e-3, 0.1, 0.5, 0.9405, 0.999, 1.0])
@pytest.mark.parametrize("n", [1, 2, 5, 300, 4097, 20000])
def test_segment_sum_matches_loop(g: float, n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n)
    for p in (0.0, 0.01, 0.3):
        end = rng.random(n) < p
        np.testing.assert_allclose(
            discounted_segment_sum(a, end, g), loop_segment_sum(a, end, g), rtol=1e-9, atol=1e-9
        )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-100, 100), st.booleans()), min_size=0, max_size=200),
    st.floats(0.0, 1.0),
)
def test_segment_sum_property(data, g) -> None:
    a = np.array([d[0] for d in data], dtype=np.float64)
    end = np.array([d[1] for d in data], dtype=bool)
    np.testing.assert_allclose(
        discounted_segment_sum(a, end, g), loop_segment_sum(a, end, g), rtol=1e-7, atol=1e-7
    )


def test_segment_sum_bad_input() -> None:
    with pytest.raises(ValueError, match="end: expected 3"):
        discounted_segment_sum(np.zeros(3), np.zeros(2, dtype=bool), 0.5)
    with pytest.raises(ValueError, match="g: expected a discount in"):
        discounted_segment_sum(np.zeros(3), np.zeros(3, dtype=bool), 1.5)


# --- GAE by hand ------------------------------------------------------------------------------


def _one_episode(last: str) -> FakeVectorBuffer:
    """Four steps of reward 1; the last step terminated, truncated or left open."""
    buf = FakeVectorBuffer(8, 1)
    for t in range(4):
        buf.add([1.0], [last == "terminated" and t == 3], [last == "truncated" and t == 3])
    return buf


@pytest.mark.parametrize(
    ("last", "expected_ret"),
    [
        # V(s) = [2, 3, 4, 5], V(s') = [3, 4, 5, 10], gamma = 0.5, lambda = 1: the TD errors
        # telescope, so returns are discounted reward sums + the bootstrap of the last step
        ("terminated", [1 + 0.5 + 0.25 + 0.125, 1 + 0.5 + 0.25, 1.5, 1.0]),
        ("truncated", [1.875 + 0.0625 * 10, 1.75 + 0.125 * 10, 1.5 + 0.25 * 10, 1 + 0.5 * 10]),
        ("unfinished", [1.875 + 0.0625 * 10, 1.75 + 0.125 * 10, 1.5 + 0.25 * 10, 1 + 0.5 * 10]),
    ],
)
def test_gae_endings_by_hand(last: str, expected_ret: list[float]) -> None:
    buf = _one_episode(last)
    idx = buf.sample_indices(0)
    assert (buf.unfinished_index().tolist() == [3]) == (last == "unfinished")
    v_s, v_s_ = torch.tensor([2.0, 3.0, 4.0, 5.0]), torch.tensor([3.0, 4.0, 5.0, 10.0])
    ret, adv = compute_episodic_return(buf[idx], buf, idx, v_s_, v_s, gamma=0.5, gae_lambda=1.0)
    torch.testing.assert_close(ret, torch.tensor(expected_ret))
    torch.testing.assert_close(adv, torch.tensor(expected_ret) - v_s)


def test_gae_lambda_by_hand() -> None:
    # two steps, second one truncated; delta_t = r + g V' - V
    buf = FakeVectorBuffer(4, 1)
    buf.add([1.0], [False], [False])
    buf.add([2.0], [False], [True])
    idx = buf.sample_indices(0)
    v_s_, v_s = torch.tensor([3.0, 4.0]), torch.tensor([0.5, 1.0])
    g, lam = 0.9, 0.8
    d1 = 2.0 + g * 4.0 - 1.0
    d0 = 1.0 + g * 3.0 - 0.5
    ret, adv = compute_episodic_return(buf[idx], buf, idx, v_s_, v_s, g, lam)
    torch.testing.assert_close(adv, torch.tensor([d0 + g * lam * d1, d1]))
    torch.testing.assert_close(ret, adv + v_s)


def test_gae_vector_buffer_wraparound_and_interleaved() -> None:
    rng = np.random.default_rng(0)
    # 3 sub-buffers of 7; 20 steps -> every ring wraps; uneven writes interleave episodes
    buf = make_buffer(rng, 7, 3, 20, ids_fn=lambda r: np.flatnonzero(r.random(3) < 0.7))
    idx = buf.sample_indices(0)
    v_s_, v_s = rng.standard_normal(len(idx)), rng.standard_normal(len(idx))
    ret, adv = compute_episodic_return(buf[idx], buf, idx, torch.tensor(v_s_), torch.tensor(v_s))
    exp_ret, exp_adv = ref_gae(buf, idx, v_s_, v_s, 0.99, 0.95)
    np.testing.assert_allclose(ret.numpy(), exp_ret, rtol=1e-10)
    np.testing.assert_allclose(adv.numpy(), exp_adv, rtol=1e-10)
    assert ret.dtype == torch.float64


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    size=st.integers(1, 12),
    num=st.integers(1, 4),
    steps=st.integers(1, 40),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
)
def test_gae_matches_reference(seed, size, num, steps, gamma, lam) -> None:
    rng = np.random.default_rng(seed)
    buf = make_buffer(rng, size, num, steps, ids_fn=lambda r: np.flatnonzero(r.random(num) < 0.8))
    idx = buf.sample_indices(0)
    v_s_ = rng.standard_normal(len(idx)).astype(np.float32)
    v_s = rng.standard_normal(len(idx)).astype(np.float32)
    ret, adv = compute_episodic_return(buf[idx], buf, idx, v_s_, v_s, gamma, lam)
    exp_ret, exp_adv = ref_gae(
        buf, idx, v_s_.astype(np.float64), v_s.astype(np.float64), gamma, lam
    )
    assert ret.dtype == torch.float32
    np.testing.assert_allclose(adv.numpy(), exp_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), exp_ret, rtol=1e-5, atol=1e-5)


def test_monte_carlo_without_values() -> None:
    buf = _one_episode("truncated")
    idx = buf.sample_indices(0)
    ret, adv = compute_episodic_return(buf[idx], buf, idx, gamma=0.5, gae_lambda=1.0)
    torch.testing.assert_close(ret, torch.tensor([1.875, 1.75, 1.5, 1.0]))
    torch.testing.assert_close(adv, ret)


def test_gae_bad_input() -> None:
    buf = _one_episode("terminated")
    idx = buf.sample_indices(0)
    with pytest.raises(ValueError, match="v_s_: expected V"):
        compute_episodic_return(buf[idx], buf, idx, None, None, gae_lambda=0.95)
    with pytest.raises(ValueError, match="v_s: expected V"):
        compute_episodic_return(buf[idx], buf, idx, torch.zeros(4), None)
    with pytest.raises(ValueError, match=r"v_s_: expected 4 values .* got shape \(3,\)"):
        compute_episodic_return(buf[idx], buf, idx, torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="gamma: expected"):
        compute_episodic_return(buf[idx], buf, idx, torch.zeros(4), torch.zeros(4), gamma=2.0)
    with pytest.raises(KeyError, match="'rew'"):
        compute_episodic_return({}, buf, idx, torch.zeros(4), torch.zeros(4))


# --- n-step -----------------------------------------------------------------------------------


def _qfn(q_next):
    def target_q(buffer, indices):
        return torch.as_tensor(q_next[indices], dtype=torch.float32)

    return target_q


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("last", ["terminated", "truncated", "unfinished"])
def test_nstep_endings_by_hand(n: int, last: str) -> None:
    buf = _one_episode(last)  # rewards 1 at buffer indices 0..3
    q = np.arange(8, dtype=np.float64) * 10.0  # Q(obs_next of i) = 10 i
    g = 0.5
    idx = np.arange(4)
    out = compute_nstep_return(buf[idx], buf, idx, _qfn(q), gamma=g, n_step=n)
    expected = []
    for t in range(4):
        k = min(n, 4 - t)  # steps until the episode's last step (inclusive)
        ret = sum(g**i for i in range(k))
        boot = t + k - 1
        masked = last == "terminated" and boot == 3
        expected.append(ret + (0.0 if masked else g**k * q[boot]))
    assert out["returns"].shape == (4, 1)
    assert out["returns"].dtype == torch.float32
    torch.testing.assert_close(
        out["returns"].flatten(), torch.tensor(expected, dtype=torch.float32)
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    size=st.integers(1, 10),
    num=st.integers(1, 3),
    steps=st.integers(1, 30),
    n=st.integers(1, 4),
    gamma=st.floats(0.0, 1.0),
)
def test_nstep_matches_reference(seed, size, num, steps, n, gamma) -> None:
    rng = np.random.default_rng(seed)
    buf = make_buffer(rng, size, num, steps, ids_fn=lambda r: np.flatnonzero(r.random(num) < 0.8))
    valid = buf.sample_indices(0)
    idx = rng.choice(valid, size=min(len(valid), 16))
    q = rng.standard_normal(buf.maxsize)
    out = compute_nstep_return({}, buf, idx, _qfn(q.astype(np.float32)), gamma, n)
    exp = ref_nstep(buf, idx, q.astype(np.float32).astype(np.float64), gamma, n)
    np.testing.assert_allclose(out["returns"].numpy()[:, 0], exp, rtol=1e-5, atol=1e-5)


def test_nstep_multi_action_q_and_weight() -> None:
    from tensordict import TensorDict

    buf = _one_episode("truncated")
    idx = np.array([0, 2])
    batch = TensorDict({"weight": torch.ones(2, dtype=torch.float64)}, batch_size=[2])

    def target_q(buffer, indices):
        return torch.stack([torch.as_tensor(indices, dtype=torch.float64)] * 3, 1)

    out = compute_nstep_return(batch, buf, idx, target_q, gamma=1.0, n_step=2)
    # index 0 -> 2 steps, bootstrap at index 1; index 2 -> 2 steps, bootstrap at index 3
    torch.testing.assert_close(
        out["returns"], torch.tensor([[3.0] * 3, [5.0] * 3], dtype=torch.float64)
    )
    assert out["weight"].dtype == torch.float64


def test_nstep_bad_input() -> None:
    from tensordict import TensorDict

    buf = _one_episode("terminated")
    with pytest.raises(ValueError, match="n_step: expected an int >= 1"):
        compute_nstep_return({}, buf, np.arange(2), _qfn(np.zeros(8)), n_step=0)
    with pytest.raises(ValueError, match="indices: expected 3 indices"):
        compute_nstep_return(TensorDict({}, [3]), buf, np.arange(2), _qfn(np.zeros(8)))
    with pytest.raises(ValueError, match=r"target_q_fn: expected a leading dimension of 2"):
        compute_nstep_return({}, buf, np.arange(2), lambda b, i: torch.zeros(3))


# --- differential tests against Tianshou ------------------------------------------------------


def _tianshou_pair(rng, size, num, steps):
    """The same random writes into a Tianshou VectorReplayBuffer and a FakeVectorBuffer."""
    ts_data = pytest.importorskip("tianshou.data")
    tsb = ts_data.VectorReplayBuffer(size * num, num)
    fake = FakeVectorBuffer(size, num)
    for _ in range(steps):
        ids = np.flatnonzero(rng.random(num) < 0.8)
        if len(ids) == 0:
            continue
        rew = rng.standard_normal(len(ids))
        term = rng.random(len(ids)) < 0.1
        trunc = rng.random(len(ids)) < 0.1
        tsb.add(
            ts_data.Batch(
                obs=np.zeros((len(ids), 2)),
                act=np.zeros(len(ids)),
                rew=rew,
                terminated=term,
                truncated=trunc,
                obs_next=np.zeros((len(ids), 2)),
                info=ts_data.Batch(),
            ),
            buffer_ids=ids,
        )
        fake.add(rew, term, trunc, ids)
    return tsb, fake


@pytest.mark.parametrize("seed", range(6))
def test_gae_against_tianshou(seed: int) -> None:
    Algorithm = pytest.importorskip("tianshou.algorithm.algorithm_base").Algorithm
    rng = np.random.default_rng(seed)
    tsb, fake = _tianshou_pair(rng, 9, 3, 30)
    idx = tsb.sample_indices(0)
    np.testing.assert_array_equal(idx, fake.sample_indices(0))
    v_s_, v_s = torch.randn(len(idx)), torch.randn(len(idx))
    gamma, lam = 0.9, 0.7
    exp_ret, exp_adv = Algorithm.compute_episodic_return(tsb[idx], tsb, idx, v_s_, v_s, gamma, lam)
    for buf in (tsb, fake):
        ret, adv = compute_episodic_return(buf[idx], buf, idx, v_s_, v_s, gamma, lam)
        np.testing.assert_allclose(ret.numpy(), exp_ret, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(adv.numpy(), exp_adv, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [1, 3])
def test_nstep_against_tianshou(seed: int, n: int) -> None:
    Algorithm = pytest.importorskip("tianshou.algorithm.algorithm_base").Algorithm
    rng = np.random.default_rng(seed)
    tsb, fake = _tianshou_pair(rng, 9, 3, 30)
    idx = tsb.sample_indices(32)
    q = torch.randn(tsb.maxsize, 2)

    def target_q(buffer, indices):
        return q[indices]

    expected = Algorithm.compute_nstep_return(tsb[idx], tsb, idx, target_q, 0.9, n).returns
    for buf in (tsb, fake):
        got = compute_nstep_return({}, buf, idx, target_q, 0.9, n)["returns"]
        torch.testing.assert_close(got, expected)


# --- the real tdrl buffer ----------------------------------------------------------------------


def _real_and_fake(rng, size, num, steps):
    """The same random writes into tdrl's VectorReplayBuffer and the FakeVectorBuffer."""
    from tdrl.data.buffer import VectorReplayBuffer

    real = VectorReplayBuffer(size * num, num)
    fake = FakeVectorBuffer(size, num)
    for _ in range(steps):
        ids = np.flatnonzero(rng.random(num) < 0.8)
        if len(ids) == 0:
            continue
        k = len(ids)
        rew, term, trunc = rng.standard_normal(k), rng.random(k) < 0.1, rng.random(k) < 0.1
        real.add(
            {
                "obs": np.zeros((k, 2)),
                "act": np.zeros(k),
                "rew": rew,
                "terminated": term,
                "truncated": trunc,
                "obs_next": np.zeros((k, 2)),
            },
            buffer_ids=ids,
        )
        fake.add(rew, term, trunc, ids)
    return real, fake


@pytest.mark.parametrize("seed", range(4))
def test_real_buffer_matches_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    real, fake = _real_and_fake(rng, 7, 3, 25)
    idx = real.sample_indices(0)
    np.testing.assert_array_equal(idx, fake.sample_indices(0))
    np.testing.assert_array_equal(real.unfinished_index(), fake.unfinished_index())
    v_s_, v_s = torch.randn(len(idx)), torch.randn(len(idx))
    ret, adv = compute_episodic_return(real[idx], real, idx, v_s_, v_s, 0.9, 0.8)
    exp_ret, exp_adv = ref_gae(fake, idx, v_s_.double().numpy(), v_s.double().numpy(), 0.9, 0.8)
    np.testing.assert_allclose(adv.numpy(), exp_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), exp_ret, rtol=1e-5, atol=1e-5)
    q = rng.standard_normal(real.maxsize)
    sample = real.sample_indices(20)
    for n in (1, 2, 4):
        out = compute_nstep_return(real[sample], real, sample, _qfn(q), 0.9, n)
        exp = ref_nstep(fake, sample, q.astype(np.float32).astype(np.float64), 0.9, n)
        np.testing.assert_allclose(out["returns"].numpy()[:, 0], exp, rtol=1e-5, atol=1e-5)


def test_nstep_reward_column_shapes() -> None:
    buf = _one_episode("truncated")
    buf.rew = buf.rew.reshape(-1, 1)  # (maxsize, 1) rewards are fine
    out = compute_nstep_return({}, buf, np.arange(2), _qfn(np.zeros(8)), gamma=1.0, n_step=2)
    torch.testing.assert_close(out["returns"].flatten(), torch.tensor([2.0, 2.0]))
    buf.rew = torch.zeros(8, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"buffer.rew: expected one scalar reward .* \(8, 2\)"):
        compute_nstep_return({}, buf, np.arange(2), _qfn(np.zeros(8)))


def test_gae_accepts_grad_tensors_and_numpy_indices_as_tensor() -> None:
    buf = _one_episode("truncated")
    idx = buf.sample_indices(0)
    v_s = torch.zeros(4, requires_grad=True)
    v_s_ = torch.ones(4, 1, requires_grad=True)
    ret, _ = compute_episodic_return(buf[idx], buf, torch.as_tensor(idx), v_s_, v_s, 0.5, 1.0)
    assert not ret.requires_grad and ret.dtype == torch.float32
    exp, _ = compute_episodic_return(buf[idx], buf, idx, v_s_.detach(), v_s.detach(), 0.5, 1.0)
    torch.testing.assert_close(ret, exp)
