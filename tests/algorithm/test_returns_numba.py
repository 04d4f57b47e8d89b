"""The numba GAE loop against the vectorized numpy path (and Tianshou's numba loop)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdrl.algorithm import returns
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.buffer import VectorReplayBuffer

pytest.importorskip("numba")


def _rollout(n_env: int = 4, steps: int = 300, seed: int = 0) -> VectorReplayBuffer:
    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(n_env * steps, n_env)
    for _ in range(steps - 7):  # the last episodes stay open: the unfinished cut
        buf.add(
            {
                "obs": rng.normal(size=(n_env, 3)),
                "act": np.zeros(n_env, dtype=np.int64),
                "rew": rng.normal(size=n_env),
                "terminated": rng.random(n_env) < 0.03,
                "truncated": rng.random(n_env) < 0.01,
                "obs_next": rng.normal(size=(n_env, 3)),
            }
        )
    return buf


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("gamma", "lam"), [(0.99, 0.95), (0.9, 1.0), (1.0, 1.0), (0.5, 0.0)])
def test_compiled_gae_matches_numpy(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype, gamma: float, lam: float
) -> None:
    buf = _rollout()
    idx = buf.sample_indices(0)
    batch = buf[idx]
    gen = torch.Generator().manual_seed(1)
    v_s = torch.randn(len(idx), 1, generator=gen, dtype=dtype)
    v_s_ = torch.randn(len(idx), generator=gen, dtype=dtype)
    assert returns._gae_kernel() is not None
    ret, adv = compute_episodic_return(batch, buf, idx, v_s_, v_s, gamma, lam)
    monkeypatch.setattr(returns, "_gae_kernel", lambda: None)
    ret_np, adv_np = compute_episodic_return(batch, buf, idx, v_s_, v_s, gamma, lam)
    assert ret.dtype == ret_np.dtype == adv.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-9
    torch.testing.assert_close(adv, adv_np, rtol=tol, atol=tol)
    torch.testing.assert_close(ret, ret_np, rtol=tol, atol=tol)


def test_compiled_gae_matches_tianshou() -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm.algorithm_base import Algorithm
    from tianshou.data import Batch as TsBatch
    from tianshou.data import VectorReplayBuffer as TsBuffer

    rng = np.random.default_rng(2)
    ours, theirs = VectorReplayBuffer(800, 4), TsBuffer(800, 4)
    for _ in range(190):
        step = {
            "obs": rng.normal(size=(4, 2)),
            "act": np.zeros(4, dtype=np.int64),
            "rew": rng.normal(size=4),
            "terminated": rng.random(4) < 0.05,
            "truncated": rng.random(4) < 0.01,
            "obs_next": rng.normal(size=(4, 2)),
        }
        ours.add(step)
        theirs.add(TsBatch(**step, info={}))
    idx = ours.sample_indices(0)
    np.testing.assert_array_equal(idx, theirs.sample_indices(0))
    v_s, v_s_ = torch.randn(len(idx)), torch.randn(len(idx))
    ret, adv = compute_episodic_return(ours[idx], ours, idx, v_s_, v_s, 0.99, 0.95)
    t_ret, t_adv = Algorithm.compute_episodic_return(
        theirs[idx], theirs, idx, v_s_, v_s, 0.99, 0.95
    )
    np.testing.assert_allclose(adv.numpy(), t_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), t_ret, rtol=1e-5, atol=1e-5)


def test_bad_values_still_name_the_argument() -> None:
    buf = _rollout(steps=20)
    idx = buf.sample_indices(0)
    with pytest.raises(ValueError, match=r"v_s_: expected \d+ values \(one per index\)"):
        compute_episodic_return(buf[idx], buf, idx, torch.zeros(3), torch.zeros(len(idx)))


def _wrapped_rollout(seed: int, n_env: int, steps: int, rew_dtype: type) -> VectorReplayBuffer:
    """A vector buffer that wrapped around (``steps`` > capacity per env) with episodes
    ending by termination and truncation, and open ones at the end."""
    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(n_env * 40, n_env)
    for _ in range(steps):
        buf.add(
            {
                "obs": rng.normal(size=(n_env, 2)),
                "act": np.zeros(n_env, dtype=np.int64),
                "rew": rng.normal(size=n_env).astype(rew_dtype),
                "terminated": rng.random(n_env) < 0.06,
                "truncated": rng.random(n_env) < 0.04,
                "obs_next": rng.normal(size=(n_env, 2)),
            }
        )
    return buf


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rew_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("gamma", [0.99, 0.5, 1.0, 0.0])
def test_compiled_nstep_chains_equal_the_episode_api_path(
    monkeypatch: pytest.MonkeyPatch, seed: int, rew_dtype: type, gamma: float
) -> None:
    buf = _wrapped_rollout(seed, n_env=3, steps=[25, 57, 90][seed], rew_dtype=rew_dtype)
    assert buf._nstep_arrays() is not None and returns._nstep_kernel() is not None
    idx = np.concatenate([buf.sample_indices(0), buf.sample_indices(64)])
    for n in (1, 2, 3, 5):
        fast = returns.nstep_reward_discount(buf, idx, gamma, n)
        with monkeypatch.context() as m:
            m.setattr(buf, "_nstep_arrays", lambda: None)  # the episode-API path
            slow = returns.nstep_reward_discount(buf, idx, gamma, n)
        for got, want in zip(fast, slow, strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)  # the same arithmetic: bit for bit


def test_buffers_with_their_own_episode_queries_take_the_api_path() -> None:
    class Shifted(VectorReplayBuffer):
        def next(self, index: object) -> object:  # a subclass's own chain rule
            return super().next(index)

    buf = Shifted(8, 1)
    buf.add({"obs": np.zeros((1, 2)), "act": np.zeros(1), "rew": np.ones(1),
             "terminated": np.zeros(1, bool), "truncated": np.zeros(1, bool),
             "obs_next": np.zeros((1, 2))})  # fmt: skip
    assert buf._nstep_arrays() is None
    plain = VectorReplayBuffer(8, 1)
    plain.add({k: buf[np.array([0])][k].numpy() for k in ("obs", "act", "rew", "obs_next")}
              | {"terminated": np.zeros(1, bool), "truncated": np.zeros(1, bool)})  # fmt: skip
    assert plain._nstep_arrays() is not None
