"""Noisy linear layers for exploration (NoisyNet, arXiv:1706.10295), as used by Rainbow.

:class:`NoisyLinear` learns a mean and a scale for every weight and adds factorised Gaussian
noise to them in training mode; :func:`resample_noise` draws fresh noise for every noisy layer
of a network (once per gradient step, as the paper does).

>>> _ = torch.manual_seed(0)
>>> net = nn.Sequential(NoisyLinear(4, 8), nn.ReLU(), NoisyLinear(8, 2))
>>> resample_noise(net)
2
>>> net(torch.zeros(3, 4)).shape
torch.Size([3, 2])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["NoisyLinear", "noisy_layers", "resample_noise"]

_TENSORS = ("weight_mu", "weight_sigma", "bias_mu", "bias_sigma", "eps_in", "eps_out")
"""A :class:`NoisyLinear`'s parameters and noise buffers, in :meth:`NoisyLinear._tensors` order."""


def _draw_scaled_noise(out: torch.Tensor, generator: torch.Generator | None) -> None:
    """Fill ``out`` with ``f(x) = sign(x) * sqrt(|x|)`` of standard normal draws (the paper's
    factorised noise), in place."""
    torch.randn(out.shape, generator=generator, out=out)
    torch.copysign(out.abs().sqrt_(), out, out=out)  # = sign(x) sqrt|x|, signed zeros too


class NoisyLinear(nn.Module):
    """Linear layer with factorised Gaussian noise on its weights (arXiv:1706.10295, §3).

    In training mode::

        W = W_mu + W_sigma * outer(f(eps_out), f(eps_in))     b = b_mu + b_sigma * f(eps_out)

    with ``eps_in ~ N(0, I_p)``, ``eps_out ~ N(0, I_q)`` and ``f(x) = sign(x) sqrt(|x|)``; in eval
    mode the mean weights ``W_mu, b_mu`` alone (deterministic). Initialisation follows the paper's
    factorised case, with ``p = in_features``: ``mu ~ U(-1/sqrt(p), 1/sqrt(p))`` and
    ``sigma = noisy_std / sqrt(p)``, for the weights and the bias.

    Noise is drawn only by :meth:`sample_noise` (alias :meth:`reset_noise`; once at
    construction), never by ``forward``, so the same noisy weights serve every forward pass until
    the next draw. Draws come from ``generator`` when one is given (it must live on the layer's
    device), else from torch's global generator, so ``torch.manual_seed`` makes them reproducible.
    The noise buffers ``eps_in``/``eps_out`` follow ``.to()``/``.double()`` and are saved in the
    state dict, so a restored layer reproduces the same noisy outputs. A deep copy (a target
    network) copies the generator with its state.

    Same draws as Tianshou's ``tianshou.utils.net.discrete.NoisyLinear`` and TorchRL's
    ``torchrl.modules.NoisyLinear`` under one seed (``mu`` of weight then bias, then ``eps_in``
    then ``eps_out``). Tianshou's layer matches in every parameter; TorchRL initialises the bias
    scale to ``noisy_std / sqrt(out_features)`` instead of the paper's ``/ sqrt(in_features)``,
    and switches noise by TorchRL's exploration type rather than by ``self.training``.

    :param in_features: input features ``p``.
    :param out_features: output features ``q``.
    :param noisy_std: ``sigma_0``, the initial noise scale (0.5 in the paper), ``>= 0``.
    :param device: device of the parameters and noise buffers.
    :param dtype: dtype of the parameters and noise buffers.
    :param generator: optional ``torch.Generator`` for the initialisation and the noise.

    >>> _ = torch.manual_seed(0)
    >>> layer = NoisyLinear(3, 2)
    >>> x = torch.ones(1, 3)
    >>> torch.equal(layer(x), layer(x))  # no new noise without sample_noise()
    True
    >>> noisy = layer(x); layer.sample_noise()
    >>> torch.equal(noisy, layer(x))
    False
    >>> _ = layer.eval()
    >>> torch.equal(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
    True
    """

    eps_in: torch.Tensor
    eps_out: torch.Tensor

    def __init__(
        self,
        in_features: int,
        out_features: int,
        noisy_std: float = 0.5,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not noisy_std >= 0:
            raise ValueError(f"noisy_std must be >= 0, got {noisy_std!r}")
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.noisy_std = float(noisy_std)
        self.generator = generator
        kw = {"device": device, "dtype": dtype}
        q, p = self.out_features, self.in_features
        self.weight_mu = nn.Parameter(torch.empty(q, p, **kw))  # type: ignore[arg-type]
        self.weight_sigma = nn.Parameter(torch.empty(q, p, **kw))  # type: ignore[arg-type]
        self.bias_mu = nn.Parameter(torch.empty(q, **kw))  # type: ignore[arg-type]
        self.bias_sigma = nn.Parameter(torch.empty(q, **kw))  # type: ignore[arg-type]
        self.register_buffer("eps_in", torch.empty(p, **kw))  # type: ignore[arg-type]
        self.register_buffer("eps_out", torch.empty(q, **kw))  # type: ignore[arg-type]
        self.reset_parameters()
        self.sample_noise()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Initialise as in the paper: ``mu ~ U(±1/sqrt(p))``, ``sigma = noisy_std/sqrt(p)``."""
        bound = 1.0 / math.sqrt(self.in_features)
        self.weight_mu.uniform_(-bound, bound, generator=self.generator)
        self.bias_mu.uniform_(-bound, bound, generator=self.generator)
        self.weight_sigma.fill_(self.noisy_std * bound)
        self.bias_sigma.fill_(self.noisy_std * bound)

    @torch.no_grad()
    def sample_noise(self) -> None:
        """Draw new factorised noise (``eps_in`` first, then ``eps_out``)."""
        *_, eps_in, eps_out = self._tensors()
        _draw_scaled_noise(eps_in, self.generator)
        _draw_scaled_noise(eps_out, self.generator)

    def reset_noise(self) -> None:
        """Alias of :meth:`sample_noise` (TorchRL's name)."""
        self.sample_noise()

    def _tensors(self) -> tuple[torch.Tensor, ...]:
        """``(weight_mu, weight_sigma, bias_mu, bias_sigma, eps_in, eps_out)``, read from the
        module's own dicts (what ``functional_call`` and ``to_module`` swap), minus
        ``nn.Module.__getattr__``'s Python frame per name (seven per forward); a subclass or
        a parametrized layer goes through ``getattr``."""
        if type(self) is NoisyLinear:
            p, b = self._parameters, self._buffers
            return (
                p["weight_mu"],
                p["weight_sigma"],
                p["bias_mu"],
                p["bias_sigma"],
                b["eps_in"],
                b["eps_out"],
            )  # type: ignore[return-value]
        return tuple(getattr(self, name) for name in _TENSORS)

    @property
    def weight(self) -> torch.Tensor:
        """The weight this layer applies now: noisy in training mode, ``weight_mu`` in eval."""
        mu, sigma, _, _, eps_in, eps_out = self._tensors()
        if not self.training:
            return mu
        return torch.addcmul(mu, sigma, torch.outer(eps_out, eps_in))

    @property
    def bias(self) -> torch.Tensor:
        """The bias this layer applies now: noisy in training mode, ``bias_mu`` in eval."""
        _, _, mu, sigma, _, eps_out = self._tensors()
        if not self.training:
            return mu
        return torch.addcmul(mu, sigma, eps_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W.T + b`` with the current (noisy or mean) weights."""
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " + (
            f"noisy_std={self.noisy_std}"
        )


def noisy_layers(module: nn.Module) -> list[Callable[[], None]]:
    """The noise-drawing methods of every noisy layer of ``module`` (itself included), in
    ``module.modules()`` order: :meth:`NoisyLinear.sample_noise`, and ``reset_noise()`` of
    other modules that have one (TorchRL's noisy layers).

    Walking the modules costs more than drawing the noise of a small network, so callers that
    resample every gradient step (Rainbow) look the layers up once and keep the list.

    >>> net = nn.Sequential(NoisyLinear(4, 8), nn.ReLU(), NoisyLinear(8, 2))
    >>> len(noisy_layers(net)), len(noisy_layers(nn.Linear(2, 2)))
    (2, 0)
    """
    draws: list[Callable[[], None]] = []
    for m in module.modules():
        if isinstance(m, NoisyLinear):
            draws.append(m.sample_noise)
            continue
        reset = getattr(m, "reset_noise", None)
        if callable(reset):
            draws.append(reset)
    return draws


def resample_noise(module: nn.Module) -> int:
    """Draw new noise in every noisy layer of ``module`` (itself included); return how many.

    The layers are those of :func:`noisy_layers`, drawn in its order.

    >>> resample_noise(nn.Linear(2, 2))
    0
    """
    draws = noisy_layers(module)
    for draw in draws:
        draw()
    return len(draws)
