"""Tianshou 2.0's ``tianshou.utils.net.common`` networks, with its keyword signatures.

Every network takes its constructor arguments by keyword, as Tianshou's do, and the
action-representation networks follow Tianshou's contract
``forward(obs, state=None, info=None) -> (output, state)``, which
:func:`tdrl.algorithm.policy.call_model` understands. Parameter names match Tianshou's
(``model.model.0.weight`` for a :class:`Net`, ``nn.weight_ih_l0`` for a
:class:`Recurrent`, ...), so a state dict saved by Tianshou loads.

Inputs may be numpy arrays or tensors of any dtype: they are cast to the dtype of the
network's parameters (float32 unless converted) and moved to their device.

>>> net = Net(state_shape=(4,), action_shape=2, hidden_sizes=[16, 16])
>>> q, state = net(np.zeros((3, 4)))
>>> q.shape, state, net.output_dim
(torch.Size([3, 2]), None, 2)
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn

from tdrl.utils.net import ActorCritic

__all__ = [
    "MLP",
    "AbstractContinuousActorProbabilistic",
    "AbstractDiscreteActor",
    "ActionReprNet",
    "ActionReprNetDataParallelWrapper",
    "ActionReprNetWithVectorOutput",
    "Actor",
    "ActorCritic",
    "BranchingNet",
    "DataParallelNet",
    "EnsembleLinear",
    "ModuleWithVectorOutput",
    "ModuleWithVectorOutputAdapter",
    "Net",
    "Recurrent",
    "TActionShape",
    "TLinearLayer",
    "call_preprocess",
    "miniblock",
]

ModuleType = type[nn.Module]
ArgsType = tuple[Any, ...] | dict[Any, Any] | Sequence[tuple[Any, ...] | dict[Any, Any] | None]
"""Arguments of a norm layer or an activation: one tuple/dict, or one per hidden layer."""
TActionShape = Sequence[int] | int | np.integer
"""An action shape: an int (``n`` discrete actions, or ``n`` dimensions) or a sequence."""
TLinearLayer = Callable[[int, int], nn.Module]
"""A linear-layer constructor ``(in_features, out_features) -> module``."""
T = TypeVar("T")


# -- input handling ---------------------------------------------------------------------
def param_dtype_device(module: nn.Module) -> tuple[torch.dtype, torch.device | None]:
    """The floating dtype and the device of ``module``'s first parameter or buffer
    (float32 and no device when it has none).

    >>> param_dtype_device(nn.Linear(2, 2).double())
    (torch.float64, device(type='cpu'))
    """
    t: torch.Tensor | None = next(module.parameters(), None)
    if t is None:
        t = next(module.buffers(), None)
    if t is None:
        return torch.float32, None
    return (t.dtype if t.is_floating_point() else torch.float32), t.device


def as_input(x: Any, module: nn.Module) -> torch.Tensor:
    """``x`` as a tensor of ``module``'s parameter dtype, on its device.

    >>> as_input(np.ones((2, 3), np.int64), nn.Linear(3, 1)).dtype
    torch.float32
    """
    dtype, device = param_dtype_device(module)
    return torch.as_tensor(x, dtype=dtype, device=device)


_TAKES_STATE: dict[type, bool] = {}


def _takes_state(module: nn.Module) -> bool:
    """Whether ``module.forward`` names a ``state`` parameter (Tianshou's contract)."""
    cls = type(module)
    if cls not in _TAKES_STATE:
        try:
            params = inspect.signature(module.forward).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        _TAKES_STATE[cls] = "state" in params
    return _TAKES_STATE[cls]


def call_preprocess(net: nn.Module, obs: Any, state: Any = None) -> tuple[torch.Tensor, Any]:
    """Run a preprocessing network: ``(latent [B, D], state)``.

    A network with Tianshou's contract (a ``state`` parameter) gets the hidden state and
    its ``(output, state)`` pair is returned; any other module is called as ``net(obs)``
    (a returned ``(output, state)`` pair is split, a tensor comes back with ``state``).

    >>> out, st = call_preprocess(nn.Identity(), torch.ones(2, 3), state="h")
    >>> out.shape, st
    (torch.Size([2, 3]), 'h')
    """
    out = net(obs, state=state) if _takes_state(net) else net(obs)
    if isinstance(out, tuple) and len(out) == 2:
        return out[0], out[1]
    return out, state


def output_dim_of(net: nn.Module) -> int:
    """The width of a preprocessing network's output: its ``get_output_dim()``, else its
    ``output_dim`` attribute.

    >>> output_dim_of(MLP(input_dim=3, hidden_sizes=[5]))
    5
    """
    getter = getattr(net, "get_output_dim", None)
    dim = getter() if callable(getter) else getattr(net, "output_dim", None)
    if dim is None or int(dim) < 1:
        raise ValueError(
            f"preprocess_net: expected a module with get_output_dim() or output_dim >= 1, "
            f"got {type(net).__name__}"
        )
    return int(dim)


# -- building blocks --------------------------------------------------------------------
def _build(cls: ModuleType, size: int | None, args: Any) -> nn.Module:
    """``cls(size, *args)`` / ``cls(size, **args)`` (``size`` omitted when ``None``)."""
    lead = () if size is None else (size,)
    if isinstance(args, tuple):
        return cls(*lead, *args)
    if isinstance(args, dict):
        return cls(*lead, **args)
    return cls(*lead)


def miniblock(
    input_size: int,
    output_size: int = 0,
    norm_layer: ModuleType | None = None,
    norm_args: tuple[Any, ...] | dict[Any, Any] | None = None,
    activation: ModuleType | None = None,
    act_args: tuple[Any, ...] | dict[Any, Any] | None = None,
    linear_layer: TLinearLayer = nn.Linear,
) -> list[nn.Module]:
    """``[linear, norm?, activation?]``: one hidden layer of an :class:`MLP`.

    ``norm_layer`` is built as ``norm_layer(output_size, *norm_args)`` (or with keyword
    ``norm_args``), ``activation`` as ``activation(*act_args)``.

    >>> [type(m).__name__ for m in miniblock(3, 4, nn.LayerNorm, None, nn.ReLU)]
    ['Linear', 'LayerNorm', 'ReLU']
    """
    layers = [linear_layer(input_size, output_size)]
    if norm_layer is not None:
        layers.append(_build(norm_layer, output_size, norm_args))
    if activation is not None:
        layers.append(_build(activation, None, act_args))
    return layers


def _per_layer(
    value: Any, args: Any, n: int, names: tuple[str, str]
) -> tuple[list[Any], list[Any]]:
    """One ``(class, args)`` per hidden layer from a single class or a list of them
    (``names``: the two parameters, for the error messages)."""
    if not value:
        return [None] * n, [None] * n
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != n:
            raise ValueError(f"{names[0]}: expected one per hidden layer ({n}), got {len(value)}")
        if isinstance(args, list):
            if len(args) != n:
                raise ValueError(f"{names[1]}: expected {n} entries, got {len(args)}")
            return list(value), list(args)
        return list(value), [args] * n
    return [value] * n, [args] * n


class ModuleWithVectorOutput(nn.Module):
    """A module whose output is a vector of a known width (:meth:`get_output_dim`).

    :param output_dim: the width of the output vector.

    >>> ModuleWithVectorOutput.from_module(nn.Linear(3, 5), 5).get_output_dim()
    5
    """

    def __init__(self, output_dim: int) -> None:
        super().__init__()
        self.output_dim = output_dim

    @staticmethod
    def from_module(module: nn.Module, output_dim: int) -> ModuleWithVectorOutput:
        """Wrap ``module`` (whose output has ``output_dim`` features) in this interface."""
        return ModuleWithVectorOutputAdapter(module, output_dim)

    def get_output_dim(self) -> int:
        """The width of the output vector."""
        return int(self.output_dim)


class ModuleWithVectorOutputAdapter(ModuleWithVectorOutput):
    """A module seen as a :class:`ModuleWithVectorOutput`; calls pass through to it.

    :param module: the wrapped module.
    :param output_dim: the width of its output.

    >>> ModuleWithVectorOutputAdapter(nn.Identity(), 3)(torch.ones(1, 3)).shape
    torch.Size([1, 3])
    """

    def __init__(self, module: nn.Module, output_dim: int) -> None:
        super().__init__(output_dim)
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's output."""
        return self.module(*args, **kwargs)


class MLP(ModuleWithVectorOutput):
    """Linear layers, each hidden one followed by an optional norm layer and an activation.

    :param input_dim: input features.
    :param output_dim: output features; ``0``: no output layer (the last hidden layer, with
        its activation, is the output).
    :param hidden_sizes: widths of the hidden layers.
    :param norm_layer: a norm layer class after each hidden linear layer (or one per layer).
    :param norm_args: its extra arguments (a tuple or a dict, or a list of them).
    :param activation: the activation class of each hidden layer (or one per layer;
        ``None``: none).
    :param act_args: its arguments (a tuple or a dict, or a list of them).
    :param linear_layer: the linear-layer constructor ``(in, out) -> module``.
    :param flatten_input: flatten the input past its first dim.

    The layers are ``self.model`` (an ``nn.Sequential``), as in Tianshou.

    >>> m = MLP(input_dim=4, output_dim=2, hidden_sizes=[8], norm_layer=nn.LayerNorm)
    >>> m(torch.zeros(5, 2, 2)).shape, m.output_dim, [k for k in m.state_dict()][:2]
    (torch.Size([5, 2]), 2, ['model.0.weight', 'model.0.bias'])
    >>> MLP(input_dim=6)(torch.ones(2, 6)).shape  # no layers: the identity
    torch.Size([2, 6])
    """

    def __init__(
        self,
        *,
        input_dim: int,
        output_dim: int = 0,
        hidden_sizes: Sequence[int] = (),
        norm_layer: ModuleType | Sequence[ModuleType] | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | Sequence[ModuleType] | None = nn.ReLU,
        act_args: ArgsType | None = None,
        linear_layer: TLinearLayer = nn.Linear,
        flatten_input: bool = True,
    ) -> None:
        n = len(hidden_sizes)
        norms, norm_argss = _per_layer(norm_layer, norm_args, n, ("norm_layer", "norm_args"))
        acts, act_argss = _per_layer(activation, act_args, n, ("activation", "act_args"))
        sizes = [int(input_dim), *(int(h) for h in hidden_sizes)]
        layers: list[nn.Module] = []
        for i in range(n):
            layers += miniblock(
                sizes[i], sizes[i + 1], norms[i], norm_argss[i], acts[i], act_argss[i], linear_layer
            )
        if output_dim > 0:
            layers.append(linear_layer(sizes[-1], int(output_dim)))
        super().__init__(int(output_dim) or sizes[-1])
        self.model = nn.Sequential(*layers)
        self.flatten_input = flatten_input

    def forward(self, obs: Any) -> torch.Tensor:
        """The layers applied to ``obs`` (cast to the parameters' dtype and device)."""
        x = as_input(obs, self)
        if self.flatten_input:
            x = x.flatten(1)
        out: torch.Tensor = self.model(x)
        return out


# -- abstract action-representation networks ---------------------------------------------
class ActionReprNet(nn.Module, ABC, Generic[T]):
    """Base of the networks mapping observations to an action representation (Q-values,
    logits, distribution parameters) with Tianshou's contract
    ``forward(obs, state=None, info=None) -> (output, state)``.

    >>> class Zeros(ActionReprNet):
    ...     def forward(self, obs, state=None, info=None):
    ...         return torch.zeros(len(obs), 2), state
    >>> Zeros()(torch.ones(3, 1))[0].shape
    torch.Size([3, 2])
    """

    @abstractmethod
    def forward(
        self, obs: Any, state: T | None = None, info: dict[str, Any] | None = None
    ) -> tuple[Any, T | None]:
        """``(action representation, new hidden state)`` for ``obs``."""


class ActionReprNetWithVectorOutput(ActionReprNet[T], ModuleWithVectorOutput):
    """An :class:`ActionReprNet` whose output is a vector of known width.

    :param output_dim: the width of the output vector.
    """

    def __init__(self, output_dim: int) -> None:
        ModuleWithVectorOutput.__init__(self, output_dim)


class Actor(ActionReprNetWithVectorOutput[T], ABC):
    """An actor: a preprocessing network followed by a head (:meth:`get_preprocess_net`
    gives the first part, so critics can share it)."""

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """The preprocessing part of the network (its ``preprocess`` attribute)."""
        return self.preprocess  # type: ignore[return-value]


def head_mlp(preprocess_net: nn.Module, output_dim: int, **mlp: Any) -> MLP:
    """The head every Tianshou actor and critic puts after its preprocessing net: an
    :class:`MLP` from that net's output width to ``output_dim`` (``mlp``: its other
    arguments).

    >>> head_mlp(MLP(input_dim=3, hidden_sizes=[5]), 2, hidden_sizes=[4])(torch.zeros(1, 5)).shape
    torch.Size([1, 2])
    """
    return MLP(input_dim=output_dim_of(preprocess_net), output_dim=output_dim, **mlp)


class AbstractContinuousActorProbabilistic(Actor[T], ABC):
    """Bound of the actors that output distribution parameters over a Box space."""


class AbstractDiscreteActor(Actor[T], ABC):
    """Bound of the actors that output one value (logit, probability or Q) per action."""


# -- concrete networks -------------------------------------------------------------------
class Net(ActionReprNetWithVectorOutput[Any]):
    """An MLP ``obs -> action representation`` (Tianshou's general-purpose network).

    :param state_shape: observation shape (or its flat size).
    :param action_shape: action shape (or size); ``0``: no output layer (a feature net
        whose output is the last hidden layer).
    :param hidden_sizes: widths of the hidden layers.
    :param norm_layer: norm layer class(es) after the hidden linear layers.
    :param norm_args: their extra arguments.
    :param activation: activation class(es) of the hidden layers.
    :param act_args: their arguments.
    :param softmax: softmax over the last dim of the output (C51's probabilities).
    :param concat: the input is ``cat(obs, act)`` (a Q critic's preprocessing net): the
        action size adds to the input, and there is no output layer.
    :param num_atoms: atoms per action (distributional RL): the output becomes
        ``[B, n_actions, num_atoms]``.
    :param dueling_param: ``(Q kwargs, V kwargs)`` of :class:`MLP`: a dueling head
        ``Q - mean_a Q + V`` on the trunk.
    :param linear_layer: the linear-layer constructor (e.g. a noisy or ensemble layer).

    >>> net = Net(state_shape=4, action_shape=3, hidden_sizes=[8], num_atoms=5,
    ...           softmax=True, dueling_param=({"hidden_sizes": [4]}, {"hidden_sizes": [4]}))
    >>> probs, _ = net(torch.zeros(2, 4))
    >>> probs.shape, torch.allclose(probs.sum(-1), torch.ones(2, 3))
    (torch.Size([2, 3, 5]), True)
    """

    def __init__(
        self,
        *,
        state_shape: int | Sequence[int],
        action_shape: TActionShape = 0,
        hidden_sizes: Sequence[int] = (),
        norm_layer: ModuleType | Sequence[ModuleType] | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | Sequence[ModuleType] | None = nn.ReLU,
        act_args: ArgsType | None = None,
        softmax: bool = False,
        concat: bool = False,
        num_atoms: int = 1,
        dueling_param: tuple[dict[str, Any], dict[str, Any]] | None = None,
        linear_layer: TLinearLayer = nn.Linear,
    ) -> None:
        input_dim = int(np.prod(state_shape))
        action_dim = int(np.prod(action_shape)) * num_atoms
        if concat:
            input_dim += action_dim
        dueling = dueling_param is not None
        model = MLP(
            input_dim=input_dim,
            output_dim=0 if dueling or concat else action_dim,
            hidden_sizes=hidden_sizes,
            norm_layer=norm_layer,
            norm_args=norm_args,
            activation=activation,
            act_args=act_args,
            linear_layer=linear_layer,
        )
        q_net = v_net = None
        if dueling_param is not None:
            q_kwargs = {**dueling_param[0], "input_dim": model.output_dim}
            v_kwargs = {**dueling_param[1], "input_dim": model.output_dim}
            q_kwargs["output_dim"] = 0 if concat else action_dim
            v_kwargs["output_dim"] = 0 if concat else num_atoms
            q_net, v_net = MLP(**q_kwargs), MLP(**v_kwargs)
        super().__init__(q_net.output_dim if q_net is not None else model.output_dim)
        self.use_dueling = dueling
        self.softmax = softmax
        self.num_atoms = num_atoms
        self.model = model
        self.Q = q_net
        self.V = v_net

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, Any]:
        """``(output, state)``: ``state`` is returned unchanged, ``info`` is unused."""
        out = self.model(obs)
        b = out.shape[0]
        if self.Q is not None and self.V is not None:
            q, v = self.Q(out), self.V(out)
            if self.num_atoms > 1:
                q = q.view(b, -1, self.num_atoms)
                v = v.view(b, -1, self.num_atoms)
            out = q - q.mean(dim=1, keepdim=True) + v
        elif self.num_atoms > 1:
            out = out.view(b, -1, self.num_atoms)
        if self.softmax:
            out = torch.softmax(out, dim=-1)
        return out, state


class Recurrent(ActionReprNetWithVectorOutput[Any]):
    """``obs -> Linear -> LSTM -> Linear`` (DRQN's network).

    :param layer_num: LSTM layers.
    :param state_shape: observation shape (or size).
    :param action_shape: action shape (or size): the output width.
    :param hidden_layer_size: width of the embedding and of the LSTM.

    ``forward`` takes ``[B, dim]`` (one step, acting) or ``[B, T, dim]`` (a frame stack,
    learning) and returns the output of the last step and the new hidden state, a
    TensorDict ``{"hidden", "cell"}`` of ``[B, layer_num, hidden_layer_size]`` (batch
    first, detached); ``state`` may be such a mapping or ``None`` (zeros).

    >>> net = Recurrent(layer_num=2, state_shape=4, action_shape=2, hidden_layer_size=8)
    >>> q, st = net(torch.zeros(3, 5, 4))
    >>> q.shape, st["hidden"].shape
    (torch.Size([3, 2]), torch.Size([3, 2, 8]))
    >>> net(torch.zeros(3, 4), state=st)[0].shape
    torch.Size([3, 2])
    """

    def __init__(
        self,
        *,
        layer_num: int,
        state_shape: int | Sequence[int],
        action_shape: TActionShape,
        hidden_layer_size: int = 128,
    ) -> None:
        output_dim = int(np.prod(action_shape))
        super().__init__(output_dim)
        self.nn = nn.LSTM(
            input_size=hidden_layer_size,
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        self.fc1 = nn.Linear(int(np.prod(state_shape)), hidden_layer_size)
        self.fc2 = nn.Linear(hidden_layer_size, output_dim)

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No separate preprocessing: an identity of this network's output width."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, TensorDict]:
        """``(output [B, output_dim], {"hidden", "cell"})`` (see the class docstring)."""
        x = as_input(obs, self)
        if x.dim() == 2:
            x = x.unsqueeze(-2)
        x = self.fc1(x)
        self.nn.flatten_parameters()
        x, (hidden, cell) = self.nn(x, lstm_state(state))
        return self.fc2(x[:, -1]), packed_state(hidden, cell)


def lstm_state(state: Any) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A batch-first ``{"hidden", "cell"}`` state as the ``(h, c)`` pair an ``nn.LSTM``
    takes (layers first); ``None`` stays ``None``.

    >>> h, c = lstm_state({"hidden": torch.zeros(3, 2, 8), "cell": torch.ones(3, 2, 8)})
    >>> h.shape
    torch.Size([2, 3, 8])
    """
    if state is None:
        return None
    keys = set(state.keys())
    if not {"hidden", "cell"} <= keys:
        raise ValueError(f"state: expected the keys 'hidden' and 'cell', got {sorted(keys)}")
    return (
        state["hidden"].transpose(0, 1).contiguous(),
        state["cell"].transpose(0, 1).contiguous(),
    )


def packed_state(hidden: torch.Tensor, cell: torch.Tensor) -> TensorDict:
    """An LSTM's ``(h, c)`` (layers first) as a detached batch-first TensorDict state.

    >>> packed_state(torch.zeros(2, 3, 8), torch.zeros(2, 3, 8)).batch_size
    torch.Size([3])
    """
    h, c = hidden.transpose(0, 1).detach(), cell.transpose(0, 1).detach()
    return TensorDict({"hidden": h, "cell": c}, batch_size=[h.shape[0]])


class DataParallelNet(nn.Module):
    """``nn.DataParallel`` over ``net``; inputs are turned into tensors on ``net``'s device.

    :param net: the network to replicate across GPUs.

    Tianshou's moves inputs to CUDA unconditionally; this one moves them to the device of
    ``net``'s parameters, so it also runs on a CPU.

    >>> DataParallelNet(nn.Linear(2, 1))(np.zeros((3, 2))).shape
    torch.Size([3, 1])
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = nn.DataParallel(net)

    def forward(self, obs: Any, *args: Any, **kwargs: Any) -> Any:
        """``net(obs, *args, **kwargs)`` with ``obs`` as a float tensor on its device."""
        return self.net(as_input(obs, self.net), *args, **kwargs)


class ActionReprNetDataParallelWrapper(ActionReprNet[Any]):
    """:class:`DataParallelNet` for an :class:`ActionReprNet` (keeps the contract).

    :param net: the network to replicate across GPUs.

    >>> w = ActionReprNetDataParallelWrapper(Net(state_shape=2, action_shape=3))
    >>> w(np.zeros((4, 2)))[0].shape
    torch.Size([4, 3])
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = nn.DataParallel(net)

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[Any, Any]:
        """``net(obs, state=state, info=info)`` with ``obs`` as a tensor on its device."""
        out: tuple[Any, Any] = self.net(as_input(obs, self.net), state=state, info=info)
        return out


class EnsembleLinear(nn.Module):
    """``ensemble_size`` linear layers applied at once: ``[..., B, in] -> [N, B, out]``.

    :param ensemble_size: ``N``, the number of members.
    :param in_feature: input features.
    :param out_feature: output features.
    :param bias: add a bias per member.

    Each member is initialised as ``nn.Linear`` (uniform in ``±1/sqrt(in_feature)``).
    A ``[B, in]`` input is broadcast to every member; an ``[N, B, in]`` input feeds member
    ``j`` its slice ``j``. REDQ's ensemble critic stacks these.

    >>> layer = EnsembleLinear(5, 3, 2)
    >>> layer(torch.zeros(4, 3)).shape, layer.weight.shape
    (torch.Size([5, 4, 2]), torch.Size([5, 3, 2]))
    """

    def __init__(
        self, ensemble_size: int, in_feature: int, out_feature: int, bias: bool = True
    ) -> None:
        super().__init__()
        k = float(np.sqrt(1.0 / in_feature))
        weight = torch.rand(ensemble_size, in_feature, out_feature) * 2 * k - k
        self.weight = nn.Parameter(weight)
        self.bias_weights: nn.Parameter | None = None
        if bias:
            b = torch.rand(ensemble_size, 1, out_feature) * 2 * k - k
            self.bias_weights = nn.Parameter(b)
        self.ensemble_size = ensemble_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W_j + b_j`` for every member ``j``."""
        out = torch.matmul(x, self.weight)
        if self.bias_weights is not None:
            out = out + self.bias_weights
        return out


class BranchingNet(ActionReprNet[Any]):
    """Branching dueling Q-network (arXiv:1711.08946): a shared trunk, a state value and
    one advantage branch per action dimension.

    :param state_shape: observation shape (or size).
    :param num_branches: action dimensions (one branch each).
    :param action_per_branch: discrete values per action dimension.
    :param common_hidden_sizes: widths of the trunk (at least one).
    :param value_hidden_sizes: hidden widths of the value head.
    :param action_hidden_sizes: hidden widths of each branch.
    :param norm_layer: norm layer class after each hidden linear layer.
    :param norm_args: its extra arguments.
    :param activation: activation class of the hidden layers.
    :param act_args: its arguments.

    ``Q_d(s, a) = V(s) + A_d(s, a) - mean_a A_d(s, a)``, shape
    ``[B, num_branches, action_per_branch]``.

    >>> net = BranchingNet(state_shape=3, num_branches=2, action_per_branch=4,
    ...                    common_hidden_sizes=[8], value_hidden_sizes=[4],
    ...                    action_hidden_sizes=[4])
    >>> net(torch.zeros(5, 3))[0].shape
    torch.Size([5, 2, 4])
    """

    def __init__(
        self,
        *,
        state_shape: int | Sequence[int],
        num_branches: int = 0,
        action_per_branch: int = 2,
        common_hidden_sizes: Sequence[int] | None = None,
        value_hidden_sizes: Sequence[int] | None = None,
        action_hidden_sizes: Sequence[int] | None = None,
        norm_layer: ModuleType | None = None,
        norm_args: ArgsType | None = None,
        activation: ModuleType | None = nn.ReLU,
        act_args: ArgsType | None = None,
    ) -> None:
        super().__init__()
        common = list(common_hidden_sizes or [])
        if not common:
            raise ValueError("common_hidden_sizes: expected at least one width, got none")
        layer_kw: dict[str, Any] = {
            "norm_layer": norm_layer,
            "norm_args": norm_args,
            "activation": activation,
            "act_args": act_args,
        }
        self.num_branches = num_branches
        self.action_per_branch = action_per_branch
        self.common = MLP(input_dim=int(np.prod(state_shape)), hidden_sizes=common, **layer_kw)
        self.value = MLP(
            input_dim=common[-1], output_dim=1, hidden_sizes=value_hidden_sizes or [], **layer_kw
        )
        self.branches = nn.ModuleList(
            MLP(
                input_dim=common[-1],
                output_dim=action_per_branch,
                hidden_sizes=action_hidden_sizes or [],
                **layer_kw,
            )
            for _ in range(num_branches)
        )

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, Any]:
        """``(Q [B, num_branches, action_per_branch], state)``."""
        h = self.common(obs)
        value = self.value(h).unsqueeze(1)
        adv = torch.stack([branch(h) for branch in self.branches], dim=1)
        return value + adv - adv.mean(dim=2, keepdim=True), state
