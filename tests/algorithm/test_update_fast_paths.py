"""The update's fast paths give what the general code gives.

* :func:`~tdrl.algorithm.distributional.quantile_huber_loss_and_priority` (one pass, the
  gradient written out) against :func:`quantile_huber_loss` + :func:`quantile_priority`
  through autograd: the same loss, priority and gradient, bit for bit, on its torch path
  (the compiled numba pass agrees to float rounding: ``test_quantile_kernel.py``);
* :func:`~tdrl.algorithm.algorithm_base.read_obs_next` (one column) against
  ``buffer[indices]["obs_next"]`` (every column);
* :func:`~tdrl.algorithm.returns.nstep_reward_discount` against
  :func:`compute_nstep_return` with the constant bootstraps 0 and 1;
* :func:`~tdrl.algorithm.optim.backward_into` (the autograd engine called directly)
  against ``loss.backward(inputs=...)``: the same gradients, the same errors.
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
from tdrl.algorithm.optim import backward_into
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


def _two_layer(seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return net, torch.randn(5, 4)


@pytest.mark.parametrize("shape", [(), (1,)])
def test_backward_into_matches_backward_with_inputs(shape: tuple[int, ...]) -> None:
    grads = []
    for fast in (False, True):
        net, x = _two_layer(0)
        first = list(net[0].parameters())  # the second layer is left out: no grad there
        loss = net(x).square().mean().reshape(shape)
        if fast:
            backward_into(loss, first)
        else:
            loss.backward(inputs=first)
        assert all(p.grad is None for p in net[2].parameters())
        grads.append([p.grad for p in first])
    assert all(torch.equal(a, b) for a, b in zip(*grads, strict=True))


def test_backward_into_accumulates_and_retains_the_graph() -> None:
    net, x = _two_layer(1)
    params = list(net.parameters())
    loss = net(x).sum()
    backward_into(loss, params, retain_graph=True)
    once = [p.grad.clone() for p in params]
    backward_into(loss, params)  # the retained graph, accumulated into .grad
    assert all(torch.equal(p.grad, 2 * g) for p, g in zip(params, once, strict=True))
    with pytest.raises(RuntimeError, match="second time"):
        backward_into(loss, params)


def test_backward_into_raises_what_backward_raises() -> None:
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        backward_into(w * 2, [w])  # not a scalar: loss.backward's own error
    with pytest.raises(RuntimeError, match="does not require grad"):
        backward_into(torch.tensor(1.0), [w])
    assert w.grad is None


def test_backward_into_calls_the_engine_for_a_plain_scalar(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Tensor.backward called")

    monkeypatch.setattr(torch.Tensor, "backward", refuse)
    w = torch.ones(2, requires_grad=True)
    backward_into((w * 3.0).sum(), [w])
    assert torch.equal(w.grad, torch.full((2,), 3.0))
    with pytest.raises(AssertionError, match=r"Tensor\.backward called"):
        backward_into((w * 3.0).sum().to(torch.int64), [w])  # not floating: the general path
