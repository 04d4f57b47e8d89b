"""The quantile Huber loss, its priority and its gradient in one compiled pass (numba).

:func:`~tdrl.algorithm.distributional.quantile_huber_loss_and_priority` runs every gradient
step of QR-DQN, IQN and FQF over ``B x N x M`` pairs. In torch that is a dozen passes over
the pairs, forward and backward (each a separate kernel with its own temporary); here it is
one loop that visits each pair once and writes the per-sample loss, the priority and
``d loss / d pred`` (the backward is then one multiplication). About 17 times faster at
QR-DQN's CartPole shape (``64 x 50 x 50``) on one CPU thread. The same formulas as the torch
path, with float32 sums reassociated for vectorization, so the two agree to float rounding
(tested). Without numba (or with ``TDRL_NUMBA=0``), on a GPU, under ``torch.compile`` or for
``kappa = 0`` :func:`fused_quantile_huber` returns ``None`` and the torch path runs.

>>> pred = torch.tensor([[0.0, 1.0]])
>>> out = fused_quantile_huber(pred, torch.tensor([[0.5, 3.0]]), torch.tensor([0.25, 0.75]), 1.0)
>>> out is None or [t.tolist() for t in out] == [[0.90625], [2.125], [[-0.1875, -0.3125]]]
True
"""

from __future__ import annotations

import numpy as np
import torch

from tdrl.utils.jit import Kernel

__all__ = ["fused_quantile_huber"]


def _quantile_huber_loop(
    pred: np.ndarray,
    target: np.ndarray,
    taus: np.ndarray,
    kappa: float,
    loss: np.ndarray,
    priority: np.ndarray,
    grad: np.ndarray,
) -> None:
    """Over ``u_ij = target[b, j] - pred[b, i]``: ``loss[b] = mean_i sum_j w_ij h_ij``,
    ``priority[b] = mean_i sum_j h_ij`` and ``grad[b, i] = -sum_j w_ij clamp(u_ij / kappa)
    / N``, with ``h = smooth_l1(u, beta=kappa)`` and ``w_ij = |taus[b, i] - 1{u_ij < 0}|``."""
    n_batch, n = pred.shape
    m = target.shape[1]
    one, zero = pred.dtype.type(1.0), pred.dtype.type(0.0)
    k = pred.dtype.type(kappa)
    inv, half = one / k, pred.dtype.type(0.5)
    for b in range(n_batch):
        loss_b, prio_b = zero, zero
        for i in range(n):
            p, tau = pred[b, i], taus[b, i]
            loss_i, prio_i, grad_i = zero, zero, zero
            for j in range(m):
                u = target[b, j] - p
                au = abs(u)
                c = min(au, k)
                h = c * (au - half * c) * inv  # 0.5 u^2 / k inside |u| < k, |u| - k / 2 outside
                w = abs(tau - (one if u < zero else zero))
                loss_i += w * h
                prio_i += h
                grad_i -= w * max(min(u * inv, one), -one)
            loss_b += loss_i
            prio_b += prio_i
            grad[b, i] = grad_i / n
        loss[b] = loss_b / n
        priority[b] = prio_b / n


_KERNEL = Kernel(_quantile_huber_loop, fastmath=True)


def fused_quantile_huber(
    pred: torch.Tensor, target: torch.Tensor, taus: torch.Tensor, kappa: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """``(loss [...], priority [...], d loss.sum() / d pred [..., N])`` for ``pred [..., N]``,
    ``target [..., M]`` (the same batch shape) and ``taus`` broadcastable to ``pred``; or
    ``None`` where the compiled pass does not apply (see the module docstring)."""
    if (
        kappa <= 0
        or pred.device.type != "cpu"
        or pred.dtype not in (torch.float32, torch.float64)
        or target.dtype != pred.dtype
        or pred.dim() < 1
        or torch.compiler.is_compiling()
    ):
        return None
    kernel = _KERNEL.get()
    if kernel is None:
        return None
    n, m = pred.shape[-1], target.shape[-1]
    p = pred.detach().reshape(-1, n).contiguous()
    t = target.detach().reshape(-1, m).contiguous()
    # a broadcast view (stride 0 over the batch for QR-DQN's shared taus): read in place
    w = taus.detach().to(pred.dtype).expand(pred.shape).reshape(-1, n)
    loss = torch.empty(p.shape[0], dtype=pred.dtype)
    priority = torch.empty_like(loss)
    grad = torch.empty_like(p)
    kernel(p.numpy(), t.numpy(), w.numpy(), float(kappa), loss.numpy(), priority.numpy(),
           grad.numpy())  # fmt: skip
    batch = pred.shape[:-1]
    return loss.reshape(batch), priority.reshape(batch), grad.reshape(pred.shape)
