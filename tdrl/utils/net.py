"""Network builders: MLPs, actors, critics and a dueling Q head.

All networks are plain ``nn.Module``s taking a flat float observation batch ``[B, obs_dim]``
(observations of other dtypes are cast to the network's dtype, that of its first parameter:
float32 unless the module was converted, e.g. with ``.double()``). Actors and critics return tensors
(Gaussian actors a ``(loc, scale)`` pair), so they drop into TorchRL's
``TensorDictModule`` as well as into tdrl's policies.

>>> q = QNet(4, 2, hidden_sizes=(16,), dueling=True)
>>> q(torch.zeros(3, 4)).shape
torch.Size([3, 2])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import torch.nn.modules.module as _module_mod
from torch import nn

__all__ = [
    "MLP",
    "ActorCritic",
    "DeterministicActor",
    "DiscreteActor",
    "DuelingHead",
    "GaussianActor",
    "QCritic",
    "QNet",
    "VCritic",
    "apply_layers",
    "call_module",
    "flat_dim",
    "has_hooks",
]


def flat_dim(shape: int | Sequence[int]) -> int:
    """Number of features of a shape (an int passes through).

    >>> flat_dim((3, 4)), flat_dim(5)
    (12, 5)
    """
    return int(shape) if isinstance(shape, int | np.integer) else int(np.prod(shape))


def _global_hooks() -> bool:
    """Whether a global module hook is set or a JIT trace runs (``__call__`` matters then)."""
    mod = _module_mod
    return bool(
        mod._global_forward_hooks
        or mod._global_forward_pre_hooks
        or mod._global_backward_hooks
        or mod._global_backward_pre_hooks
        or torch._C._get_tracing_state()
    )


def has_hooks(module: nn.Module) -> bool:
    """Whether ``module`` has forward, forward-pre, backward or backward-pre hooks of its own
    (they could change what it computes).

    >>> lin = nn.Linear(2, 1)
    >>> has_hooks(lin), has_hooks(lin.register_forward_hook(lambda m, i, o: o) and lin)
    (False, True)
    """
    return bool(
        module._forward_hooks
        or module._forward_pre_hooks
        or module._backward_hooks
        or module._backward_pre_hooks
    )


def _own_hooks(module: nn.Module) -> bool:
    """Whether ``module`` has hooks of its own or is compiled (``__call__`` matters then)."""
    return has_hooks(module) or module._compiled_call_impl is not None


def call_module(module: nn.Module, *args: Any) -> Any:
    """``module(*args)``, by ``module.forward(*args)`` when ``__call__`` would do just that
    (no hooks, not compiled, no JIT trace; a plain ``nn.Sequential`` by
    :func:`apply_layers` over its layers).

    >>> lin = nn.Linear(2, 1)
    >>> torch.equal(call_module(lin, torch.ones(3, 2)), lin(torch.ones(3, 2)))
    True
    """
    if _global_hooks() or _own_hooks(module):
        return module(*args)
    if type(module) is nn.Sequential:
        return _apply_plain(args[0], module._modules.values())  # type: ignore[arg-type]
    return module.forward(*args)


def apply_layers(x: torch.Tensor, layers: Iterable[nn.Module]) -> torch.Tensor:
    """``for layer in layers: x = layer(x)``, without ``nn.Module.__call__`` where it does
    nothing.

    A layer that has no hooks and is not compiled, while no global module hooks are set
    and no JIT trace runs, is applied by its ``forward`` (an ``nn.Linear`` by
    ``F.linear`` on its own ``_parameters``, an ``nn.ReLU`` by ``torch.relu``): what
    ``__call__`` would do then, minus its two Python frames (about 6 us per layer on a
    2-core Xeon, a quarter of a no-grad forward of a 64-row MLP of 128 units; 4-5 % of a
    classic-control DQN, C51, IQN, Rainbow or TD3 update). Any other layer is called as a
    module, so its hooks (forward hooks, pruning masks, spectral normalization,
    quantization observers) run as usual.

    >>> layers = [nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)]
    >>> x = torch.ones(5, 3)
    >>> torch.equal(apply_layers(x, layers), nn.Sequential(*layers)(x))
    True
    """
    if _global_hooks():
        for layer in layers:
            x = layer(x)
        return x
    return _apply_plain(x, layers)


def _apply_plain(x: torch.Tensor, layers: Iterable[nn.Module]) -> torch.Tensor:
    """:func:`apply_layers` once no global module hook or JIT trace is known to be active."""
    for layer in layers:
        if _own_hooks(layer):
            x = layer(x)
            continue
        kind = type(layer)
        if kind is nn.Linear:
            params = layer._parameters
            x = F.linear(x, params["weight"], params["bias"])  # type: ignore[arg-type]
        elif kind is nn.ReLU and not layer.inplace:
            x = torch.relu(x)
        else:
            x = layer.forward(x)
    return x


def _param_dtype_device(module: nn.Module) -> tuple[torch.dtype, torch.device | None]:
    """Floating dtype and device of ``module``'s first parameter (float32 and no device
    when it has none, e.g. after dynamic quantization).

    A direct child's parameter is found without walking the whole module tree (this runs
    on every forward)."""
    p: torch.Tensor | None = None
    for child in module._modules.values():
        if child is not None:
            for q in child._parameters.values():
                if q is not None:
                    p = q
                    break
        if p is not None:
            break
    else:
        p = next(module.parameters(), None)
    if p is None:
        return torch.float32, None
    return (p.dtype if p.is_floating_point() else torch.float32), p.device


def _as_input(
    x: Any, dtype: torch.dtype = torch.float32, device: torch.device | None = None
) -> torch.Tensor:
    """``x`` as a ``dtype`` tensor on ``device`` (``None``: where it is), flattened past
    the batch dim. A tensor already of that dtype and device is not copied.

    >>> _as_input(torch.ones(2, 3, dtype=torch.uint8), torch.float64).dtype
    torch.float64
    >>> _as_input(torch.zeros(2, 3, 4)).shape
    torch.Size([2, 12])
    """
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if device is not None and x.device != device:
        # move the smaller representation: e.g. uint8 pixels are cast on the target device
        if x.element_size() < dtype.itemsize:
            x = x.to(device)
        else:
            x = x.to(dtype).to(device)
    if x.dtype != dtype:
        x = x.to(dtype)
    return x.flatten(1) if x.dim() > 2 else x


def curiosity_terms(
    phi1: torch.Tensor,
    phi2: torch.Tensor,
    act: Any,
    action_dim: int,
    forward_model: nn.Module,
    inverse_model: nn.Module,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The intrinsic curiosity module's two terms (arXiv:1705.05363) from the features
    ``phi(s1)``, ``phi(s2)`` ``[B, F]`` and the discrete actions ``act`` ``[B]``: the forward
    model's error ``1/2 ||f([phi1, onehot(a)]) - phi2||^2`` ``[B]`` and the inverse model's
    logits ``g([phi1, phi2])`` ``[B, action_dim]`` (shared by tdrl's and the
    Tianshou-signature ``IntrinsicCuriosityModule``).

    >>> f, g = nn.Linear(3, 2), nn.Linear(4, 1)
    >>> err, logits = curiosity_terms(torch.zeros(5, 2), torch.ones(5, 2), [0] * 5, 1, f, g)
    >>> err.shape, logits.shape
    (torch.Size([5]), torch.Size([5, 1]))
    """
    a = torch.as_tensor(act, device=phi1.device).long().reshape(-1)
    one_hot = nn.functional.one_hot(a, num_classes=action_dim).to(phi1.dtype)
    phi2_hat = forward_model(torch.cat([phi1, one_hot], dim=1))
    err = 0.5 * (phi2_hat - phi2).pow(2).sum(1)
    return err, inverse_model(torch.cat([phi1, phi2], dim=1))


class MLP(nn.Sequential):
    """Linear layers with an activation between them.

    :param input_dim: input features.
    :param output_dim: output features (``0``: no output layer; the last hidden layer is
        the output).
    :param hidden_sizes: widths of the hidden layers.
    :param activation: activation class after each hidden layer.
    :param output_activation: optional activation class after the output layer.

    >>> m = MLP(4, 2, (8, 8))
    >>> m(torch.zeros(5, 4)).shape, m.output_dim
    (torch.Size([5, 2]), 2)
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int = 0,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: type[nn.Module] = nn.ReLU,
        output_activation: type[nn.Module] | None = None,
    ) -> None:
        layers: list[nn.Module] = []
        d = input_dim
        for h in hidden_sizes:
            layers += [nn.Linear(d, h), activation()]
            d = h
        if output_dim > 0:
            layers.append(nn.Linear(d, output_dim))
            d = output_dim
            if output_activation is not None:
                layers.append(output_activation())
        super().__init__(*layers)
        self.output_dim = d

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """Apply the layers to ``x`` (cast to the dtype of the layers' parameters, flattened
        past the batch dim, moved to the layers' device).

        Hooks on a layer run (forward hooks, pruning masks, spectral normalization,
        quantization observers): :func:`apply_layers` calls such a layer as a module.

        >>> MLP(3, 1, (4,)).double()(torch.zeros(2, 3, dtype=torch.int64)).dtype
        torch.float64
        """
        dtype, device = _param_dtype_device(self)
        return apply_layers(_as_input(x, dtype, device), self._modules.values())  # type: ignore[arg-type]


class DuelingHead(nn.Module):
    """Dueling head: ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)`` (arXiv:1511.06581).

    >>> h = DuelingHead(8, 3, value_hidden=(4,), adv_hidden=(4,))
    >>> h(torch.zeros(2, 8)).shape
    torch.Size([2, 3])
    """

    def __init__(
        self,
        feature_dim: int,
        n_actions: int,
        value_hidden: Sequence[int] = (),
        adv_hidden: Sequence[int] = (),
    ) -> None:
        super().__init__()
        self.value = MLP(feature_dim, 1, value_hidden)
        self.advantage = MLP(feature_dim, n_actions, adv_hidden)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Q-values from shared features."""
        adv = call_module(self.advantage, features)
        return call_module(self.value, features) + adv - adv.mean(dim=-1, keepdim=True)


class QNet(nn.Module):
    """Discrete Q-network ``obs -> Q(s, .)``, optionally with a dueling head.

    :param obs_dim: observation features (or shape).
    :param n_actions: number of discrete actions.
    :param hidden_sizes: trunk widths.
    :param dueling: use a :class:`DuelingHead` instead of a linear output.
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        n_actions: int,
        hidden_sizes: Sequence[int] = (128, 128),
        dueling: bool = False,
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        super().__init__()
        if dueling:
            self.trunk = MLP(flat_dim(obs_dim), 0, hidden_sizes, activation)
            self.head: nn.Module = DuelingHead(self.trunk.output_dim, n_actions)
        else:
            self.trunk = MLP(flat_dim(obs_dim), n_actions, hidden_sizes, activation)
            self.head = nn.Identity()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values ``[B, n_actions]``."""
        return call_module(self.head, call_module(self.trunk, obs))


class DiscreteActor(MLP):
    """Categorical actor ``obs -> logits [B, n_actions]``.

    >>> DiscreteActor(4, 2, (8,))(torch.zeros(1, 4)).shape
    torch.Size([1, 2])
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        n_actions: int,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: type[nn.Module] = nn.Tanh,
    ) -> None:
        super().__init__(flat_dim(obs_dim), n_actions, hidden_sizes, activation)


class DeterministicActor(nn.Module):
    """Deterministic actor ``obs -> max_action * tanh(mlp(obs))``.

    >>> a = DeterministicActor(3, 2, (8,), max_action=2.0)
    >>> bool((a(torch.randn(5, 3) * 100).abs() <= 2.0).all())
    True
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        max_action: float = 1.0,
    ) -> None:
        super().__init__()
        self.net = MLP(flat_dim(obs_dim), act_dim, hidden_sizes)
        self.max_action = max_action

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Bounded action ``[B, act_dim]``."""
        return self.max_action * torch.tanh(call_module(self.net, obs))


class GaussianActor(nn.Module):
    """Gaussian actor ``obs -> (loc, scale)``.

    :param state_dependent_std: ``scale`` is a head of the network (SAC) rather than a
        free parameter (PPO).
    :param log_std_bounds: clamp of ``log(scale)`` for the state-dependent case.
    :param init_log_std: initial value of the free ``log(scale)`` parameter.
    :param bounded_loc: squash ``loc`` with ``tanh`` (for actors whose actions are
        not squashed afterwards).

    >>> loc, scale = GaussianActor(3, 2, (8,))(torch.zeros(4, 3))
    >>> loc.shape, bool((scale > 0).all())
    (torch.Size([4, 2]), True)
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        state_dependent_std: bool = True,
        log_std_bounds: tuple[float, float] = (-20.0, 2.0),
        init_log_std: float = 0.0,
        bounded_loc: bool = False,
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        super().__init__()
        self.trunk = MLP(flat_dim(obs_dim), 0, hidden_sizes, activation)
        d = self.trunk.output_dim
        self.loc = nn.Linear(d, act_dim)
        self.state_dependent_std = state_dependent_std
        if state_dependent_std:
            self.log_std: nn.Module | nn.Parameter = nn.Linear(d, act_dim)
        else:
            self.log_std = nn.Parameter(torch.full((act_dim,), float(init_log_std)))
        self.log_std_bounds = log_std_bounds
        self.bounded_loc = bounded_loc

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loc, scale)``, each ``[B, act_dim]``."""
        h = call_module(self.trunk, obs)
        loc = call_module(self.loc, h)
        if self.bounded_loc:
            loc = torch.tanh(loc)
        head: Any = self.log_std
        if self.state_dependent_std:
            log_std = head(h).clamp(*self.log_std_bounds)
        else:
            log_std = head.expand_as(loc)
        return loc, log_std.exp()


class VCritic(MLP):
    """State-value critic ``obs -> V(s)`` of shape ``[B, 1]``.

    >>> VCritic(4, (8,))(torch.zeros(2, 4)).shape
    torch.Size([2, 1])
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        hidden_sizes: Sequence[int] = (64, 64),
        activation: type[nn.Module] = nn.Tanh,
    ) -> None:
        super().__init__(flat_dim(obs_dim), 1, hidden_sizes, activation)


class QCritic(nn.Module):
    """Action-value critic ``(obs, act) -> Q(s, a)`` of shape ``[B, 1]``.

    >>> QCritic(3, 1, (8,))(torch.zeros(2, 3), torch.zeros(2, 1)).shape
    torch.Size([2, 1])
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        act_dim: int,
        hidden_sizes: Sequence[int] = (256, 256),
        activation: type[nn.Module] = nn.ReLU,
    ) -> None:
        super().__init__()
        self.net = MLP(flat_dim(obs_dim) + act_dim, 1, hidden_sizes, activation)

    @staticmethod
    def features(
        obs: torch.Tensor, act: torch.Tensor, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        """The network input ``cat([obs, act], -1)`` (as ``dtype``, flattened past the batch
        dim); critics of the same shapes can share it:
        ``critic.net(QCritic.features(obs, act))``. ``dtype`` defaults to float32; pass the
        critic's dtype for a converted critic (its forward casts the input anyway, but a
        float64 critic fed float32 features loses precision).

        >>> QCritic.features(torch.zeros(2, 3), torch.zeros(2, 1, dtype=torch.int64)).dtype
        torch.float32
        >>> QCritic.features(torch.zeros(2, 3), torch.zeros(2, 1), torch.float64).dtype
        torch.float64
        """
        return torch.cat([_as_input(obs, dtype), _as_input(act, dtype)], dim=-1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Q-value of each (observation, action) pair, in the critic's dtype."""
        features = self.features(obs, act, _param_dtype_device(self.net)[0])
        return call_module(self.net, features)


class ActorCritic(nn.Module):
    """Holds an actor and a critic so one optimizer covers both (shared parameters once).

    >>> ac = ActorCritic(nn.Linear(2, 2), nn.Linear(2, 1))
    >>> sum(p.numel() for p in ac.parameters())
    9
    """

    def __init__(self, actor: nn.Module, critic: nn.Module) -> None:
        super().__init__()
        self.actor = actor
        self.critic = critic
