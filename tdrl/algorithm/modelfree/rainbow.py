"""Rainbow (arXiv:1710.02298): C51 with noisy dueling networks, n-step returns and PER.

Rainbow adds no loss of its own to :class:`~tdrl.algorithm.modelfree.c51.C51`: the categorical
projected n-step target and the cross-entropy are C51's, the dueling noisy head is the network
(:class:`tdrl.utils.net_rainbow.RainbowNet`), prioritized replay is the buffer's
(:class:`tdrl.data.PrioritizedVectorReplayBuffer`; the cross-entropy is the new priority).
What Rainbow changes is when the noise is drawn. Per gradient step, as Tianshou's
``RainbowDQN``::

    draw new noise eps for every noisy layer of the online net, then of the target net
    every target_update_freq steps: target <- online        (noise buffers included)
    R   = sum_{k<n} gamma^k r_{t+k},   d = gamma^n (1 - term)
    a*  = argmax_a sum_i z_i p_i(s_{t+n}, a; online, eps)
    m   = Phi(R + d z, p(s_{t+n}, a*; target, eps'))        (target net with its noise)
    CE  = -sum_i m_i log(p_i(s_t, a_t; online, eps) + 1e-8)
    L   = mean(w * CE),   priorities <- CE

The target network keeps its noise (it runs in training mode during updates, as in
Tianshou), and the bootstrap distribution is built after the target sync of that step.
Outside updates the policy acts with whatever mode it is in: noisy weights in training mode
(tdrl's training collector), the mean weights in eval mode (tdrl's test collector) or when a
TorchRL caller asks for a deterministic action.

With ``n_step > 1`` the bootstrap state is ``s_{t+n}`` (C51's choice, see its docstring);
Tianshou 2.0.1 takes it at ``s_{t+1}``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.modelfree.c51 import C51, C51Policy
from tdrl.algorithm.qlearning import QLearningParams
from tdrl.data.batch import Batch
from tdrl.utils.noisy import noisy_layers

__all__ = ["Rainbow", "RainbowPolicy"]


@contextlib.contextmanager
def _mean_weights(net: nn.Module) -> Iterator[None]:
    """Eval mode (noisy layers use their mean weights) for the duration of the block."""
    was = net.training
    net.train(False)
    try:
        yield
    finally:
        net.train(was)


class RainbowPolicy(C51Policy):
    """C51's greedy (epsilon-greedy) policy over a noisy categorical network.

    The parameters are :class:`~tdrl.algorithm.modelfree.c51.C51Policy`'s. Noise is part of
    the network: in training mode it acts with the current noisy weights, in eval mode with
    the mean weights; under TorchRL's ``set_exploration_type(DETERMINISTIC)`` (or with
    ``deterministic_eval`` outside a training step) it uses the mean weights whatever the mode.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_rainbow import RainbowNet
    >>> _ = torch.manual_seed(0)
    >>> p = RainbowPolicy(model=RainbowNet(4, 2, num_atoms=11, hidden_sizes=(8,)),
    ...                   action_space=gym.spaces.Discrete(2), num_atoms=11)
    >>> p(make_batch({"obs": torch.zeros(3, 4)}, 3))["act"].shape
    torch.Size([3])
    """

    def forward(  # type: ignore[override]
        self, batch: TensorDictBase, state: Any = None, model: nn.Module | None = None
    ) -> Batch:
        """C51's greedy action; with the mean weights when acting deterministically."""
        net = model if model is not None else self.model
        if self.deterministic and net.training:
            with _mean_weights(net):
                return super().forward(batch, state, model)
        return super().forward(batch, state, model)


class _BufferSync:
    """Copy the online net's buffers (the noise) into the target net's on the steps its hard
    updater just copied the weights (TorchRL's updaters move parameters only; Tianshou's
    noise tensors are parameters, so its sync copies them)."""

    def __init__(self, alg: Rainbow, hard: Any) -> None:
        self.alg, self.hard = alg, hard

    @torch.no_grad()
    def step(self) -> None:
        """Copy the buffers if the hard updater synced in this step."""
        target = self.alg.model_old
        if self.hard.counter != 0 or target is None:
            return
        for src, tgt in zip(self.alg.policy.model.buffers(), target.buffers(), strict=True):
            tgt.copy_(src)


class Rainbow(C51):
    """Rainbow DQN: C51 whose noisy layers draw new noise before every gradient step.

    :param policy: a :class:`RainbowPolicy` (any :class:`C51Policy` works; noisy layers are
        found by :func:`~tdrl.utils.noisy.resample_noise`).

    The other parameters are :class:`~tdrl.algorithm.modelfree.c51.C51`'s (``is_double``:
    the online net picks the bootstrap action, as Tianshou's Rainbow always does).

    >>> import gymnasium as gym
    >>> from tdrl.utils.net_rainbow import RainbowNet
    >>> _ = torch.manual_seed(0)
    >>> p = RainbowPolicy(model=RainbowNet(4, 2, num_atoms=11, hidden_sizes=(8,)),
    ...                   action_space=gym.spaces.Discrete(2), num_atoms=11)
    >>> alg = Rainbow(policy=p, gamma=0.9, n_step=3, target_update_freq=100)
    >>> alg.resample_noise()
    4
    >>> alg.model_old.training  # the target net keeps its noise during updates
    True
    """

    def __init__(self, *, policy: C51Policy, **kwargs: Unpack[QLearningParams]) -> None:
        super().__init__(policy=policy, **kwargs)
        if self.model_old is not None:
            self.model_old.train(self.training)
            # right after the hard update of the weights: the noise buffers follow them
            self._updaters_first.append(_BufferSync(self, self._updaters_first[0]))

    def train(self, mode: bool = True) -> Rainbow:
        """Set the mode; the target network follows it (its noisy layers stay noisy in
        training mode, as in Tianshou's Rainbow)."""
        super().train(mode)
        target = self.__dict__.get("model_old")
        if target is not None:
            target.train(mode)
        return self

    def resample_noise(self) -> int:
        """Draw new noise in the online network, then in the target network (Tianshou's
        order); return how many noisy layers were resampled."""
        draws = self.__dict__.get("_noise_draws")
        if draws is None:  # the networks are fixed once built: look their layers up once
            draws = noisy_layers(self.policy.model)
            if self.model_old is not None:
                draws += noisy_layers(self.model_old)
            self.__dict__["_noise_draws"] = draws
        for draw in draws:
            draw()
        return len(draws)

    def forward(self, td: TensorDictBase) -> TensorDict:
        """New noise, then C51's terms (a TorchRL batch gets its one-step target)."""
        self.resample_noise()
        return super().forward(td)

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> MutableMapping[str, float]:
        """New noise, then the target sync and C51's gradient step."""
        self.resample_noise()
        return super()._update_with_batch(batch, batch_size, repeat)
