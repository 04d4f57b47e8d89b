"""Running mean/std normalizers as modules (their statistics are checkpointed buffers).

:class:`RunningNorm` keeps running moments with the parallel (Chan et al.) update, like
Tianshou's ``RunningMeanStd``, but as ``nn.Module`` buffers, so ``state_dict()`` saves
them. :class:`ObsNormalizer` puts one in front of a network.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ObsNormalizer", "RunningNorm"]


class RunningNorm(nn.Module):
    """Running mean and variance of a stream of batches of shape ``[B, *shape]``.

    :param shape: the shape of one sample.
    :param clip: clip normalized values to ``[-clip, clip]`` in :meth:`normalize`.
    :param eps: added to the variance before the square root.

    >>> rn = RunningNorm(())
    >>> rn.update(torch.tensor([1.0, 2.0, 3.0])); rn.update(torch.tensor([4.0]))
    >>> round(rn.mean.item(), 4), round(rn.var.item(), 4), int(rn.count.item())
    (2.5, 1.25, 4)
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: int | Sequence[int] = (), clip: float = 10.0, eps: float = 1e-8):
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.clip = clip
        self.eps = eps

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch ``x`` (leading dimension = samples) into the statistics."""
        x = torch.as_tensor(x, dtype=torch.float64)
        shape = tuple(self.mean.shape)
        if shape and tuple(x.shape[-len(shape) :]) != shape:
            raise ValueError(
                f"x: expected samples of shape {shape}, got a batch of {tuple(x.shape)}"
            )
        x = x.reshape(-1, *shape)
        n = x.shape[0]
        if n == 0:
            return
        b_mean = x.mean(0)
        b_var = x.var(0, unbiased=False)
        if self.count == 0:
            self.mean.copy_(b_mean)
            self.var.copy_(b_var)
            self.count.fill_(n)
            return
        total = self.count + n
        delta = b_mean - self.mean
        m2 = self.var * self.count + b_var * n + delta.pow(2) * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def std(self, eps: float | None = None) -> float:
        """``sqrt(var + eps)`` as a float (scalar statistics only)."""
        return float(torch.sqrt(self.var + (self.eps if eps is None else eps)))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``clip((x - mean) / sqrt(var + eps))`` in ``x``'s dtype."""
        y = (x - self.mean.to(x.dtype)) / torch.sqrt(self.var + self.eps).to(x.dtype)
        return y.clamp(-self.clip, self.clip)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same as :meth:`normalize`."""
        return self.normalize(x)


class ObsNormalizer(nn.Module):
    """``net(normalize(obs))``; statistics update when ``update_stats`` is on.

    Updates happen only under ``torch.inference_mode()`` (the collector acts in it;
    gradient steps and ``no_grad`` target computations do not), so training on replayed
    data leaves the statistics alone. Turn ``update_stats`` off for evaluation.

    >>> m = ObsNormalizer(nn.Identity(), 2)
    >>> with torch.inference_mode():
    ...     _ = m(torch.tensor([[0.0, 10.0], [2.0, 30.0]]))
    >>> m.norm.mean.tolist()
    [1.0, 20.0]
    """

    def __init__(self, net: nn.Module, shape: int | Sequence[int], clip: float = 10.0):
        super().__init__()
        self.net = net
        self.norm = RunningNorm(shape, clip=clip)
        self.update_stats = True

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalize ``obs`` (updating statistics first when allowed) and apply ``net``."""
        obs = torch.as_tensor(obs)
        if not obs.is_floating_point():
            obs = obs.float()
        if self.update_stats and torch.is_inference_mode_enabled():
            self.norm.update(obs)
        return self.net(self.norm.normalize(obs))
