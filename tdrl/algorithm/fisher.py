"""Fisher-vector products for NPG and TRPO in Gauss-Newton form.

NPG and TRPO invert ``F + damping I`` by conjugate gradients, where ``F`` is the Hessian of
``mean KL(pi_old || pi_theta)`` at ``pi_theta = pi_old``. Write ``z = f_theta(s)`` for the
actor's output (logits, or ``(loc, scale)``) and ``J = dz / dtheta``. At ``pi_theta = pi_old``
the KL's gradient with respect to ``z`` is zero, so its Hessian with respect to ``theta`` is::

    F = J^T H J,        H = d^2 KL / dz^2   (the distribution's Fisher matrix in z)

and :class:`GaussNewtonFisher` computes ``F v`` in three passes:

1. ``J v``: forward-mode through the actor's layers, from the activations recorded in the
   forward pass the loss already makes;
2. ``H (J v)``: ``H`` found once per step by autograd over the KL as a function of ``z``
   alone, as per-sample blocks when the distribution's KL is a sum over samples (``Normal``,
   ``Categorical``), then applied with one batched matmul;
3. ``J^T (H J v)``: one backward pass through the loss's graph.

Tianshou (and :meth:`tdrl.algorithm.modelfree.npg.NPG.fisher_vector_product`) instead
differentiates the KL's gradient: a backward through a backward, which also computes the
terms that the zero gradient cancels. The two agree to float rounding (tested); this one
costs about half (1.2 against 2.2 ms for Pendulum's 64x64 actor on a rollout of 1024).

Forward-mode is written out for the layers of tdrl's own actors: an
:class:`~tdrl.utils.net.MLP` (``DiscreteActor``) of ``Linear``, ``Tanh`` and ``ReLU``
layers, and a :class:`~tdrl.utils.net.GaussianActor` with a state-independent ``log std``
on such a trunk. :meth:`GaussNewtonFisher.for_actor` returns ``None`` for any other actor
(or one with hooks), and NPG then takes the autograd path.

>>> import torch
>>> from torch.distributions import Categorical, kl_divergence
>>> from tdrl.utils.net import DiscreteActor
>>> _ = torch.manual_seed(0)
>>> actor, obs = DiscreteActor(3, 2, (8,)), torch.randn(5, 3)
>>> params = list(actor.parameters())
>>> fisher = GaussNewtonFisher.for_actor(actor)
>>> with fisher.recording():
...     logits = actor(obs)
>>> old = Categorical(logits=logits.detach())
>>> fvp = fisher.product(logits, params, lambda z: Categorical(logits=z),
...                      lambda new: kl_divergence(old, new).mean())
>>> kl_grad = torch.autograd.grad(kl_divergence(old, Categorical(logits=actor(obs))).mean(),
...                               params, create_graph=True)
>>> v = torch.randn(sum(p.numel() for p in params))
>>> flat = torch.cat([g.reshape(-1) for g in kl_grad])
>>> hv = torch.autograd.grad((flat * v).sum(), params)
>>> torch.allclose(fvp(v), torch.cat([h.reshape(-1) for h in hv]), atol=1e-6)
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from tdrl.utils.net import MLP, GaussianActor, has_hooks

__all__ = ["GaussNewtonFisher"]

_SLOPES: dict[type[nn.Module], Callable[[torch.Tensor], torch.Tensor]] = {
    nn.Tanh: lambda y: 1 - y * y,
    nn.ReLU: lambda y: (y > 0).to(y.dtype),
}
"""Each activation's derivative from its output: forward-mode multiplies the tangent by it."""

_SEPARABLE = (Normal, Categorical)
"""Distributions whose KL over a batch is a sum of one term per sample: their Hessian in
``z`` is block-diagonal over the samples, so :meth:`GaussNewtonFisher.product` computes
the blocks once per step and then applies them with one batched matmul."""


def _chain(mlp: nn.Module) -> list[nn.Module] | None:
    """The layers of an :class:`~tdrl.utils.net.MLP` whose forward-mode this module knows."""
    if not isinstance(mlp, MLP) or type(mlp).forward is not MLP.forward:
        return None
    layers = list(mlp.children())
    known = all(type(m) is nn.Linear or type(m) in _SLOPES for m in layers)
    return layers if layers and known and not any(map(has_hooks, [mlp, *layers])) else None


def _as_tuple(z: Any) -> tuple[torch.Tensor, ...]:
    return tuple(z) if isinstance(z, (tuple, list)) else (z,)


class GaussNewtonFisher:
    """``v -> J^T H J v`` for one actor (see the module docstring); build with
    :meth:`for_actor`, run the actor's forward inside :meth:`recording`, then call
    :meth:`product`."""

    def __init__(self, actor: nn.Module, layers: list[nn.Module], gaussian: bool) -> None:
        self.actor, self.layers, self.gaussian = actor, layers, gaussian
        self._seen: dict[nn.Module, torch.Tensor] = {}  # a Linear's input, else a slope

    @classmethod
    def for_actor(cls, actor: nn.Module) -> GaussNewtonFisher | None:
        """The product for ``actor``, or ``None`` when its layers are not ones this module
        differentiates forward (any actor but tdrl's MLP and state-independent Gaussian,
        or one with hooks)."""
        if nn.modules.module._global_forward_hooks or nn.modules.module._global_forward_pre_hooks:
            return None
        if isinstance(actor, MLP):
            layers = _chain(actor)
            return None if layers is None else cls(actor, layers, gaussian=False)
        if type(actor) is not GaussianActor or actor.state_dependent_std:
            return None
        head = actor.loc
        layers = _chain(actor.trunk)
        if layers is None or type(head) is not nn.Linear or has_hooks(head) or has_hooks(actor):
            return None
        return cls(actor, [*layers, head], gaussian=True)

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Record each layer's input (a ``Linear``) or derivative (an activation) during the
        actor's forward inside."""
        self._seen = {}

        def keep(module: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> None:
            slope = _SLOPES.get(type(module))
            self._seen[module] = args[0].detach() if slope is None else slope(out.detach())

        handles = [m.register_forward_hook(keep) for m in self.layers]
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    def _jvp(self, z: tuple[torch.Tensor, ...], tangent: dict[int, torch.Tensor]) -> list[Any]:
        """``J v`` for each output in ``z`` (``None``: zero), ``tangent``: id(param) -> v."""
        t: torch.Tensor | None = None
        for m in self.layers:
            seen = self._seen[m]
            if type(m) is not nn.Linear:
                t = None if t is None else t * seen
                continue
            w, vw, vb = m.weight, tangent.get(id(m.weight)), tangent.get(id(m.bias))
            if vw is not None:  # d(x W^T + b) = x dW^T + db + dx W^T
                t = F.linear(seen, vw, vb) if t is None else F.linear(seen, vw, vb).addmm_(t, w.t())
            elif t is not None:
                t = F.linear(t, w) if vb is None else torch.addmm(vb, t, w.t())
            elif vb is not None:
                t = vb.expand(seen.shape[0], -1)
        if not self.gaussian:
            return [t]
        loc, scale = z
        if t is not None and self.actor.bounded_loc:
            t = t * (1 - loc.detach() ** 2)
        v_log_std = tangent.get(id(self.actor.log_std))
        return [t, None if v_log_std is None else scale.detach() * v_log_std]

    def product(
        self,
        z: Any,
        params: Sequence[torch.Tensor],
        dist_fn: Callable[[Any], Any],
        kl: Callable[[Any], torch.Tensor],
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        """``v -> F v`` (flat, in ``params`` order).

        :param z: the actor's output from the recorded forward (with its graph).
        :param params: the parameters ``v`` ranges over.
        :param dist_fn: actor output -> distribution (the policy's).
        :param kl: distribution -> the mean ``KL(pi_old || it)`` (``pi_old`` at ``z``).
        """
        outs = _as_tuple(z)
        leaves = [o.detach().requires_grad_(True) for o in outs]
        new = dist_fn(tuple(leaves) if isinstance(z, (tuple, list)) else leaves[0])
        grads = torch.autograd.grad(kl(new), leaves, create_graph=True, allow_unused=True)
        # an output the distribution ignores (a fixed scale) has no curvature: zeros
        kl_grad = [torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]
        hessian = _Blocks.of(new, kl_grad, leaves) or _Autograd(kl_grad, leaves)
        sizes = [p.numel() for p in params]
        live = [i for i, o in enumerate(outs) if o.requires_grad]  # not a frozen log std

        def fvp(v: torch.Tensor) -> torch.Tensor:
            tangent = {id(p): s.view_as(p) for p, s in zip(params, torch.split(v, sizes))}
            jv = self._jvp(outs, tangent)
            hjv = hessian([torch.zeros_like(o) if t is None else t for o, t in zip(outs, jv)])
            grads = torch.autograd.grad(
                [outs[i] for i in live],
                params,
                [hjv[i] for i in live],
                retain_graph=True,
                allow_unused=True,
            )
            return torch.cat(
                [
                    torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1)
                    for p, g in zip(params, grads)
                ]
            )

        return fvp


class _Autograd:
    """``H u`` by autograd over the KL's gradient in ``z``, each time."""

    def __init__(self, kl_grad: Sequence[torch.Tensor], leaves: list[torch.Tensor]) -> None:
        self.kl_grad, self.leaves = kl_grad, leaves

    def __call__(self, u: list[torch.Tensor]) -> list[torch.Tensor]:
        inner = torch.stack([(g * t).sum() for g, t in zip(self.kl_grad, u)]).sum()
        if not inner.requires_grad:  # no output has curvature (a KL constant in z)
            return [torch.zeros_like(x) for x in self.leaves]
        h = torch.autograd.grad(inner, self.leaves, retain_graph=True, allow_unused=True)
        return [torch.zeros_like(x) if y is None else y for x, y in zip(self.leaves, h)]


class _Blocks:
    """``H u`` from ``H``'s per-sample blocks ``[N, D, D]``, found once by ``D`` products of
    :class:`_Autograd` with one output coordinate set in every sample."""

    MAX_WIDTH = 12
    """The most outputs per sample ``D`` worth it: NPG and TRPO take about 11 products
    per step, and finding the blocks costs ``D``."""

    def __init__(self, blocks: torch.Tensor, leaves: list[torch.Tensor]) -> None:
        self.blocks, self.leaves = blocks, leaves
        self.widths = [x[0].numel() for x in leaves]

    @classmethod
    def of(
        cls, dist: Distribution, kl_grad: Sequence[torch.Tensor], leaves: list[torch.Tensor]
    ) -> _Blocks | None:
        """The blocks, or ``None`` when the KL may couple samples or ``D`` is too large."""
        base = dist.base_dist if isinstance(dist, Independent) else dist
        n = leaves[0].shape[0] if leaves[0].dim() else 0
        samples = [x.dim() >= 1 and x.shape[0] == n for x in leaves]
        if not isinstance(base, _SEPARABLE) or not all(samples) or not dist.batch_shape:
            return None
        if dist.batch_shape[0] != n or sum(x[0].numel() for x in leaves) > cls.MAX_WIDTH:
            return None
        apply = _Autograd(kl_grad, leaves)
        columns = []
        for k, x in enumerate(leaves):
            for c in range(x[0].numel()):
                unit = [torch.zeros_like(y) for y in leaves]
                unit[k].view(n, -1)[:, c] = 1
                columns.append(torch.cat([y.reshape(n, -1) for y in apply(unit)], dim=1))
        return cls(torch.stack(columns, dim=2), leaves)

    def __call__(self, u: list[torch.Tensor]) -> list[torch.Tensor]:
        n = self.blocks.shape[0]
        flat = torch.cat([t.reshape(n, -1) for t in u], dim=1).unsqueeze(2)
        h = torch.bmm(self.blocks, flat).squeeze(2).split(self.widths, dim=1)
        return [y.reshape(x.shape) for y, x in zip(h, self.leaves)]
