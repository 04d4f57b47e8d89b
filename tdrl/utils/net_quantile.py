"""Quantile networks of IQN (arXiv:1806.06923) and FQF (arXiv:1911.02140).

Both algorithms read the return distribution of ``(s, a)`` off a *quantile function*
``Z_tau(s, a)``, evaluated at fractions ``tau`` in ``[0, 1]``::

    psi(s)     = MLP(s)                                     state features     [B, D]
    phi(tau)   = ReLU(W [cos(pi i tau)]_{i=1..n_cos} + b)   fraction embedding [B, N, D]
    Z_tau(s,.) = f(psi(s) * phi(tau))                       quantile values    [B, A, N]

IQN samples ``tau ~ U(0, 1)``; FQF proposes them with a :class:`FractionProposalNetwork`
(``tau_0 = 0 < tau_1 < ... < tau_N = 1`` from a softmax over ``psi(s)``) and evaluates the
quantile function at their midpoints. The networks here take the fractions as an argument
(the policy draws or proposes them), so they are deterministic functions of their inputs.

Layout and defaults follow Tianshou's ``ImplicitQuantileNetwork``,
``FractionProposalNetwork`` and ``FullQuantileFunction``: ``psi`` ends in a linear layer of
width ``hidden_sizes[-1]``, ``f`` is an MLP (one linear layer by default), and the
parameters are registered in the order ``psi``, ``f``, ``phi``.

>>> net = ImplicitQuantileNetwork(4, 2, hidden_sizes=(16, 16), num_cosines=8)
>>> net(torch.zeros(3, 4), torch.rand(3, 5)).shape
torch.Size([3, 2, 5])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from tdrl.utils.net import MLP, call_module, flat_dim

__all__ = [
    "CosineEmbeddingNetwork",
    "FractionProposalNetwork",
    "Fractions",
    "FullQuantileFunction",
    "ImplicitQuantileNetwork",
]


class CosineEmbeddingNetwork(nn.Module):
    """Embed fractions: ``phi(tau) = ReLU(Linear([cos(pi * i * tau)]_{i=1..num_cosines}))``.

    :param num_cosines: number of cosine features per fraction (IQN's ``n = 64``).
    :param embedding_dim: output width ``D`` (that of the state features it multiplies).

    >>> phi = CosineEmbeddingNetwork(num_cosines=4, embedding_dim=3)
    >>> phi(torch.rand(2, 5)).shape
    torch.Size([2, 5, 3])
    """

    def __init__(self, num_cosines: int, embedding_dim: int) -> None:
        if num_cosines < 1 or embedding_dim < 1:
            raise ValueError(
                f"num_cosines, embedding_dim: expected ints >= 1, "
                f"got {num_cosines} and {embedding_dim}"
            )
        super().__init__()
        self.net = nn.Sequential(nn.Linear(num_cosines, embedding_dim), nn.ReLU())
        self.num_cosines = num_cosines
        self.embedding_dim = embedding_dim

    def frequencies(self, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """``[pi * i]_{i=1..num_cosines}`` in ``dtype`` on ``device``, made once per pair
        (every forward used to make them again: two operations of the update's 20 or so
        per quantile evaluation).

        >>> CosineEmbeddingNetwork(3, 2).frequencies(torch.float64, torch.device("cpu"))
        tensor([3.1416, 6.2832, 9.4248], dtype=torch.float64)
        """
        cache: dict[tuple[torch.dtype, torch.device], torch.Tensor] = self.__dict__.setdefault(
            "_frequencies", {}
        )
        freqs = cache.get((dtype, device))
        if freqs is None:
            i = torch.arange(1, self.num_cosines + 1, dtype=dtype, device=device)
            freqs = cache[(dtype, device)] = math.pi * i
        return freqs

    def forward(self, taus: torch.Tensor) -> torch.Tensor:
        """``[..., N]`` fractions to ``[..., N, embedding_dim]`` embeddings."""
        freqs = self.frequencies(taus.dtype, taus.device)
        return call_module(self.net, torch.cos(taus.unsqueeze(-1) * freqs))


class ImplicitQuantileNetwork(nn.Module):
    """IQN's quantile function ``Z_tau(s, a) = f(psi(s) * phi(tau))_a`` (arXiv:1806.06923, eq. 4).

    :param obs_dim: observation features (or shape).
    :param n_actions: number of discrete actions.
    :param hidden_sizes: widths of ``psi``; its last entry is the feature width ``D``
        (a linear layer, no activation after it).
    :param head_hidden_sizes: hidden widths of ``f`` (default: one linear layer ``D -> A``).
    :param num_cosines: cosine features of the fraction embedding ``phi``.
    :param preprocess_net: a custom ``psi`` (a module ``obs -> [B, D]`` with an
        ``output_dim`` attribute, e.g. a :class:`~tdrl.utils.net.MLP`); replaces
        ``hidden_sizes``.

    :meth:`forward` ``(obs, taus [B, N]) -> [B, n_actions, N]``; :meth:`features` and
    :meth:`quantiles` are its two halves, so that several sets of fractions can share one
    pass of ``psi``.

    >>> net = ImplicitQuantileNetwork(4, 3, hidden_sizes=(8,), num_cosines=4)
    >>> feats = net.features(torch.zeros(2, 4))
    >>> feats.shape, net.quantiles(feats, torch.rand(2, 6)).shape
    (torch.Size([2, 8]), torch.Size([2, 3, 6]))
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        n_actions: int,
        hidden_sizes: Sequence[int] = (64, 64, 64),
        head_hidden_sizes: Sequence[int] = (),
        num_cosines: int = 64,
        preprocess_net: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if preprocess_net is None:
            if not hidden_sizes:
                raise ValueError(
                    "hidden_sizes: expected at least one width (the feature width), got ()"
                )
            preprocess_net = MLP(flat_dim(obs_dim), hidden_sizes[-1], hidden_sizes[:-1])
        feature_dim = int(getattr(preprocess_net, "output_dim", 0))
        if feature_dim < 1:
            raise ValueError(
                f"preprocess_net: expected a module with an output_dim >= 1, "
                f"got {type(preprocess_net).__name__} with output_dim={feature_dim}"
            )
        self.preprocess = preprocess_net
        self.last = MLP(feature_dim, n_actions, head_hidden_sizes)
        self.embed_model = CosineEmbeddingNetwork(num_cosines, feature_dim)
        self.feature_dim = feature_dim
        self.n_actions = n_actions

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """State features ``psi(s) [B, D]``."""
        out: torch.Tensor = call_module(self.preprocess, obs)
        return out

    def quantiles(self, features: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Quantile values ``[B, n_actions, N]`` at fractions ``taus [B, N]``."""
        b, n = taus.shape
        mixed = features.unsqueeze(1) * call_module(self.embed_model, taus)  # [B, N, D]
        out = call_module(self.last, mixed.reshape(b * n, -1))
        return out.reshape(b, n, -1).transpose(1, 2)

    def forward(self, obs: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """``Z_taus(obs, .)``: quantile values ``[B, n_actions, N]``."""
        return self.quantiles(self.features(obs), taus)


class Fractions(NamedTuple):
    """Fractions proposed by a :class:`FractionProposalNetwork` for a batch of states."""

    taus: torch.Tensor
    """``[B, N + 1]``: ``0 = tau_0 < tau_1 < ... < tau_N = 1`` (differentiable)."""
    tau_hats: torch.Tensor
    """``[B, N]``: the midpoints ``(tau_i + tau_{i+1}) / 2`` (detached)."""
    entropies: torch.Tensor
    """``[B]``: entropy of the proposal's categorical ``q_i = tau_{i+1} - tau_i``."""


class FractionProposalNetwork(nn.Module):
    """FQF's fraction proposal: ``q = softmax(W psi(s) + b)``, ``tau_i = sum_{j<i} q_j``.

    :param num_fractions: ``N``, the number of quantiles per state-action pair.
    :param embedding_dim: width of the state features it reads.

    The weights start near zero (Xavier-uniform with gain 0.01, zero bias), so the first
    proposals are close to the uniform fractions ``i / N``.

    >>> fpn = FractionProposalNetwork(num_fractions=4, embedding_dim=3)
    >>> fr = fpn(torch.zeros(2, 3))
    >>> fr.taus[0].tolist(), fr.tau_hats.shape, fr.entropies.shape
    ([0.0, 0.25, 0.5, 0.75, 1.0], torch.Size([2, 4]), torch.Size([2]))
    """

    def __init__(self, num_fractions: int, embedding_dim: int) -> None:
        if num_fractions < 1 or embedding_dim < 1:
            raise ValueError(
                f"num_fractions, embedding_dim: expected ints >= 1, "
                f"got {num_fractions} and {embedding_dim}"
            )
        super().__init__()
        self.net = nn.Linear(embedding_dim, num_fractions)
        nn.init.xavier_uniform_(self.net.weight, gain=0.01)
        nn.init.zeros_(self.net.bias)
        self.num_fractions = num_fractions
        self.embedding_dim = embedding_dim

    def forward(self, features: torch.Tensor) -> Fractions:
        """Propose fractions for state features ``[B, embedding_dim]``."""
        log_q = F.log_softmax(self.net(features), dim=-1)
        q = log_q.exp()
        taus = F.pad(torch.cumsum(q, dim=-1), (1, 0))
        tau_hats = ((taus[:, :-1] + taus[:, 1:]) / 2.0).detach()
        entropies = -(q * log_q).sum(-1)
        return Fractions(taus, tau_hats, entropies)


class FullQuantileFunction(ImplicitQuantileNetwork):
    """FQF's quantile function ``F^{-1}_{s,a}(tau)``: IQN's architecture, evaluated at the
    proposed fractions (arXiv:1911.02140, section 3).

    Same parameters as :class:`ImplicitQuantileNetwork`; Tianshou's FQF example gives
    ``f`` hidden layers too (``head_hidden_sizes``). The FQF policy calls
    :meth:`features` once, proposes fractions from them (detached) and evaluates
    :meth:`quantiles` at the midpoints ``tau_hats``.

    >>> from tdrl.utils.net_quantile import FractionProposalNetwork
    >>> net = FullQuantileFunction(4, 2, hidden_sizes=(8,), head_hidden_sizes=(8,))
    >>> feats = net.features(torch.zeros(3, 4))
    >>> fr = FractionProposalNetwork(5, net.feature_dim)(feats.detach())
    >>> net.quantiles(feats, fr.tau_hats).shape
    torch.Size([3, 2, 5])
    """
