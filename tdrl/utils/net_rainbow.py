"""Networks for Rainbow and BDQN.

* :class:`RainbowNet`: ``obs -> p(z | s, a)`` ``[B, n_actions, num_atoms]``: an MLP trunk, then
  dueling advantage and value streams of noisy linear layers (arXiv:1710.02298, §2), combined
  per atom as ``V(s) + A(s, a) - mean_a A(s, a)`` and normalised over the atoms with a
  softmax. This is Tianshou's ``Net(softmax=True, num_atoms=N, dueling_param=(noisy, noisy))``
  of its Rainbow test as a plain module (same layers, same order).
* :class:`BranchingQNet`: the branching dueling Q-network of BDQ (arXiv:1711.08946):
  a shared MLP, a state-value head and one advantage head per action dimension,
  ``Q_d(s, a_d) = V(s) + A_d(s, a_d) - mean_a A_d(s, a)``, output ``[B, num_branches,
  action_per_branch]``. Tianshou's ``BranchingNet`` as a plain module.

>>> _ = torch.manual_seed(0)
>>> RainbowNet(4, 2, num_atoms=11, hidden_sizes=(16,))(torch.zeros(3, 4)).shape
torch.Size([3, 2, 11])
>>> BranchingQNet(3, num_branches=2, action_per_branch=5)(torch.zeros(4, 3)).shape
torch.Size([4, 2, 5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from tdrl.utils.net import MLP, call_module, flat_dim
from tdrl.utils.noisy import NoisyLinear

__all__ = ["BranchingQNet", "RainbowNet"]


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")
    return int(value)


def _stream(
    input_dim: int,
    output_dim: int,
    hidden_sizes: Sequence[int],
    layer: Callable[[int, int], nn.Module],
    activation: type[nn.Module],
) -> nn.Sequential:
    """``layer`` + activation per hidden width, then an output ``layer`` (no activation)."""
    layers: list[nn.Module] = []
    d = input_dim
    for h in hidden_sizes:
        layers += [layer(d, h), activation()]
        d = h
    layers.append(layer(d, output_dim))
    return nn.Sequential(*layers)


class RainbowNet(nn.Module):
    """Dueling noisy categorical Q-network: ``obs -> [B, n_actions, num_atoms]`` probabilities.

    :param obs_dim: observation features (or shape).
    :param n_actions: number of discrete actions.
    :param num_atoms: atoms of the return distribution (C51's support size).
    :param hidden_sizes: widths of the trunk (plain linear layers with ``activation``).
    :param head_hidden_sizes: hidden widths of each stream (``()``: one layer per stream, as
        in Tianshou's Rainbow test).
    :param noisy_std: ``sigma_0`` of the noisy layers (:class:`~tdrl.utils.noisy.NoisyLinear`).
    :param noisy: noisy layers in the streams (``False``: plain linear layers).
    :param dueling: advantage and value streams (``False``: one stream of per-action atoms).
    :param activation: activation class after each hidden layer.

    The modules are created in the order trunk, advantage stream, value stream, so
    :func:`~tdrl.utils.noisy.resample_noise` draws the noise in the order Tianshou's Rainbow
    does. In training mode the noisy layers use their current noise (drawn by
    :func:`~tdrl.utils.noisy.resample_noise`), in eval mode their mean weights.

    >>> _ = torch.manual_seed(0)
    >>> net = RainbowNet(4, 2, num_atoms=5, hidden_sizes=(8,), noisy_std=0.1)
    >>> p = net(torch.zeros(3, 4))
    >>> bool(torch.allclose(p.sum(-1), torch.ones(3, 2)))
    True
    >>> [type(m).__name__ for m in net.modules() if not isinstance(m, nn.Sequential)][1:]
    ['Linear', 'ReLU', 'NoisyLinear', 'NoisyLinear']
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        n_actions: int,
        num_atoms: int = 51,
        hidden_sizes: Sequence[int] = (128, 128),
        *,
        head_hidden_sizes: Sequence[int] = (),
        noisy_std: float = 0.5,
        noisy: bool = True,
        dueling: bool = True,
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        self.n_actions = _positive_int("n_actions", n_actions)
        self.num_atoms = _positive_int("num_atoms", num_atoms)
        if not noisy_std >= 0:
            raise ValueError(f"noisy_std: expected a float >= 0, got {noisy_std!r}")
        super().__init__()
        self.dueling = dueling

        def layer(i: int, o: int) -> nn.Module:
            return NoisyLinear(i, o, noisy_std) if noisy else nn.Linear(i, o)

        self.trunk = MLP(flat_dim(obs_dim), 0, hidden_sizes, activation)
        d = self.trunk.output_dim
        out = self.n_actions * self.num_atoms
        self.advantage = _stream(d, out, head_hidden_sizes, layer, activation)
        self.value: nn.Sequential | None = (
            _stream(d, self.num_atoms, head_hidden_sizes, layer, activation) if dueling else None
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Probabilities ``[B, n_actions, num_atoms]`` (softmax over the atoms)."""
        h = call_module(self.trunk, obs)
        logits = call_module(self.advantage, h).view(-1, self.n_actions, self.num_atoms)
        if self.value is not None:
            v = call_module(self.value, h).view(-1, 1, self.num_atoms)
            logits = logits - logits.mean(dim=1, keepdim=True) + v
        return torch.softmax(logits, dim=-1)


class BranchingQNet(nn.Module):
    """Branching dueling Q-network (BDQ): ``obs -> Q [B, num_branches, action_per_branch]``.

    :param obs_dim: observation features (or shape).
    :param num_branches: action dimensions ``D`` (one advantage head each).
    :param action_per_branch: discrete sub-actions ``K`` per dimension.
    :param common_hidden_sizes: widths of the shared MLP (at least one).
    :param value_hidden_sizes: hidden widths of the state-value head (output 1).
    :param action_hidden_sizes: hidden widths of each advantage head (output ``K``).
    :param activation: activation class after each hidden layer.

    ``Q_d(s, a) = V(s) + A_d(s, a) - mean_a' A_d(s, a')`` for every branch ``d``: the state
    value is shared, each branch only adds its centred advantages (arXiv:1711.08946, eq. 1).

    >>> net = BranchingQNet(3, num_branches=2, action_per_branch=4, common_hidden_sizes=(8,),
    ...                     value_hidden_sizes=(), action_hidden_sizes=())
    >>> q = net(torch.randn(5, 3))
    >>> a = q - q.mean(-1, keepdim=True)  # the centred advantages; the rest is V(s)
    >>> bool(torch.allclose(q - a, (q - a)[:, :1, :1].expand_as(q)))
    True
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        num_branches: int,
        action_per_branch: int,
        common_hidden_sizes: Sequence[int] = (64, 64),
        value_hidden_sizes: Sequence[int] = (64,),
        action_hidden_sizes: Sequence[int] = (64,),
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        self.num_branches = _positive_int("num_branches", num_branches)
        self.action_per_branch = _positive_int("action_per_branch", action_per_branch)
        if len(common_hidden_sizes) == 0:
            raise ValueError(
                "common_hidden_sizes: expected at least one width, got an empty sequence"
            )
        super().__init__()
        self.common = MLP(flat_dim(obs_dim), 0, common_hidden_sizes, activation)
        d = self.common.output_dim
        self.value = MLP(d, 1, value_hidden_sizes, activation)
        self.branches = nn.ModuleList(
            MLP(d, self.action_per_branch, action_hidden_sizes, activation)
            for _ in range(self.num_branches)
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values ``[B, num_branches, action_per_branch]``."""
        h = self.common(obs)
        value = self.value(h).unsqueeze(1)  # [B, 1, 1]
        adv = torch.stack([branch(h) for branch in self.branches], dim=1)  # [B, D, K]
        return value + (adv - adv.mean(dim=2, keepdim=True))
