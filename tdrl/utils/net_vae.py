"""Networks of batch-constrained RL (BCQ): a conditional VAE of the behaviour policy and
the perturbation actor.

* :class:`VAE` models the dataset's actions given the state (Kingma & Welling 2014, as
  used by Fujimoto et al. 2019): encode ``(s, a) -> N(mu, sigma)``, decode
  ``(s, z) -> max_action * tanh(decoder(s, z))``; sampling draws ``z ~ N(0, I)`` clipped
  to ``[-0.5, 0.5]``, which keeps generated actions near the data.
* :class:`Perturbation` nudges a generated action by at most ``phi * max_action`` per
  dimension and clips to ``[-max_action, max_action]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from tdrl.utils.net import MLP, flat_dim

__all__ = ["VAE", "Perturbation"]


class VAE(nn.Module):
    """Conditional VAE ``p(a | s)`` of the behaviour policy.

    :param obs_dim: observation features (or shape).
    :param act_dim: action dimensions.
    :param hidden_sizes: widths of the encoder's and the decoder's hidden layers.
    :param latent_dim: size of the latent ``z`` (default ``2 * act_dim``).
    :param max_action: the decoder's actions lie in ``[-max_action, max_action]``.
    :param encoder: a custom encoder ``cat(s, a) -> h [B, hidden_dim]`` (default: an MLP
        with ReLU after its last hidden layer).
    :param decoder: a custom decoder ``cat(s, z) -> [B, act_dim]`` (before the tanh).
    :param log_std_bounds: clamp of the encoder's ``log sigma`` (numerical stability).

    >>> vae = VAE(3, 1, (16, 16))
    >>> recon, mean, std = vae(torch.zeros(5, 3), torch.zeros(5, 1))
    >>> recon.shape, mean.shape, bool((std > 0).all())
    (torch.Size([5, 1]), torch.Size([5, 2]), True)
    >>> bool((vae.decode(torch.randn(7, 3)).abs() <= 1.0).all())
    True
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        act_dim: int,
        hidden_sizes: Sequence[int] = (750, 750),
        latent_dim: int | None = None,
        max_action: float = 1.0,
        *,
        encoder: nn.Module | None = None,
        decoder: nn.Module | None = None,
        log_std_bounds: tuple[float, float] = (-4.0, 15.0),
    ) -> None:
        if not hidden_sizes and encoder is None:
            raise ValueError("hidden_sizes: expected at least one hidden layer, got ()")
        if max_action <= 0:
            raise ValueError(f"max_action: expected a value > 0, got {max_action}")
        super().__init__()
        d = flat_dim(obs_dim)
        self.latent_dim = int(latent_dim) if latent_dim is not None else 2 * act_dim
        if self.latent_dim < 1:
            raise ValueError(f"latent_dim: expected an int >= 1, got {latent_dim}")
        self.encoder = encoder if encoder is not None else MLP(d + act_dim, 0, hidden_sizes)
        hidden = _out_features(self.encoder, hidden_sizes)
        self.mean = nn.Linear(hidden, self.latent_dim)
        self.log_std = nn.Linear(hidden, self.latent_dim)
        self.decoder = (
            decoder if decoder is not None else MLP(d + self.latent_dim, act_dim, hidden_sizes)
        )
        self.max_action = float(max_action)
        self.log_std_bounds = log_std_bounds

    def forward(
        self, obs: torch.Tensor, act: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(reconstruction, mean, std)``: encode ``(s, a)``, draw ``z = mean + std * eps``
        (reparameterized), decode ``(s, z)``."""
        h = self.encoder(torch.cat([obs, act], -1))
        mean = self.mean(h)
        std = self.log_std(h).clamp(*self.log_std_bounds).exp()
        z = mean + std * torch.randn_like(std)
        return self.decode(obs, z), mean, std

    def decode(self, obs: torch.Tensor, latent: torch.Tensor | None = None) -> torch.Tensor:
        """Actions for ``obs``; without ``latent``, ``z ~ N(0, I)`` clipped to ``[-0.5, 0.5]``."""
        if latent is None:
            shape = (*obs.shape[:-1], self.latent_dim)
            latent = torch.randn(shape, dtype=obs.dtype, device=obs.device).clamp(-0.5, 0.5)
        return self.max_action * torch.tanh(self.decoder(torch.cat([obs, latent], -1)))


def _out_features(encoder: nn.Module, hidden_sizes: Sequence[int]) -> int:
    """The encoder's output width: its ``output_dim`` (tdrl's MLP), else its last
    ``Linear``'s ``out_features``, else the last hidden size."""
    out = getattr(encoder, "output_dim", None)
    if isinstance(out, int) and out > 0:
        return out
    linears = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    if linears:
        return int(linears[-1].out_features)
    return int(hidden_sizes[-1])


class Perturbation(nn.Module):
    """BCQ's perturbation actor ``xi(s, a) = clip(a + phi * max_action * tanh(f(s, a)))``.

    :param obs_dim: observation features (or shape).
    :param act_dim: action dimensions.
    :param hidden_sizes: widths of ``f``'s hidden layers.
    :param max_action: actions lie in ``[-max_action, max_action]``.
    :param phi: the largest perturbation, as a fraction of ``max_action`` (``>= 0``).
    :param net: a custom ``f: cat(s, a) -> [B, act_dim]``.

    >>> xi = Perturbation(3, 1, (8,), phi=0.05)
    >>> a = torch.full((4, 1), 0.5)
    >>> bool(((xi(torch.randn(4, 3), a) - a).abs() <= 0.05 + 1e-7).all())
    True
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        act_dim: int,
        hidden_sizes: Sequence[int] = (400, 300),
        max_action: float = 1.0,
        phi: float = 0.05,
        *,
        net: nn.Module | None = None,
    ) -> None:
        if phi < 0:
            raise ValueError(f"phi: expected a value >= 0, got {phi}")
        if max_action <= 0:
            raise ValueError(f"max_action: expected a value > 0, got {max_action}")
        super().__init__()
        self.net = (
            net if net is not None else MLP(flat_dim(obs_dim) + act_dim, act_dim, hidden_sizes)
        )
        self.max_action = float(max_action)
        self.phi = float(phi)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """The perturbed action, clipped to the action range."""
        noise = self.phi * self.max_action * torch.tanh(self.net(torch.cat([obs, act], -1)))
        return (act + noise).clamp(-self.max_action, self.max_action)
