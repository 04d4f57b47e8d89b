"""Tianshou 2.0's ``tianshou.utils.net.continuous`` networks, with its keyword signatures.

Actors return ``(output, state)`` (Tianshou's contract, which tdrl's policies read through
:func:`tdrl.algorithm.policy.call_model`); critics take ``(obs, act=None)`` and return
``Q [B, 1]`` (or ``V [B, 1]`` without an action), as tdrl's critics do. Parameter names
match Tianshou's, so its state dicts load.

>>> from tdrl.utils.tianshou_net.common import Net
>>> actor = ContinuousActorProbabilistic(preprocess_net=Net(state_shape=3, hidden_sizes=[8]),
...                                      action_shape=2, unbounded=True)
>>> (mu, sigma), state = actor(torch.zeros(4, 3))
>>> mu.shape, sigma.shape, state
(torch.Size([4, 2]), torch.Size([4, 2]), None)
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tdrl.utils.tianshou_net.common import (
    MLP,
    AbstractContinuousActorProbabilistic,
    Actor,
    ModuleWithVectorOutput,
    TActionShape,
    TLinearLayer,
    as_input,
    call_preprocess,
    head_mlp,
    lstm_state,
    output_dim_of,
    packed_state,
    param_dtype_device,
)

__all__ = [
    "SIGMA_MAX",
    "SIGMA_MIN",
    "VAE",
    "AbstractContinuousActorDeterministic",
    "AbstractContinuousCritic",
    "ContinuousActorDeterministic",
    "ContinuousActorProbabilistic",
    "ContinuousCritic",
    "Perturbation",
    "RecurrentActorProb",
    "RecurrentCritic",
]

SIGMA_MIN = -20
"""Lower clamp of a state-conditioned ``log sigma``."""
SIGMA_MAX = 2
"""Upper clamp of a state-conditioned ``log sigma``."""


class AbstractContinuousActorDeterministic(Actor[Any], ABC):
    """Bound of the actors that output a continuous action directly (DDPG, TD3)."""


class ContinuousActorDeterministic(AbstractContinuousActorDeterministic):
    """``obs -> preprocess -> MLP -> max_action * tanh``: a deterministic action.

    :param preprocess_net: the preprocessing network, typically a ``Net``.
    :param action_shape: the action shape (or size).
    :param hidden_sizes: hidden widths of the head ``last``.
    :param max_action: scale of the tanh-bounded action.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> actor = ContinuousActorDeterministic(preprocess_net=Net(state_shape=3, hidden_sizes=[8]),
    ...                                      action_shape=2, max_action=2.0)
    >>> act, _ = actor(torch.randn(5, 3) * 100)
    >>> act.shape, bool((act.abs() <= 2.0).all())
    (torch.Size([5, 2]), True)
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        max_action: float = 1.0,
    ) -> None:
        super().__init__(int(np.prod(action_shape)))
        self.preprocess = preprocess_net
        self.last = head_mlp(preprocess_net, self.output_dim, hidden_sizes=hidden_sizes)
        self.max_action = max_action

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, Any]:
        """``(action [B, act_dim], hidden state of the preprocessing net)``."""
        h, hidden = call_preprocess(self.preprocess, obs, state)
        return self.max_action * torch.tanh(self.last(h)), hidden


class AbstractContinuousCritic(ModuleWithVectorOutput, ABC):
    """Bound of the critics ``(obs, act=None) -> Q [B, 1]``."""

    @abstractmethod
    def forward(
        self, obs: Any, act: Any = None, info: dict[str, Any] | None = None
    ) -> torch.Tensor:
        """``Q(s, a)`` (or ``V(s)`` without ``act``) ``[B, 1]``."""


class ContinuousCritic(AbstractContinuousCritic):
    """``(obs, act) -> preprocess(cat(obs, act)) -> MLP -> Q [B, 1]``.

    :param preprocess_net: the preprocessing network: a ``Net(..., concat=True)`` for a Q
        critic, a plain ``Net`` for a state-value critic (called without ``act``).
    :param hidden_sizes: hidden widths of the head ``last``.
    :param linear_layer: the head's linear-layer constructor (an ensemble layer for REDQ).
    :param flatten_input: flatten the head's input (``False`` for an ensemble).
    :param apply_preprocess_net_to_obs_only: run the preprocessing net on ``obs`` alone and
        concatenate ``act`` to its output (an actor's preprocessing net shared).

    With :class:`~tdrl.utils.tianshou_net.common.EnsembleLinear` layers the output is
    ``[ensemble_size, B, 1]``; tdrl's REDQ takes such a critic as its whole ensemble.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> q = ContinuousCritic(preprocess_net=Net(state_shape=3, action_shape=2,
    ...                                         hidden_sizes=[8], concat=True))
    >>> q(torch.zeros(4, 3), torch.zeros(4, 2)).shape
    torch.Size([4, 1])
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        hidden_sizes: Sequence[int] = (),
        linear_layer: TLinearLayer = nn.Linear,
        flatten_input: bool = True,
        apply_preprocess_net_to_obs_only: bool = False,
    ) -> None:
        super().__init__(output_dim=1)
        self.preprocess = preprocess_net
        self.last = head_mlp(
            preprocess_net,
            1,
            hidden_sizes=hidden_sizes,
            linear_layer=linear_layer,
            flatten_input=flatten_input,
        )
        self.apply_preprocess_net_to_obs_only = apply_preprocess_net_to_obs_only

    def forward(
        self, obs: Any, act: Any = None, info: dict[str, Any] | None = None
    ) -> torch.Tensor:
        """``Q(s, a)`` ``[B, 1]`` (``V(s)`` without ``act``)."""
        x = as_input(obs, self)
        if self.apply_preprocess_net_to_obs_only:
            x = call_preprocess(self.preprocess, x)[0]
        x = x.flatten(1)
        if act is not None:
            x = torch.cat([x, as_input(act, self).flatten(1)], dim=1)
        if not self.apply_preprocess_net_to_obs_only:
            x = call_preprocess(self.preprocess, x)[0]
        out: torch.Tensor = self.last(x)
        return out


def _gaussian_head(
    head: Any, mu: torch.Tensor, logits: torch.Tensor, conditioned: bool
) -> torch.Tensor:
    """``sigma``: ``exp(clamp(sigma(logits)))`` when conditioned on the state, else
    ``exp(sigma_param)`` broadcast over the batch."""
    if conditioned:
        return torch.clamp(head(logits), min=SIGMA_MIN, max=SIGMA_MAX).exp()
    shape = [1] * mu.dim()
    shape[1] = -1
    return (head.view(shape) + torch.zeros_like(mu)).exp()  # type: ignore[no-any-return]


def _check_unbounded(unbounded: bool, max_action: float) -> float:
    """``max_action``, or ``1.0`` (with a warning) when it is ignored for an unbounded actor."""
    if unbounded and not np.isclose(max_action, 1.0):
        warnings.warn("max_action is ignored when unbounded is True", stacklevel=3)
        return 1.0
    return max_action


class ContinuousActorProbabilistic(AbstractContinuousActorProbabilistic[Any]):
    """``obs -> preprocess -> (mu, sigma)``: the parameters of a Gaussian (SAC, PPO).

    :param preprocess_net: the preprocessing network, typically a ``Net``.
    :param action_shape: the action shape (or size).
    :param hidden_sizes: hidden widths of the ``mu`` (and ``sigma``) heads.
    :param max_action: scale of ``mu = max_action * tanh(.)`` (ignored when unbounded).
    :param unbounded: no tanh on ``mu``.
    :param conditioned_sigma: ``sigma`` is a head of the state (``log sigma`` clamped to
        ``[SIGMA_MIN, SIGMA_MAX]``); ``False``: a free parameter ``sigma_param``.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> actor = ContinuousActorProbabilistic(
    ...     preprocess_net=Net(state_shape=3, hidden_sizes=[8]), action_shape=2,
    ...     conditioned_sigma=True)
    >>> (mu, sigma), _ = actor(torch.zeros(4, 3))
    >>> bool((mu.abs() <= 1).all()), bool((sigma > 0).all())
    (True, True)
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        max_action: float = 1.0,
        unbounded: bool = False,
        conditioned_sigma: bool = False,
    ) -> None:
        output_dim = int(np.prod(action_shape))
        super().__init__(output_dim)
        self.preprocess = preprocess_net
        input_dim = output_dim_of(preprocess_net)
        self.mu = MLP(input_dim=input_dim, output_dim=output_dim, hidden_sizes=hidden_sizes)
        self._c_sigma = conditioned_sigma
        if conditioned_sigma:
            self.sigma = MLP(input_dim=input_dim, output_dim=output_dim, hidden_sizes=hidden_sizes)
        else:
            self.sigma_param = nn.Parameter(torch.zeros(output_dim, 1))
        self.max_action = _check_unbounded(unbounded, max_action)
        self._unbounded = unbounded

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        """``((mu, sigma), state)``, each ``[B, act_dim]``; ``state`` is returned as given."""
        logits, _ = call_preprocess(self.preprocess, obs, state)
        mu = self.mu(logits)
        if not self._unbounded:
            mu = self.max_action * torch.tanh(mu)
        head = self.sigma if self._c_sigma else self.sigma_param
        return (mu, _gaussian_head(head, mu, logits, self._c_sigma)), state


class RecurrentActorProb(nn.Module):
    """An LSTM Gaussian actor: ``obs -> LSTM -> (mu, sigma)`` of the last step.

    :param layer_num: LSTM layers.
    :param state_shape: observation shape (or size).
    :param action_shape: action shape (or size).
    :param hidden_layer_size: LSTM width.
    :param max_action: scale of ``mu`` (ignored when unbounded).
    :param unbounded: no tanh on ``mu``.
    :param conditioned_sigma: ``sigma`` as a head of the LSTM output (else a parameter).

    ``obs`` is ``[B, dim]`` (one step) or ``[B, T, dim]``; the state is a TensorDict
    ``{"hidden", "cell"}`` of ``[B, layer_num, hidden_layer_size]`` (see
    :class:`~tdrl.utils.tianshou_net.common.Recurrent`).

    >>> actor = RecurrentActorProb(layer_num=1, state_shape=3, action_shape=2,
    ...                            hidden_layer_size=8)
    >>> (mu, sigma), st = actor(torch.zeros(4, 3))
    >>> mu.shape, st["cell"].shape
    (torch.Size([4, 2]), torch.Size([4, 1, 8]))
    """

    def __init__(
        self,
        *,
        layer_num: int,
        state_shape: int | Sequence[int],
        action_shape: TActionShape,
        hidden_layer_size: int = 128,
        max_action: float = 1.0,
        unbounded: bool = False,
        conditioned_sigma: bool = False,
    ) -> None:
        super().__init__()
        self.max_action = _check_unbounded(unbounded, max_action)
        self.nn = nn.LSTM(
            input_size=int(np.prod(state_shape)),
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        output_dim = int(np.prod(action_shape))
        self.mu = nn.Linear(hidden_layer_size, output_dim)
        self._c_sigma = conditioned_sigma
        if conditioned_sigma:
            self.sigma = nn.Linear(hidden_layer_size, output_dim)
        else:
            self.sigma_param = nn.Parameter(torch.zeros(output_dim, 1))
        self._unbounded = unbounded

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        """``((mu, sigma), {"hidden", "cell"})`` of the last step."""
        x = as_input(obs, self)
        if x.dim() == 2:
            x = x.unsqueeze(-2)
        self.nn.flatten_parameters()
        x, (hidden, cell) = self.nn(x, lstm_state(state))
        logits = x[:, -1]
        mu = self.mu(logits)
        if not self._unbounded:
            mu = self.max_action * torch.tanh(mu)
        head = self.sigma if self._c_sigma else self.sigma_param
        sigma = _gaussian_head(head, mu, logits, self._c_sigma)
        return (mu, sigma), packed_state(hidden, cell)


class RecurrentCritic(nn.Module):
    """An LSTM critic: ``obs [B, T, dim] -> LSTM -> cat(last output, act) -> Q [B, 1]``.

    :param layer_num: LSTM layers.
    :param state_shape: observation shape (or size).
    :param action_shape: action shape (or size); ``(0,)``: a state-value critic.
    :param hidden_layer_size: LSTM width.

    >>> critic = RecurrentCritic(layer_num=1, state_shape=3, action_shape=2,
    ...                          hidden_layer_size=8)
    >>> critic(torch.zeros(4, 5, 3), torch.zeros(4, 2)).shape
    torch.Size([4, 1])
    """

    def __init__(
        self,
        layer_num: int,
        state_shape: int | Sequence[int],
        action_shape: TActionShape = (0,),
        hidden_layer_size: int = 128,
    ) -> None:
        super().__init__()
        self.state_shape = state_shape
        self.action_shape = action_shape
        self.nn = nn.LSTM(
            input_size=int(np.prod(state_shape)),
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        self.fc2 = nn.Linear(hidden_layer_size + int(np.prod(action_shape)), 1)

    def forward(
        self, obs: Any, act: Any = None, info: dict[str, Any] | None = None
    ) -> torch.Tensor:
        """``Q [B, 1]`` from a ``[B, T, dim]`` sequence (``[B, dim]``: one step)."""
        x = as_input(obs, self)
        if x.dim() == 2:
            x = x.unsqueeze(-2)
        if x.dim() != 3:
            raise ValueError(f"obs: expected [B, T, dim] or [B, dim], got shape {tuple(x.shape)}")
        self.nn.flatten_parameters()
        x = self.nn(x)[0][:, -1]
        if act is not None:
            x = torch.cat([x, as_input(act, self).flatten(1)], dim=1)
        out: torch.Tensor = self.fc2(x)
        return out


class Perturbation(nn.Module):
    """BCQ's perturbation ``xi(s, a) = clip(a + phi * max_action * tanh(f(cat(s, a))))``.

    :param preprocess_net: ``f``: ``cat(obs, act) -> [B, act_dim]`` (a plain module, or one
        returning ``(output, state)``).
    :param max_action: actions lie in ``[-max_action, max_action]``.
    :param phi: the largest perturbation, as a fraction of ``max_action``.

    Tianshou 2.0.1 takes element ``[0]`` of ``f``'s output, which for a plain module (an
    ``MLP``, as its BCQ example uses) is the first *row*: every state gets the first
    state's perturbation. Here a tensor output is used whole (per-state perturbations);
    only an ``(output, state)`` pair is unpacked.

    >>> xi = Perturbation(preprocess_net=MLP(input_dim=4, output_dim=1, hidden_sizes=[8]),
    ...                   max_action=1.0, phi=0.05)
    >>> a = torch.full((5, 1), 0.5)
    >>> bool(((xi(torch.randn(5, 3), a) - a).abs() <= 0.05 + 1e-7).all())
    True
    """

    def __init__(self, *, preprocess_net: nn.Module, max_action: float, phi: float = 0.05) -> None:
        super().__init__()
        self.preprocess_net = preprocess_net
        self.max_action = max_action
        self.phi = phi

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """The perturbed action ``[B, act_dim]``, clipped to the action range."""
        out = self.preprocess_net(torch.cat([state, action], -1))
        logits = out[0] if isinstance(out, tuple) else out
        noise = self.phi * self.max_action * torch.tanh(logits)
        return (noise + action).clamp(-self.max_action, self.max_action)


class VAE(nn.Module):
    """BCQ's conditional VAE of the dataset's actions.

    :param encoder: ``cat(state, action) -> [B, hidden_dim]``.
    :param decoder: ``cat(state, z) -> [B, act_dim]`` (before the tanh).
    :param hidden_dim: the encoder's output width.
    :param latent_dim: width of ``z``.
    :param max_action: decoded actions lie in ``[-max_action, max_action]``.

    ``forward(state, action)`` returns ``(reconstruction, mean, std)`` (``log std``
    clamped to ``[-4, 15]``, ``z`` reparameterized); ``decode(state)`` samples
    ``z ~ N(0, I)`` clipped to ``[-0.5, 0.5]`` (drawn on the CPU from torch's global
    generator, as Tianshou does). tdrl's BCQ policy takes it as its ``vae``.

    >>> vae = VAE(encoder=MLP(input_dim=4, hidden_sizes=[8]),
    ...           decoder=MLP(input_dim=5, output_dim=1, hidden_sizes=[8]),
    ...           hidden_dim=8, latent_dim=2, max_action=2.0)
    >>> recon, mean, std = vae(torch.zeros(3, 3), torch.zeros(3, 1))
    >>> recon.shape, mean.shape, vae.decode(torch.zeros(6, 3)).shape
    (torch.Size([3, 1]), torch.Size([3, 2]), torch.Size([6, 1]))
    """

    def __init__(
        self,
        *,
        encoder: nn.Module,
        decoder: nn.Module,
        hidden_dim: int,
        latent_dim: int,
        max_action: float,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.mean = nn.Linear(hidden_dim, latent_dim)
        self.log_std = nn.Linear(hidden_dim, latent_dim)
        self.decoder = decoder
        self.max_action = max_action
        self.latent_dim = latent_dim

    def forward(
        self, state: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(reconstruction, mean, std)`` of ``action`` given ``state``."""
        h = self.encoder(torch.cat([state, action], -1))
        mean = self.mean(h)
        std = self.log_std(h).clamp(-4, 15).exp()
        z = mean + std * torch.randn_like(std)
        return self.decode(state, z), mean, std

    def decode(self, state: torch.Tensor, latent_z: torch.Tensor | None = None) -> torch.Tensor:
        """Actions for ``state`` (``latent_z`` sampled and clipped when not given)."""
        if latent_z is None:
            dtype, device = param_dtype_device(self)
            z = torch.randn((*state.shape[:-1], self.latent_dim))
            latent_z = z.to(device=device, dtype=dtype).clamp(-0.5, 0.5)
        out = self.decoder(torch.cat([state, latent_z], -1))
        return self.max_action * torch.tanh(out)
