"""The update's fast paths give what the general code gives.

* :func:`~tdrl.algorithm.distributional.quantile_huber_loss_and_priority` (one pass, the
  gradient written out) against :func:`quantile_huber_loss` + :func:`quantile_priority`
  through autograd: the same loss, priority and gradient, bit for bit, on its torch path
  (the compiled numba pass agrees to float rounding: ``test_quantile_kernel.py``);
* :func:`~tdrl.algorithm.algorithm_base.read_obs_next` (one column) against
  ``buffer[indices]["obs_next"]`` (every column);
* :func:`~tdrl.algorithm.returns.nstep_reward_discount` against
  :func:`compute_nstep_return` with the constant bootstraps 0 and 1.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdrl.algorithm import distributional
from tdrl.algorithm.algorithm_base import read_obs_next
from tdrl.algorithm.distributional import (
    quantile_huber_loss,
    quantile_huber_loss_and_priority,
    quantile_midpoints,
    quantile_priority,
)
from tdrl.algorithm.returns import compute_nstep_return, nstep_reward_discount
from tdrl.data.batch import Batch
from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer


@pytest.mark.parametrize("kappa", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("per_sample_taus", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_quantile_huber_matches_autograd(
    kappa: float, per_sample_taus: bool, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(distributional, "fused_quantile_huber", lambda *args: None)
    gen = torch.Generator().manual_seed(0)
    b, n, m = 16, 8, 6
    pred = torch.randn(b, n, generator=gen, dtype=dtype, requires_grad=True)
    target = 2 * torch.randn(b, m, generator=gen, dtype=dtype)
    target[0, :2] = pred[0, :2].detach()  # ties: u == 0
    taus = torch.rand(b, n, generator=gen, dtype=dtype) if per_sample_taus else None
    taus = quantile_midpoints(n, dtype=dtype) if taus is None else taus
    w = torch.rand(b, generator=gen, dtype=dtype)

    ref = quantile_huber_loss(pred, target, taus, kappa)
    ref_prio = quantile_priority(pred, target, kappa)
    (ref_grad,) = torch.autograd.grad((ref * w).mean(), pred)
    loss, prio = quantile_huber_loss_and_priority(pred, target, taus, kappa)
    (grad,) = torch.autograd.grad((loss * w).mean(), pred)

    assert torch.equal(loss, ref)
    assert torch.equal(prio, ref_prio)
    assert not prio.requires_grad
    assert torch.equal(grad, ref_grad)


def test_fused_quantile_huber_checks_shapes() -> None:
    with pytest.raises(ValueError, match="same batch shape"):
        quantile_huber_loss_and_priority(torch.zeros(2, 3), torch.zeros(3, 3), torch.zeros(3))
    with pytest.raises(ValueError, match="taus"):
        quantile_huber_loss_and_priority(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="kappa"):
        quantile_huber_loss_and_priority(
            torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3), kappa=-1.0
        )


def _filled(buf: ReplayBuffer, steps: int, envs: int = 1) -> ReplayBuffer:
    rng = np.random.default_rng(0)
    for _ in range(steps):
        done = rng.random(envs) < 0.2
        batch = Batch(
            obs=rng.normal(size=(envs, 3)).astype(np.float32),
            act=rng.integers(0, 2, size=envs),
            rew=rng.normal(size=envs),
            terminated=done & (rng.random(envs) < 0.5),
            truncated=done,
            obs_next=rng.normal(size=(envs, 3)).astype(np.float32),
        )
        if envs == 1:
            buf.add(Batch(**{k: v[0] for k, v in batch.items()}))
        else:
            buf.add(batch, buffer_ids=list(range(envs)))
    return buf


@pytest.mark.parametrize(
    "make",
    [
        lambda: _filled(ReplayBuffer(50), 80),
        lambda: _filled(VectorReplayBuffer(60, 3), 30, envs=3),
        lambda: _filled(ReplayBuffer(50, ignore_obs_next=True), 80),
    ],
)
def test_read_obs_next_matches_getitem(make: object) -> None:
    buf = make()  # type: ignore[operator]
    idx = buf.sample_indices(20)
    assert torch.equal(
        torch.as_tensor(read_obs_next(buf, idx)), torch.as_tensor(buf[idx]["obs_next"])
    )


@pytest.mark.parametrize("n_step", [1, 3])
def test_nstep_reward_discount_matches_compute_nstep_return(n_step: int) -> None:
    buf = _filled(VectorReplayBuffer(60, 3), 30, envs=3)
    idx = buf.sample_indices(25)
    last: list[np.ndarray] = []

    def zero_one(_: object, rows: np.ndarray) -> torch.Tensor:
        last.append(rows)
        return torch.tensor([[0.0, 1.0]], dtype=torch.float64).expand(len(rows), 2)

    r_d = compute_nstep_return({}, buf, idx, zero_one, 0.9, n_step)["returns"]
    ret, disc, rows = nstep_reward_discount(buf, idx, 0.9, n_step)
    assert np.array_equal(rows, last[0])
    assert np.array_equal(ret, r_d[:, 0].numpy())
    np.testing.assert_allclose(disc, (r_d[:, 1] - r_d[:, 0]).numpy(), rtol=0, atol=1e-15)
