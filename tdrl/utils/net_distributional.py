"""A distributional Q-network: per action, a vector of atoms instead of one Q-value.

The distributional Q-learning algorithms read the network output ``[B, n_actions, K]``
through their policy's head hook: C51 takes ``K`` probabilities over a fixed support
(``softmax=True``), QR-DQN takes ``K`` quantile values (``softmax=False``). This is
Tianshou's ``Net(num_atoms=K, softmax=...)`` as a plain module.

>>> net = DistributionalQNet(4, 2, num_atoms=51, hidden_sizes=(16,), softmax=True)
>>> out = net(torch.zeros(3, 4))
>>> out.shape, torch.allclose(out.sum(-1), torch.ones(3, 2))
(torch.Size([3, 2, 51]), True)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from tdrl.utils.net import MLP, call_module, flat_dim

__all__ = ["DistributionalQNet"]


class DistributionalQNet(nn.Module):
    """``obs -> [B, n_actions, num_atoms]``: atom values, or probabilities with ``softmax``.

    :param obs_dim: observation features (or shape).
    :param n_actions: number of discrete actions.
    :param num_atoms: atoms per action (C51's support size, QR-DQN's number of quantiles).
    :param hidden_sizes: trunk widths.
    :param softmax: normalise each action's atoms with a softmax (C51's probabilities).
    :param dueling: a dueling head per atom, ``V(s) + A(s, a) - mean_a A(s, a)`` (before
        the softmax), as Tianshou's ``Net`` with ``dueling_param``.
    :param activation: activation class after each hidden layer.

    >>> DistributionalQNet(4, 3, num_atoms=8, hidden_sizes=(16,), dueling=True)(
    ...     torch.zeros(2, 4)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        n_actions: int,
        num_atoms: int,
        hidden_sizes: Sequence[int] = (128, 128),
        *,
        softmax: bool = False,
        dueling: bool = False,
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        if int(n_actions) != n_actions or n_actions < 1:
            raise ValueError(f"n_actions: expected an int >= 1, got {n_actions!r}")
        if int(num_atoms) != num_atoms or num_atoms < 1:
            raise ValueError(f"num_atoms: expected an int >= 1, got {num_atoms!r}")
        super().__init__()
        self.n_actions, self.num_atoms = int(n_actions), int(num_atoms)
        self.softmax, self.dueling = softmax, dueling
        out = self.n_actions * self.num_atoms
        if dueling:
            self.trunk = MLP(flat_dim(obs_dim), 0, hidden_sizes, activation)
            self.value: nn.Module | None = MLP(self.trunk.output_dim, self.num_atoms, ())
            self.advantage: nn.Module | None = MLP(self.trunk.output_dim, out, ())
        else:
            self.trunk = MLP(flat_dim(obs_dim), out, hidden_sizes, activation)
            self.value = self.advantage = None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Atoms ``[B, n_actions, num_atoms]`` (probabilities over the atoms with ``softmax``)."""
        h = call_module(self.trunk, obs)
        if self.value is not None and self.advantage is not None:
            adv = call_module(self.advantage, h).view(-1, self.n_actions, self.num_atoms)
            v = call_module(self.value, h).view(-1, 1, self.num_atoms)
            out = v + adv - adv.mean(dim=1, keepdim=True)
        else:
            out = h.view(-1, self.n_actions, self.num_atoms)
        return out.softmax(dim=-1) if self.softmax else out
