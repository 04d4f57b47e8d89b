"""The compiled quantile Huber pass against the torch path it replaces: same loss, priority
and gradient (to float rounding) over shapes, dtypes, kappas and weighted reductions."""

from __future__ import annotations

import pytest
import torch

from tdrl.algorithm import distributional as D
from tdrl.algorithm import quantile_kernel as qk


def _both(pred, target, taus, kappa, weight, monkeypatch, fused: bool):  # type: ignore[no-untyped-def]
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(D, "fused_quantile_huber", lambda *a: None)
        p = pred.clone().requires_grad_()
        loss, prio = D.quantile_huber_loss_and_priority(p, target, taus, kappa)
        (loss * weight).sum().backward()
    return loss.detach(), prio, p.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kappa", [1.0, 0.5, 3.0])
@pytest.mark.parametrize(
    ("batch", "n", "m", "taus_per_sample"),
    [((64,), 50, 50, False), ((32,), 8, 16, True), ((3, 5), 7, 4, True), ((), 6, 9, False)],
)
def test_fused_pass_matches_the_torch_path(
    batch: tuple[int, ...], n: int, m: int, taus_per_sample: bool, kappa: float,
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    if qk._KERNEL.get() is None:
        pytest.skip("numba not installed or TDRL_NUMBA=0")
    g = torch.Generator().manual_seed(n * m)
    pred = torch.randn(*batch, n, generator=g, dtype=dtype) * 2
    target = torch.randn(*batch, m, generator=g, dtype=dtype) * 2
    target[..., 0] = pred[..., 0]  # u == 0 exactly: Huber 0, gradient 0
    taus = torch.rand(*batch, n, generator=g, dtype=dtype) if taus_per_sample else (
        (torch.arange(n, dtype=dtype) + 0.5) / n)  # fmt: skip
    weight = torch.rand(batch, generator=g, dtype=dtype)  # importance weights
    assert qk.fused_quantile_huber(pred, target, taus, kappa) is not None
    got = _both(pred, target, taus, kappa, weight, monkeypatch, fused=True)
    want = _both(pred, target, taus, kappa, weight, monkeypatch, fused=False)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for a, b in zip(got, want):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **tol)


def test_where_the_fused_pass_does_not_apply_the_torch_path_runs() -> None:
    pred, target, taus = torch.randn(4, 3), torch.randn(4, 3), torch.rand(3)
    assert qk.fused_quantile_huber(pred, target, taus, 0.0) is None  # kappa 0: sign gradient
    assert qk.fused_quantile_huber(pred.half(), target.half(), taus, 1.0) is None
    assert qk.fused_quantile_huber(pred, target.double(), taus, 1.0) is None  # mixed dtypes
    loss, _ = D.quantile_huber_loss_and_priority(pred.requires_grad_(), target, taus, 0.0)
    loss.sum().backward()
    assert pred.grad is not None and torch.isfinite(pred.grad).all()


def test_without_numba_nothing_is_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TDRL_NUMBA", "0")
    kernel = qk.Kernel(qk._quantile_huber_loop, fastmath=True)
    assert kernel.get() is None
