"""The Nature CNN (Mnih et al., Nature 2015) and the Atari heads of the DQN family.

:class:`NatureCNN` is the convolutional trunk: ``[B, 4, 84, 84]`` frames (``uint8`` or float)
-> ``[B, 3136]`` features::

    Conv(4 -> 32, 8x8, stride 4) -> ReLU -> Conv(32 -> 64, 4x4, stride 2) -> ReLU
    -> Conv(64 -> 64, 3x3, stride 1) -> ReLU -> flatten

Each head below puts a known head on it; layers, shapes and registration order are those of
Tianshou's ``tianshou.env.atari.atari_network`` networks, so a Tianshou state dict loads
position by position and both give the same outputs:

==================  ============================  =======================================
function            output                        head on the CNN features
==================  ============================  =======================================
:func:`dqn_net`     ``Q [B, A]``                  Linear(3136, 512) -> ReLU -> Linear(512, A)
:func:`c51_net`     ``p [B, A, atoms]``           same, ``A * atoms`` outputs, softmax per action
:func:`qrdqn_net`   ``quantiles [B, A, N]``       same, ``A * N`` outputs
:func:`rainbow_net` ``p [B, A, atoms]``           dueling noisy streams of one 512 hidden layer
:func:`iqn_net`     IQN's quantile function       cosine embedding of width 3136, f: 512 -> A
:func:`fqf_net`     FQF's quantile function and   as IQN, and a fraction proposal on the
                    fraction proposal network     3136 features
==================  ============================  =======================================

Observations are used as given (Tianshou's Atari examples feed raw 0..255 pixels); pass
``scale=255.0`` to divide them by 255 inside the network (``uint8`` frames stay compact in the
replay buffer; the division happens on the batch, on the network's device).

>>> net = dqn_net((4, 84, 84), n_actions=6)
>>> net(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape
torch.Size([2, 6])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import nn

from tdrl.utils.net import QNet
from tdrl.utils.net_distributional import DistributionalQNet
from tdrl.utils.net_quantile import (
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
)
from tdrl.utils.net_rainbow import RainbowNet

__all__ = [
    "CNNHeadNet",
    "NatureCNN",
    "c51_net",
    "dqn_net",
    "fqf_net",
    "iqn_net",
    "qrdqn_net",
    "rainbow_net",
]


def _frame_shape(obs_shape: Sequence[int]) -> tuple[int, int, int]:
    shape = tuple(int(s) for s in obs_shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(
            f"obs_shape: expected (channels, height, width) of stacked frames, e.g. "
            f"(4, 84, 84), got {tuple(obs_shape)}"
        )
    return shape  # type: ignore[return-value]


class NatureCNN(nn.Module):
    """The Nature DQN convolutional trunk: frames ``[B, C, H, W]`` -> features ``[B, D]``.

    :param obs_shape: ``(C, H, W)``, the stacked frames (``(4, 84, 84)`` after
        :func:`tdrl.env.atari.wrap_deepmind`).
    :param scale: divide the input by this (``255.0`` for pixels in ``[0, 1]``; ``None``:
        use it as is).

    ``output_dim`` is ``D`` (3136 for 84x84 frames). Inputs of any dtype (``uint8`` frames,
    numpy arrays) are moved to the network's device first and cast to its dtype there.

    >>> cnn = NatureCNN((4, 84, 84), scale=255.0)
    >>> cnn.output_dim, cnn(torch.full((1, 4, 84, 84), 255, dtype=torch.uint8)).shape
    (3136, torch.Size([1, 3136]))
    """

    def __init__(self, obs_shape: Sequence[int], scale: float | None = None) -> None:
        c, h, w = _frame_shape(obs_shape)
        if scale is not None and not scale > 0:
            raise ValueError(f"scale: expected a float > 0 or None, got {scale!r}")
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(c, 32, kernel_size=8, stride=4),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, kernel_size=4, stride=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, kernel_size=3, stride=1),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        self.obs_shape = (c, h, w)
        self.scale = scale
        with torch.no_grad():
            self.output_dim = int(self.net(torch.zeros(1, c, h, w)).shape[1])

    def forward(self, obs: Any) -> torch.Tensor:
        """Features ``[B, output_dim]`` of frames ``[B, C, H, W]``."""
        weight = cast(nn.Conv2d, self.net[0]).weight
        x = torch.as_tensor(obs, device=weight.device)
        x = x.to(weight.dtype)
        if self.scale is not None:
            x = x / self.scale
        out: torch.Tensor = self.net(x)
        return out


class CNNHeadNet(nn.Module):
    """``head(cnn(obs))``: a :class:`NatureCNN` with a head on its features.

    :param cnn: the trunk.
    :param head: a module on ``[B, cnn.output_dim]`` features.

    >>> net = CNNHeadNet(NatureCNN((4, 84, 84)), nn.Linear(3136, 3))
    >>> net(torch.zeros(1, 4, 84, 84)).shape
    torch.Size([1, 3])
    """

    def __init__(self, cnn: NatureCNN, head: nn.Module) -> None:
        super().__init__()
        self.cnn = cnn
        self.head = head

    def forward(self, obs: Any) -> torch.Tensor:
        """The head's output on the CNN features of ``obs``."""
        out: torch.Tensor = self.head(self.cnn(obs))
        return out


def dqn_net(
    obs_shape: Sequence[int],
    n_actions: int,
    hidden_sizes: Sequence[int] = (512,),
    *,
    dueling: bool = False,
    scale: float | None = None,
) -> CNNHeadNet:
    """Nature DQN: ``Q(s, .) [B, n_actions]`` (Tianshou's ``DQNet``); ``dueling``: a
    :class:`~tdrl.utils.net.DuelingHead` after the hidden layers.

    >>> dqn_net((4, 84, 84), 4)(torch.zeros(3, 4, 84, 84)).shape
    torch.Size([3, 4])
    """
    cnn = NatureCNN(obs_shape, scale)
    return CNNHeadNet(cnn, QNet(cnn.output_dim, n_actions, hidden_sizes, dueling=dueling))


def c51_net(
    obs_shape: Sequence[int],
    n_actions: int,
    num_atoms: int = 51,
    hidden_sizes: Sequence[int] = (512,),
    *,
    dueling: bool = False,
    scale: float | None = None,
) -> CNNHeadNet:
    """C51: probabilities ``[B, n_actions, num_atoms]`` (Tianshou's ``C51Net``).

    >>> p = c51_net((4, 84, 84), 2, num_atoms=5)(torch.zeros(1, 4, 84, 84))
    >>> p.shape, bool(torch.allclose(p.sum(-1), torch.ones(1, 2)))
    (torch.Size([1, 2, 5]), True)
    """
    cnn = NatureCNN(obs_shape, scale)
    head = DistributionalQNet(
        cnn.output_dim, n_actions, num_atoms, hidden_sizes, softmax=True, dueling=dueling
    )
    return CNNHeadNet(cnn, head)


def qrdqn_net(
    obs_shape: Sequence[int],
    n_actions: int,
    num_quantiles: int = 200,
    hidden_sizes: Sequence[int] = (512,),
    *,
    dueling: bool = False,
    scale: float | None = None,
) -> CNNHeadNet:
    """QR-DQN: quantile values ``[B, n_actions, num_quantiles]`` (Tianshou's ``QRDQNet``).

    >>> qrdqn_net((4, 84, 84), 2, num_quantiles=8)(torch.zeros(1, 4, 84, 84)).shape
    torch.Size([1, 2, 8])
    """
    cnn = NatureCNN(obs_shape, scale)
    head = DistributionalQNet(
        cnn.output_dim, n_actions, num_quantiles, hidden_sizes, dueling=dueling
    )
    return CNNHeadNet(cnn, head)


def rainbow_net(
    obs_shape: Sequence[int],
    n_actions: int,
    num_atoms: int = 51,
    hidden_sizes: Sequence[int] = (512,),
    *,
    noisy_std: float = 0.5,
    noisy: bool = True,
    dueling: bool = True,
    scale: float | None = None,
) -> CNNHeadNet:
    """Rainbow: probabilities ``[B, n_actions, num_atoms]`` from dueling streams of noisy
    layers with ``hidden_sizes`` hidden widths each (:class:`~tdrl.utils.net_rainbow.RainbowNet`
    on the CNN features; Tianshou's Atari ``RainbowNet``).

    >>> net = rainbow_net((4, 84, 84), 3, num_atoms=5, noisy_std=0.1)
    >>> net(torch.zeros(2, 4, 84, 84)).shape
    torch.Size([2, 3, 5])
    """
    cnn = NatureCNN(obs_shape, scale)
    head = RainbowNet(
        cnn.output_dim,
        n_actions,
        num_atoms,
        hidden_sizes=(),
        head_hidden_sizes=hidden_sizes,
        noisy_std=noisy_std,
        noisy=noisy,
        dueling=dueling,
    )
    return CNNHeadNet(cnn, head)


def iqn_net(
    obs_shape: Sequence[int],
    n_actions: int,
    num_cosines: int = 64,
    hidden_sizes: Sequence[int] = (512,),
    *,
    scale: float | None = None,
) -> ImplicitQuantileNetwork:
    """IQN's quantile function with the CNN as ``psi`` (features of width 3136, the cosine
    embedding as wide) and ``f`` an MLP of ``hidden_sizes`` (Tianshou's Atari IQN:
    ``ImplicitQuantileNetwork(preprocess_net=DQNet(features_only=True), hidden_sizes=[512])``).

    >>> net = iqn_net((4, 84, 84), 2, num_cosines=8)
    >>> net(torch.zeros(1, 4, 84, 84), torch.rand(1, 5)).shape
    torch.Size([1, 2, 5])
    """
    cnn = NatureCNN(obs_shape, scale)
    return ImplicitQuantileNetwork(
        obs_shape,
        n_actions,
        head_hidden_sizes=hidden_sizes,
        num_cosines=num_cosines,
        preprocess_net=cnn,
    )


def fqf_net(
    obs_shape: Sequence[int],
    n_actions: int,
    num_fractions: int = 32,
    num_cosines: int = 64,
    hidden_sizes: Sequence[int] = (512,),
    *,
    scale: float | None = None,
) -> tuple[FullQuantileFunction, FractionProposalNetwork]:
    """FQF's quantile function (as :func:`iqn_net`) and its fraction proposal network on the
    CNN features (Tianshou's Atari FQF).

    >>> net, fractions = fqf_net((4, 84, 84), 2, num_fractions=4, num_cosines=8)
    >>> fractions.embedding_dim, net(torch.zeros(1, 4, 84, 84), torch.rand(1, 4)).shape
    (3136, torch.Size([1, 2, 4]))
    """
    cnn = NatureCNN(obs_shape, scale)
    net = FullQuantileFunction(
        obs_shape,
        n_actions,
        head_hidden_sizes=hidden_sizes,
        num_cosines=num_cosines,
        preprocess_net=cnn,
    )
    return net, FractionProposalNetwork(num_fractions, net.feature_dim)
