"""Optimizers of an algorithm: factories, the gradient step and the loss stages.

:class:`OptimizerFactory` objects create a torch optimizer (and optionally an LR
scheduler) for some parameters; :class:`GradStep` wraps an optimizer with gradient-norm
clipping and a fast path for fused Adam (one direct ``torch._fused_adam_`` call); a
:class:`Stage` is one optimizer phase of an update (its ``loss_*`` terms and the steps
they drive).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.optim.optimizer as _optim_mod
from tensordict import TensorDictBase
from torch import nn
from torch.autograd import graph as _autograd_graph
from torch.overrides import has_torch_function
from typing_extensions import Self

__all__ = [
    "AdamOptimizerFactory",
    "GradStep",
    "LRSchedulerFactory",
    "LRSchedulerFactoryLinear",
    "OptimizerFactory",
    "RMSpropOptimizerFactory",
    "Stage",
    "TorchOptimizerFactory",
    "backward_into",
    "trainable",
]


class OptimizerFactory:
    """Create a torch optimizer (and optionally an LR scheduler) for some parameters.

    :param optim_class: the torch optimizer class.
    :param lr_scheduler: optional ``optimizer -> LRScheduler`` callable.
    :param kwargs: keyword arguments for ``optim_class`` (``lr`` ...).

    >>> f = OptimizerFactory(torch.optim.SGD, lr=0.1)
    >>> opt, sched = f.create([torch.nn.Parameter(torch.zeros(1))])
    >>> type(opt).__name__, sched is None
    ('SGD', True)
    """

    def __init__(
        self,
        optim_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        lr_scheduler: Callable[[torch.optim.Optimizer], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.optim_class = optim_class
        self.kwargs = kwargs
        self.lr_scheduler = lr_scheduler

    def with_lr_scheduler(self, fn: Callable[[torch.optim.Optimizer], Any]) -> OptimizerFactory:
        """Return a copy that also creates the scheduler ``fn(optimizer)``."""
        copy = type(self).__new__(type(self))
        OptimizerFactory.__init__(copy, self.optim_class, fn, **self.kwargs)
        return copy

    def with_lr_scheduler_factory(self, factory: LRSchedulerFactory) -> Self:
        """Tianshou 2.0's way to add a scheduler: ``factory.create_scheduler(optimizer)``
        for every optimizer this creates (sets it on ``self`` and returns ``self``)."""
        self.lr_scheduler = factory.create_scheduler
        return self

    def create(self, params: Iterable[torch.Tensor]) -> tuple[torch.optim.Optimizer, Any]:
        """Return ``(optimizer, lr_scheduler or None)`` for ``params``."""
        opt = self.optim_class(list(params), **self.kwargs)
        return opt, (self.lr_scheduler(opt) if self.lr_scheduler is not None else None)

    def create_instances(self, module: torch.nn.Module) -> tuple[torch.optim.Optimizer, Any]:
        """Tianshou 2.0's name: :meth:`create` for ``module``'s parameters."""
        return self.create(module.parameters())

    @staticmethod
    def coerce(spec: OptimizerFactory | float) -> OptimizerFactory:
        """Accept a factory or a bare learning rate (Adam)."""
        if isinstance(spec, OptimizerFactory):
            return spec
        if isinstance(spec, int | float):
            return AdamOptimizerFactory(lr=float(spec))
        raise TypeError(f"optim: expected an OptimizerFactory or a float lr, got {type(spec)}")


class TorchOptimizerFactory(OptimizerFactory):
    """Any torch optimizer class with its keyword arguments (Tianshou 2.0's name).

    >>> opt, _ = TorchOptimizerFactory(torch.optim.SGD, lr=0.1).create_instances(
    ...     torch.nn.Linear(2, 1))
    >>> type(opt).__name__, opt.defaults["lr"]
    ('SGD', 0.1)
    """

    def __init__(self, optim_class: type[torch.optim.Optimizer], **kwargs: Any) -> None:
        super().__init__(optim_class, **kwargs)


class RMSpropOptimizerFactory(OptimizerFactory):
    """RMSprop with Tianshou 2.0's defaults (``lr=1e-2``, ``alpha=0.99``, ``eps=1e-8``).

    >>> opt, _ = RMSpropOptimizerFactory(lr=7e-4, eps=1e-5).create_instances(
    ...     torch.nn.Linear(2, 1))
    >>> type(opt).__name__, opt.defaults["lr"], opt.defaults["alpha"]
    ('RMSprop', 0.0007, 0.99)
    """

    def __init__(
        self,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
    ) -> None:
        super().__init__(
            torch.optim.RMSprop,
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
        )


class LRSchedulerFactory(ABC):
    """Creates a learning-rate scheduler for an optimizer (Tianshou 2.0's interface)."""

    @abstractmethod
    def create_scheduler(self, optim: torch.optim.Optimizer) -> Any:
        """The scheduler of ``optim``."""


class LRSchedulerFactoryLinear(LRSchedulerFactory):
    """A learning rate decaying linearly to zero over a run's updates: ``max_epochs *
    ceil(epoch_num_steps / collection_step_num_env_steps)`` scheduler steps (one per
    update call, as the on-policy trainers step it), Tianshou 2.0's meaning.

    >>> opt, sched = TorchOptimizerFactory(torch.optim.SGD, lr=1.0).with_lr_scheduler_factory(
    ...     LRSchedulerFactoryLinear(2, 100, 50)).create_instances(torch.nn.Linear(2, 1))
    >>> opt.step(); sched.step(); round(opt.param_groups[0]["lr"], 3)
    0.75
    """

    def __init__(
        self, max_epochs: int, epoch_num_steps: int, collection_step_num_env_steps: int
    ) -> None:
        self.max_update_num = (
            math.ceil(epoch_num_steps / collection_step_num_env_steps) * max_epochs
        )

    def create_scheduler(self, optim: torch.optim.Optimizer) -> Any:
        """A ``LambdaLR`` with factor ``1 - update / max_update_num``."""
        total = self.max_update_num
        return torch.optim.lr_scheduler.LambdaLR(optim, lr_lambda=lambda n: 1.0 - n / total)


class AdamOptimizerFactory(OptimizerFactory):
    """Adam with the given keyword arguments (``lr=1e-3`` by default).

    Unless ``fused`` or ``foreach`` is given, the fused implementation is used where torch
    supports it for the parameters (one kernel for all of them: about a third faster per
    step for small RL networks on CPU), and the default one elsewhere.

    >>> AdamOptimizerFactory(lr=3e-4).kwargs["lr"]
    0.0003
    """

    def __init__(self, lr: float = 1e-3, **kwargs: Any) -> None:
        super().__init__(torch.optim.Adam, lr=lr, **kwargs)

    def create(self, params: Iterable[torch.Tensor]) -> tuple[torch.optim.Optimizer, Any]:
        """Return ``(optimizer, lr_scheduler or None)``, fused where possible."""
        plist = list(params)
        if "fused" not in self.kwargs and "foreach" not in self.kwargs:
            try:
                opt = torch.optim.Adam(plist, fused=True, **self.kwargs)
            except (RuntimeError, ValueError):  # device or dtype without a fused kernel
                pass
            else:
                return opt, (self.lr_scheduler(opt) if self.lr_scheduler is not None else None)
        return super().create(plist)


def trainable(params: list[torch.Tensor]) -> list[torch.Tensor]:
    """The parameters that take gradients now (a frozen layer, ``requires_grad=False``,
    such as a pretrained encoder or Tianshou's ``NoisyLinear`` noise, is left out:
    ``backward(inputs=...)`` refuses a tensor that does not require grad).

    >>> w, frozen = torch.zeros(2, requires_grad=True), torch.zeros(2)
    >>> [p is w for p in trainable([w, frozen])]
    [True]
    """
    return [p for p in params if p.requires_grad]


def backward_into(
    loss: torch.Tensor, inputs: list[torch.Tensor], retain_graph: bool = False
) -> None:
    """``loss.backward(inputs=inputs, retain_graph=retain_graph)`` for a scalar loss.

    A plain float scalar ``loss`` (and plain tensors or parameters as ``inputs``) goes to
    the autograd engine the way ``torch.autograd.backward`` hands it over (the
    ``torch.autograd.graph`` entry point, with its debug-logging hooks and context), with
    the seed gradient ``ones_like(loss)`` made here. That skips ``backward``'s argument
    normalisation and checks, which cost about 50 us per call on a 2-core Xeon, as much as
    the backward pass itself of a 64-row two-layer MLP. Anything else (a tensor subclass,
    a non-scalar loss, a functorch transform) goes through ``loss.backward`` itself.

    >>> w = torch.ones(2, requires_grad=True)
    >>> backward_into((w * 3.0).sum(), [w]); w.grad
    tensor([3., 3.])
    """
    if (
        type(loss) is torch.Tensor
        and loss.numel() == 1
        and loss.dtype.is_floating_point
        and not loss.is_nested
        and not has_torch_function(inputs)
        and not torch._C._are_functorch_transforms_active()
    ):
        seed = torch.ones_like(loss, memory_format=torch.preserve_format)
        _autograd_graph._engine_run_backward(
            (loss,),
            (seed,),
            retain_graph,
            False,
            tuple(inputs),
            allow_unreachable=True,
            accumulate_grad=True,
        )
        return
    loss.backward(inputs=inputs, retain_graph=retain_graph)


@dataclass(eq=False)
class _AdamLists:
    """The argument lists of ``torch._fused_adam_`` for one single-group Adam (internal).

    ``steps[i]`` is the optimizer's own ``state[params[i]]["step"]``, made a view of
    ``flat_steps`` when the lists are built (same values, same ``state_dict``), so a step
    count for every parameter is one ``flat_steps.add_(1)``. Valid while the optimizer
    keeps the ``state`` object, its size and the ``group_params`` list they were built
    from (``load_state_dict`` replaces the state object: the lists are built again).
    """

    state: Any
    n_state: int
    group_params: list[torch.Tensor]
    params: list[torch.Tensor]
    exp_avgs: list[torch.Tensor]
    exp_avg_sqs: list[torch.Tensor]
    steps: list[torch.Tensor]
    flat_steps: torch.Tensor

    def matches(self, opt: torch.optim.Optimizer) -> bool:
        """Whether these lists still describe ``opt`` (same state object and size, same
        parameter list)."""
        params = opt.param_groups[0]["params"]
        return (
            self.state is opt.state
            and self.group_params is params
            and len(params) == len(self.params)
            and len(opt.state) == self.n_state
        )

    @staticmethod
    def build(opt: torch.optim.Optimizer) -> _AdamLists | None:
        """The lists for ``opt``'s one group, or ``None`` while some parameter has no state
        yet (before its first step), or the parameters or counters differ in device or
        dtype."""
        group_params = opt.param_groups[0]["params"]
        params = list(group_params)
        states = [opt.state.get(p) for p in params]
        if not params or not all(states):
            return None
        p0 = params[0]
        if any(p.device != p0.device or p.dtype != p0.dtype for p in params):
            return None
        counters = [st["step"] for st in states]  # type: ignore[index]
        c0 = counters[0]
        if any(c.shape != () or c.device != c0.device or c.dtype != c0.dtype for c in counters):
            return None
        flat = torch.stack([c.detach() for c in counters])
        steps = [flat[i] for i in range(len(counters))]  # single-output views
        for st, view in zip(states, steps, strict=True):
            st["step"] = view  # type: ignore[index]
        return _AdamLists(
            state=opt.state,
            n_state=len(opt.state),
            group_params=group_params,
            params=params,
            exp_avgs=[st["exp_avg"] for st in states],  # type: ignore[index]
            exp_avg_sqs=[st["exp_avg_sq"] for st in states],  # type: ignore[index]
            steps=steps,
            flat_steps=flat,
        )


def _fused_adam(
    group: dict[str, Any],
    params: list[torch.Tensor],
    grads: list[Any],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    steps: list[torch.Tensor],
) -> None:
    """One ``torch._fused_adam_`` call with ``group``'s hyperparameters (steps already
    counted)."""
    beta1, beta2 = group["betas"]
    torch._fused_adam_(
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        [],
        steps,
        amsgrad=False,
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        weight_decay=group["weight_decay"],
        eps=group["eps"],
        maximize=group["maximize"],
        grad_scale=None,
        found_inf=None,
    )


class GradStep:
    """An optimizer with optional gradient-norm clipping: ``step(loss)`` does it all.

    :param optim: the wrapped torch optimizer.
    :param params: the parameters to clip.
    :param max_grad_norm: clip the global L2 norm of the gradients to this (``None``: off).
    """

    def __init__(
        self,
        optim: torch.optim.Optimizer,
        params: list[torch.Tensor],
        max_grad_norm: float | None = None,
    ) -> None:
        self.optim = optim
        self.params = params
        self.max_grad_norm = max_grad_norm
        self._adam_lists: _AdamLists | None = None

    taken: ClassVar[int] = 0
    """Gradient steps taken in this process by every ``GradStep`` (what the conformance
    runner reads to tell a script that trained from one that only ran)."""

    def step(self, loss: torch.Tensor, retain_graph: bool = False) -> None:
        """Zero the gradients, backpropagate ``loss`` into the own parameters only, clip, step.

        Backpropagating only into ``params`` skips the weight gradients of other networks
        the loss passes through (e.g. the critics under SAC's actor loss).
        ``retain_graph`` keeps the graph for another step's backward through it (a
        compiled stage's terms share one graph).
        """
        if type(self.optim).zero_grad is torch.optim.Optimizer.zero_grad:
            # what ``zero_grad(set_to_none=True)`` does, minus its profiler range and
            # dynamo guard (as costly as a fused Adam step for small networks)
            for group in self.optim.param_groups:
                for p in group["params"]:
                    p.grad = None
        else:
            self.optim.zero_grad(set_to_none=True)
        inputs = trainable(self.params)
        if inputs:  # all frozen: nothing to learn, nothing to step
            backward_into(loss, inputs, retain_graph)
        if self.max_grad_norm is not None:
            self._clip()
        if not self._fused_adam_step():
            self.optim.step()
        GradStep.taken += 1

    @torch.no_grad()
    def _fused_adam_step(self) -> bool:
        """``Adam(fused=True).step()`` as one direct call of its kernel, when it applies.

        The same ``torch._fused_adam_`` call on the optimizer's own state (so results and
        ``state_dict`` are identical), minus ``Optimizer.step``'s per-call machinery
        (hooks, profiler ranges, regrouping by device). Applies to a plain fused Adam with
        one parameter group, initialized state (the first step goes the regular way),
        parameters on one device and no step hooks; returns ``False`` otherwise.

        The kernel's argument lists are built once (:class:`_AdamLists`) and reused while
        the optimizer keeps its state object and parameter list; the per-parameter
        ``step`` counters become views of one tensor there, so one ``add_`` counts a step
        for all of them (``torch._foreach_add_`` over ten scalar CPU tensors cost 28 us, a
        fifth of a C51 Adam step).
        """
        opt = self.optim
        if type(opt) is not torch.optim.Adam or len(opt.param_groups) != 1:
            return False
        g = opt.param_groups[0]
        if (
            not g["fused"]
            or g["amsgrad"]
            or g["capturable"]
            or g["differentiable"]
            or g.get("decoupled_weight_decay", False)
            or opt._optimizer_step_pre_hooks
            or opt._optimizer_step_post_hooks
            or _optim_mod._global_optimizer_pre_hooks
            or _optim_mod._global_optimizer_post_hooks
        ):
            return False
        beta1, beta2 = g["betas"]
        lr = g["lr"]
        if not isinstance(beta1, float) or not isinstance(beta2, float):
            return False
        if isinstance(lr, torch.Tensor) and lr.device.type != "cpu":
            return False
        lists = self._adam_lists
        if lists is None or not lists.matches(opt):
            lists = self._adam_lists = _AdamLists.build(opt)
        if lists is None:
            return False
        grads = [p.grad for p in lists.params]
        if any(grad is not None and grad.is_sparse for grad in grads):
            return False  # sparse gradients: Adam's own step raises what it raises
        if all(grad is not None for grad in grads):
            lists.flat_steps.add_(1)
            _fused_adam(g, lists.params, grads, lists.exp_avgs, lists.exp_avg_sqs, lists.steps)
            return True
        # parameters without a gradient this step are skipped, their ``step`` included,
        # as ``Adam`` does
        keep = [i for i, grad in enumerate(grads) if grad is not None]
        if keep:
            steps = [lists.steps[i] for i in keep]
            torch._foreach_add_(steps, 1)
            _fused_adam(
                g,
                [lists.params[i] for i in keep],
                [grads[i] for i in keep],
                [lists.exp_avgs[i] for i in keep],
                [lists.exp_avg_sqs[i] for i in keep],
                steps,
            )
        return True

    @torch.no_grad()
    def _clip(self) -> None:
        """``clip_grad_norm_(params, max_grad_norm, foreach=True)`` with the same arithmetic,
        minus its per-call grouping by device and dtype when all gradients share both."""
        grads = [p.grad for p in self.params if p.grad is not None]
        if not grads:
            return
        g0 = grads[0]
        if any(g.device != g0.device or g.dtype != g0.dtype or g.is_sparse for g in grads):
            nn.utils.clip_grad_norm_(self.params, max_norm=self.max_grad_norm, foreach=True)  # type: ignore[arg-type]
            return
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        coef = torch.clamp(self.max_grad_norm / (total + 1e-6), max=1.0)  # type: ignore[operator]
        torch._foreach_mul_(grads, coef)


@dataclass
class Stage:
    """One optimizer phase of an update: ``losses(td)`` and the optimizers it drives.

    ``losses`` returns a dict of ``loss_*`` terms (and detached statistics); each entry of
    ``steps`` is ``(loss keys, GradStep)``: the sum of those terms is backpropagated into
    that optimizer's parameters and stepped, in order. Stages run one after another, so a
    later stage sees the parameters an earlier one just updated (SAC's actor after its
    critic step).
    """

    losses: Callable[[TensorDictBase], dict[str, torch.Tensor]]
    steps: list[tuple[tuple[str, ...], GradStep]]
    every: int = 1
    """Run on the update calls ``j`` (counted from 0) with ``j % every == phase`` only;
    in between, its last terms are logged again (a delayed actor: TD3, REDQ)."""
    phase: int = 0
    gates_targets: bool = False
    """The soft/hard target updates after the stages happen only when this stage ran."""
    last: list[tuple[str, torch.Tensor]] = field(default_factory=list)
