"""Tianshou 2.0's ``tianshou.utils.net.discrete`` networks, with its keyword signatures.

Actors and critics put a head (an :class:`~tdrl.utils.tianshou_net.common.MLP` named
``last``) on a preprocessing network (``preprocess``, usually a
:class:`~tdrl.utils.tianshou_net.common.Net`), as Tianshou's do; parameter names match
Tianshou's, so its state dicts load.

The quantile networks of IQN and FQF also expose tdrl's split interface,
``features(obs) -> [B, D]`` and ``quantiles(features, taus) -> [B, n_actions, N]``, which
tdrl's :class:`~tdrl.algorithm.modelfree.iqn.IQNPolicy` and
:class:`~tdrl.algorithm.modelfree.fqf.FQFPolicy` use (the policy draws or proposes the
fractions); ``forward`` keeps Tianshou's contract.

>>> from tdrl.utils.tianshou_net.common import Net
>>> feat = Net(state_shape=4, action_shape=16, hidden_sizes=[16])
>>> iqn = ImplicitQuantileNetwork(preprocess_net=feat, action_shape=2, num_cosines=8)
>>> (z, taus), hidden = iqn(torch.zeros(3, 4), sample_size=5)
>>> z.shape, taus.shape
(torch.Size([3, 2, 5]), torch.Size([3, 5]))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tdrl.utils.net import curiosity_terms
from tdrl.utils.net_quantile import CosineEmbeddingNetwork, FractionProposalNetwork, Fractions
from tdrl.utils.tianshou_net.common import (
    MLP,
    AbstractDiscreteActor,
    ModuleWithVectorOutput,
    TActionShape,
    as_input,
    call_preprocess,
    head_mlp,
    output_dim_of,
)

__all__ = [
    "CosineEmbeddingNetwork",
    "DiscreteActor",
    "DiscreteCritic",
    "FractionProposalNetwork",
    "Fractions",
    "FullQuantileFunction",
    "ImplicitQuantileNetwork",
    "IntrinsicCuriosityModule",
    "NoisyLinear",
    "dist_fn_categorical_from_logits",
]


def dist_fn_categorical_from_logits(logits: torch.Tensor) -> torch.distributions.Categorical:
    """A categorical distribution over ``logits`` (the usual ``dist_fn`` of a logits actor).

    >>> dist_fn_categorical_from_logits(torch.zeros(2, 4)).probs[0].tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    return torch.distributions.Categorical(logits=logits)


class DiscreteActor(AbstractDiscreteActor[Any]):
    """``obs -> preprocess -> MLP``: one value per action.

    :param preprocess_net: the preprocessing network (its ``get_output_dim()`` or
        ``output_dim`` is the head's input width), typically a ``Net``.
    :param action_shape: number of actions (or the action shape).
    :param hidden_sizes: hidden widths of the head ``last`` (default: one linear layer).
    :param softmax_output: softmax the output (probabilities, for ``dist_fn=Categorical``);
        ``False``: logits (or Q-values).

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[8]),
    ...                       action_shape=3, hidden_sizes=[8])
    >>> probs, state = actor(torch.zeros(2, 4))
    >>> probs.shape, torch.allclose(probs.sum(-1), torch.ones(2)), state
    (torch.Size([2, 3]), True, None)
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        softmax_output: bool = True,
    ) -> None:
        super().__init__(int(np.prod(action_shape)))
        self.preprocess = preprocess_net
        self.last = head_mlp(preprocess_net, self.output_dim, hidden_sizes=hidden_sizes)
        self.softmax_output = softmax_output

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, Any]:
        """``(values [B, n_actions], hidden state of the preprocessing net)``."""
        h, hidden = call_preprocess(self.preprocess, obs, state)
        out = self.last(h)
        if self.softmax_output:
            out = F.softmax(out, dim=-1)
        return out, hidden


class DiscreteCritic(ModuleWithVectorOutput):
    """``obs -> preprocess -> MLP``: ``V(s)`` (``last_size=1``) or ``Q(s, .)``.

    :param preprocess_net: the preprocessing network, typically a ``Net``.
    :param hidden_sizes: hidden widths of the head ``last``.
    :param last_size: output width (``n_actions`` for a Q critic).

    ``forward`` returns the tensor alone (not a pair), as Tianshou's.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[8]))(
    ...     torch.zeros(2, 4)).shape
    torch.Size([2, 1])
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        hidden_sizes: Sequence[int] = (),
        last_size: int = 1,
    ) -> None:
        super().__init__(output_dim=last_size)
        self.preprocess = preprocess_net
        self.last = head_mlp(preprocess_net, last_size, hidden_sizes=hidden_sizes)

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> torch.Tensor:
        """The critic's values ``[B, last_size]``."""
        h, _ = call_preprocess(self.preprocess, obs, state)
        out: torch.Tensor = self.last(h)
        return out


class ImplicitQuantileNetwork(DiscreteCritic):
    """IQN's quantile network ``Z_tau(s, .) = last(psi(s) * phi(tau))`` (arXiv:1806.06923).

    :param preprocess_net: ``psi``, the state features (width ``input_dim``).
    :param action_shape: number of actions.
    :param hidden_sizes: hidden widths of the head ``last``.
    :param num_cosines: cosine features of the fraction embedding ``embed_model``.

    ``forward(obs, sample_size)`` draws ``sample_size`` fractions per state from torch's
    global generator and returns ``((Z [B, n_actions, N], taus [B, N]), hidden)``.
    :meth:`features` and :meth:`quantiles` are its two halves (the fractions given), which
    tdrl's IQN policy calls with fractions from its own generator.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> net = ImplicitQuantileNetwork(preprocess_net=Net(state_shape=4, action_shape=8),
    ...                               action_shape=3, num_cosines=4)
    >>> feats = net.features(torch.zeros(2, 4))
    >>> feats.shape, net.quantiles(feats, torch.rand(2, 6)).shape, net.input_dim
    (torch.Size([2, 8]), torch.Size([2, 3, 6]), 8)
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        num_cosines: int = 64,
    ) -> None:
        super().__init__(
            preprocess_net=preprocess_net,
            hidden_sizes=hidden_sizes,
            last_size=int(np.prod(action_shape)),
        )
        self.input_dim = output_dim_of(preprocess_net)
        self.embed_model = CosineEmbeddingNetwork(num_cosines, self.input_dim)

    @property
    def feature_dim(self) -> int:
        """Width ``D`` of the state features (``input_dim``; tdrl's name)."""
        return self.input_dim

    def features(self, obs: Any, state: Any = None) -> torch.Tensor:
        """State features ``psi(s) [B, D]``."""
        return call_preprocess(self.preprocess, obs, state)[0]

    def quantiles(self, features: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Quantile values ``[B, n_actions, N]`` at fractions ``taus [B, N]``."""
        b, n = taus.shape
        mixed = (features.unsqueeze(1) * self.embed_model(taus)).reshape(b * n, -1)
        out: torch.Tensor = self.last(mixed).reshape(b, n, -1).transpose(1, 2)
        return out

    def forward(  # type: ignore[override]
        self, obs: Any, sample_size: int, **kwargs: Any
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        """``((Z [B, n_actions, sample_size], taus), hidden)`` at fresh uniform fractions."""
        h, hidden = call_preprocess(self.preprocess, obs, kwargs.get("state"))
        taus = torch.rand(h.shape[0], sample_size, dtype=h.dtype, device=h.device)
        return (self.quantiles(h, taus), taus), hidden


class FullQuantileFunction(ImplicitQuantileNetwork):
    """FQF's quantile function: IQN's network evaluated at proposed fractions
    (arXiv:1911.02140).

    Same parameters as :class:`ImplicitQuantileNetwork`. ``forward(obs, propose_model,
    fractions=None)`` returns ``((quantiles [B, A, N], fractions, quantiles_tau), hidden)``:
    ``fractions`` (:class:`~tdrl.utils.net_quantile.Fractions`: ``taus``, ``tau_hats``,
    ``entropies``) proposed by ``propose_model`` from the detached features unless given,
    ``quantiles`` at ``tau_hats`` and, in training mode, ``quantiles_tau`` at the inner
    ``taus`` (no gradient; ``None`` in eval mode). tdrl's FQF policy uses
    :meth:`features` / :meth:`quantiles` instead.

    >>> from tdrl.utils.tianshou_net.common import Net
    >>> net = FullQuantileFunction(preprocess_net=Net(state_shape=4, action_shape=8),
    ...                            action_shape=2, hidden_sizes=[8], num_cosines=4)
    >>> (z, fr, z_tau), _ = net(torch.zeros(3, 4), FractionProposalNetwork(5, net.input_dim))
    >>> z.shape, fr.taus.shape, z_tau.shape
    (torch.Size([3, 2, 5]), torch.Size([3, 6]), torch.Size([3, 2, 4]))
    """

    def forward(  # type: ignore[override]
        self, obs: Any, propose_model: nn.Module, fractions: Any = None, **kwargs: Any
    ) -> tuple[tuple[torch.Tensor, Any, torch.Tensor | None], Any]:
        """``((quantiles, fractions, quantiles_tau), hidden)`` (see the class docstring)."""
        h, hidden = call_preprocess(self.preprocess, obs, kwargs.get("state"))
        if fractions is None:
            fractions = Fractions(*propose_model(h.detach()))
        z = self.quantiles(h, fractions.tau_hats)
        z_tau = None
        if self.training:
            with torch.no_grad():
                z_tau = self.quantiles(h, fractions.taus[:, 1:-1])
        return (z, fractions, z_tau), hidden


class NoisyLinear(nn.Module):
    """Linear layer with factorised Gaussian weight noise (NoisyNet, arXiv:1706.10295),
    with Tianshou's parameter names.

    :param in_features: input features ``p``.
    :param out_features: output features ``q``.
    :param noisy_std: ``sigma_0``: the noise scales start at ``sigma_0 / sqrt(p)``.

    In training mode ``W = mu_W + sigma_W * outer(eps_q, eps_p)``, ``b = mu_bias +
    sigma_bias * eps_q``; in eval mode the means alone. The noise ``eps_p`` / ``eps_q``
    (``f(x) = sign(x) sqrt(|x|)`` of standard normals) is drawn at construction and by
    :meth:`sample` (alias :meth:`reset_noise`, which tdrl's Rainbow calls before every
    gradient step), from torch's global generator.

    Tianshou keeps ``eps_p`` / ``eps_q`` as frozen parameters; here they are buffers
    (the same state-dict keys, so state dicts load either way; an optimizer never sees
    them). For tdrl's own layer see :class:`tdrl.utils.noisy.NoisyLinear`.

    >>> _ = torch.manual_seed(0)
    >>> layer = NoisyLinear(3, 2)
    >>> x = torch.ones(1, 3)
    >>> noisy = layer(x); layer.sample()
    >>> torch.equal(noisy, layer(x))
    False
    >>> _ = layer.eval()
    >>> torch.equal(layer(x), x @ layer.mu_W.T + layer.mu_bias)
    True
    """

    eps_p: torch.Tensor
    eps_q: torch.Tensor

    def __init__(self, in_features: int, out_features: int, noisy_std: float = 0.5) -> None:
        super().__init__()
        self.mu_W = nn.Parameter(torch.empty(out_features, in_features))
        self.sigma_W = nn.Parameter(torch.empty(out_features, in_features))
        self.mu_bias = nn.Parameter(torch.empty(out_features))
        self.sigma_bias = nn.Parameter(torch.empty(out_features))
        self.register_buffer("eps_p", torch.empty(in_features))
        self.register_buffer("eps_q", torch.empty(out_features))
        self.in_features = in_features
        self.out_features = out_features
        self.sigma = noisy_std
        self.reset()
        self.sample()

    @torch.no_grad()
    def reset(self) -> None:
        """Initialise: means uniform in ``±1/sqrt(p)``, scales ``sigma_0 / sqrt(p)``."""
        bound = 1.0 / float(np.sqrt(self.in_features))
        self.mu_W.uniform_(-bound, bound)
        self.mu_bias.uniform_(-bound, bound)
        self.sigma_W.fill_(self.sigma * bound)
        self.sigma_bias.fill_(self.sigma * bound)

    def f(self, x: torch.Tensor) -> torch.Tensor:
        """``sign(e) sqrt(|e|)`` for fresh standard normals ``e`` of ``x``'s length."""
        e = torch.randn(x.size(0), device=x.device).to(x.dtype)
        return e.sign().mul_(e.abs().sqrt_())

    @torch.no_grad()
    def sample(self) -> None:
        """Draw new noise (``eps_p`` first, then ``eps_q``)."""
        self.eps_p.copy_(self.f(self.eps_p))
        self.eps_q.copy_(self.f(self.eps_q))

    def reset_noise(self) -> None:
        """Alias of :meth:`sample` (the name :func:`tdrl.utils.noisy.resample_noise` calls)."""
        self.sample()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W.T + b`` with the noisy (training) or mean (eval) weights."""
        if self.training:
            weight = self.mu_W + self.sigma_W * torch.outer(self.eps_q, self.eps_p)
            bias = self.mu_bias + self.sigma_bias * self.eps_q
        else:
            weight, bias = self.mu_W, self.mu_bias
        return F.linear(x, weight, bias)


class IntrinsicCuriosityModule(nn.Module):
    """ICM's networks (arXiv:1705.05363): features ``phi``, forward model, inverse model.

    :param feature_net: ``obs -> [B, feature_dim]`` (a module returning ``(features,
        state)`` works too).
    :param feature_dim: width of the features.
    :param action_dim: number of discrete actions.
    :param hidden_sizes: hidden widths of the forward and inverse models.

    ``forward(s1, act, s2)`` returns ``(e [B], act_hat [B, action_dim])``: the forward
    model's error ``e = 1/2 ||f([phi(s1), onehot(a)]) - phi(s2)||^2`` and the inverse
    model's logits ``g([phi(s1), phi(s2)])``; tdrl's :class:`~tdrl.algorithm.ICM` wrapper
    takes it as its ``model``.

    >>> icm = IntrinsicCuriosityModule(feature_net=MLP(input_dim=4, output_dim=8),
    ...                                feature_dim=8, action_dim=2, hidden_sizes=[16])
    >>> err, logits = icm(np.zeros((3, 4)), np.array([0, 1, 1]), np.ones((3, 4)))
    >>> err.shape, logits.shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        feature_net: nn.Module,
        feature_dim: int,
        action_dim: int,
        hidden_sizes: Sequence[int] = (),
    ) -> None:
        super().__init__()
        self.feature_net = feature_net
        self.forward_model = MLP(
            input_dim=feature_dim + action_dim, output_dim=feature_dim, hidden_sizes=hidden_sizes
        )
        self.inverse_model = MLP(
            input_dim=feature_dim * 2, output_dim=action_dim, hidden_sizes=hidden_sizes
        )
        self.feature_dim = feature_dim
        self.action_dim = action_dim

    def _phi(self, s: Any) -> torch.Tensor:
        out = self.feature_net(as_input(s, self))
        return out[0] if isinstance(out, tuple) else out  # type: ignore[no-any-return]

    def forward(
        self, s1: Any, act: Any, s2: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(forward-model error [B], inverse-model logits [B, action_dim])``."""
        phi1, phi2 = self._phi(s1), self._phi(s2)
        return curiosity_terms(
            phi1, phi2, act, self.action_dim, self.forward_model, self.inverse_model
        )
