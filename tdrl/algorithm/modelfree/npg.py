"""Natural Policy Gradient (Kakade, NIPS 2001), as in Tianshou's NPG.

The rollout handling (``V(s)``, GAE, return scaling, ``logp_old``, minibatch epochs) is
:class:`~tdrl.algorithm.policy_gradient.OnPolicyAlgorithm`'s; the advantages are normalized
once over the whole rollout. Per minibatch NPG takes one natural-gradient step on the
actor, then ``optim_critic_iters`` optimizer steps on the critic::

    L(theta)  = -mean(log pi_theta(a | s) A)                    (loss_objective)
    g         = grad_theta L
    F v       = (Hessian_theta KL(pi_old || pi_theta)) v + damping v
                                                                (Fisher-vector product)
    d         = -F^-1 g   by cg_iters steps of conjugate gradients   (search direction)
    theta    <- theta + trust_region_size d                     (set as a flat vector)
    repeat optim_critic_iters times:
        L_v = mean((R - V(s))^2);  V <- optimizer step on L_v    (loss_critic)

``KL(pi_old || pi_theta)`` is taken at ``pi_old = pi_theta`` (its value and gradient are
zero there, its Hessian is the Fisher matrix). Tianshou takes ``F v`` as a gradient of a
gradient (``torch.autograd.grad(..., create_graph=True)``); for tdrl's own actors NPG
computes the same product as ``J^T H J v`` (:mod:`tdrl.algorithm.fisher`: one forward-mode
and one backward pass, about half the cost, equal to float rounding).
:class:`~tdrl.algorithm.modelfree.trpo.TRPO`
replaces the fixed step by the largest one within a KL bound and a backtracking line search.

``forward(td)`` (TorchRL) returns ``loss_objective`` and ``loss_critic`` at the current
parameters; :meth:`NPG.actor_step` applies the natural-gradient step to a batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn
from torch.distributions import Distribution, kl_divergence
from typing_extensions import Required, Unpack

from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.fisher import GaussNewtonFisher
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy_gradient import ActorPolicy, OnPolicyAlgorithm, OnPolicyParams
from tdrl.data.batch import Batch

__all__ = ["NPG", "NPGParams", "conjugate_gradients", "flat_grad", "set_flat_params"]


class NPGParams(OnPolicyParams, total=False):
    """:class:`NPG`'s keywords, for a subclass that passes them through unchanged
    (``**kwargs: Unpack[NPGParams]``); see it for their meaning and defaults."""

    policy: Required[ActorPolicy]
    critic: Required[nn.Module]
    optim: OptimizerFactory | float
    optim_critic_iters: int
    trust_region_size: float
    advantage_normalization: bool
    max_batchsize: int
    damping: float
    cg_iters: int
    max_grad_norm: float | None
    gauss_newton: bool


def flat_grad(y: torch.Tensor, params: Sequence[torch.Tensor], **kwargs: Any) -> torch.Tensor:
    """``d y / d params`` as one flat vector (``kwargs`` go to ``torch.autograd.grad``).

    >>> w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    >>> flat_grad((w**2).sum(), [w]).tolist()
    [2.0, 4.0]
    """
    grads = torch.autograd.grad(y, list(params), **kwargs)
    return torch.cat([g.reshape(-1) for g in grads])


@torch.no_grad()
def set_flat_params(params: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Copy the flat vector ``flat`` into ``params`` (in order), in place.

    >>> lin = torch.nn.Linear(2, 1)
    >>> set_flat_params(list(lin.parameters()), torch.tensor([1.0, 2.0, 3.0]))
    >>> lin.weight.tolist(), lin.bias.tolist()
    ([[1.0, 2.0]], [3.0])
    """
    start = 0
    for p in params:
        n = p.numel()
        p.copy_(flat[start : start + n].view_as(p))
        start += n


def _detached(z: Any) -> Any:
    """An actor output (a tensor, or a tuple of them) without its graph."""
    return tuple(t.detach() for t in z) if isinstance(z, (tuple, list)) else z.detach()


def conjugate_gradients(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    n_steps: int = 10,
    residual_tol: float = 1e-10,
) -> torch.Tensor:
    """Solve ``A x = b`` for a symmetric positive-definite ``A`` given as ``v -> A v``.

    At most ``n_steps`` iterations from ``x = 0``; stops once the squared residual norm is
    below ``residual_tol`` (at once for ``b = 0``, which gives ``x = 0``).

    >>> A = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
    >>> x = conjugate_gradients(lambda v: A @ v, torch.tensor([1.0, 2.0]))
    >>> torch.allclose(A @ x, torch.tensor([1.0, 2.0]))
    True
    """
    x = torch.zeros_like(b)
    r = b.clone()  # residual b - A x with x = 0
    p = b.clone()  # search direction
    rr = r.dot(r)
    for _ in range(n_steps):
        if rr < residual_tol:
            break
        ap = matvec(p)
        alpha = rr / p.dot(ap)
        x += alpha * p
        r -= alpha * ap
        rr_new = r.dot(r)
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


class NPG(OnPolicyAlgorithm):
    """Natural policy gradient with a fixed step along ``F^-1 g`` and a separate critic.

    :param policy: an :class:`~tdrl.algorithm.policy_gradient.ActorPolicy`.
    :param critic: ``obs -> V(s)`` (``[B]`` or ``[B, 1]``).
    :param optim: optimizer factory (or Adam learning rate) for the critic only.
    :param optim_critic_iters: critic optimizer steps per minibatch.
    :param trust_region_size: the step size along the natural-gradient direction.
    :param advantage_normalization: normalize the advantages over the whole rollout.
    :param damping: ``F + damping I`` is inverted (numerical stability).
    :param cg_iters: conjugate-gradient iterations for ``F^-1 g``.
    :param max_grad_norm: clip the critic's gradient norm (``None``: off).
    :param gauss_newton: compute ``F v`` as ``J^T H J v``
        (:class:`~tdrl.algorithm.fisher.GaussNewtonFisher`: the same product to float
        rounding, about half the cost) for the actors it knows; ``False``, or any other
        actor: the KL's double backward, as Tianshou.

    ``gamma``, ``gae_lambda``, ``max_batchsize`` and ``return_scaling`` are
    :class:`~tdrl.algorithm.policy_gradient.OnPolicyAlgorithm`'s.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DiscreteActor, VCritic
    >>> policy = ActorPolicy(actor=DiscreteActor(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    >>> npg = NPG(policy=policy, critic=VCritic(4, (8,)))
    >>> td = Batch(obs=torch.randn(6, 4), act=torch.randint(0, 2, (6,)), adv=torch.randn(6),
    ...            returns=torch.randn(6), v_s=torch.zeros(6), logp_old=torch.zeros(6))
    >>> sorted(npg(td).keys())
    ['loss_critic', 'loss_objective']
    >>> sorted(npg.actor_step(td))
    ['kl', 'loss_objective', 'step_size']
    """

    critic: nn.Module

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory | float = 1e-3,
        optim_critic_iters: int = 5,
        trust_region_size: float = 0.5,
        advantage_normalization: bool = True,
        max_batchsize: int = 256,
        damping: float = 0.1,
        cg_iters: int = 10,
        max_grad_norm: float | None = None,
        gauss_newton: bool = True,
        **kwargs: Unpack[OnPolicyParams],
    ) -> None:
        require_at_least(1, optim_critic_iters=optim_critic_iters, cg_iters=cg_iters)
        if not trust_region_size > 0:
            raise ValueError(f"trust_region_size: expected a value > 0, got {trust_region_size}")
        if not damping >= 0:
            raise ValueError(f"damping: expected a value >= 0, got {damping}")
        super().__init__(policy=policy, critic=critic, max_batchsize=max_batchsize, **kwargs)
        self.optim_critic_iters = optim_critic_iters
        self.trust_region_size = trust_region_size
        self.advantage_normalization = advantage_normalization
        self.damping = damping
        self.cg_iters = cg_iters
        self.gauss_newton = gauss_newton
        self.optim = self._create_optimizer(critic, optim, max_grad_norm)
        # forward(td) returns both terms; update() steps the actor by actor_step (no GradStep)
        self._add_stage(self.actor_losses)
        self._add_stage(self.critic_losses, ("loss_critic", self.optim))

    # -- advantages ---------------------------------------------------------------------
    def _normalize_advantages(self, td: TensorDictBase) -> None:
        if self.advantage_normalization and td.shape[0] > 1:
            adv = td["adv"]
            td.set("adv", (adv - adv.mean()) / adv.std())

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """GAE, returns, ``logp_old``; then the advantages normalized over the rollout."""
        batch = super().preprocess(batch, buffer, indices)
        self._normalize_advantages(batch)
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """A TorchRL batch: one-step TD advantages (normalized over the batch); without a
        sampled log-probability, ``logp_old`` is the current policy's (as on tdrl's path)."""
        if "adv" in td:
            return td
        if "logp_old" not in td and self.tensor_keys.sample_log_prob not in td.keys(True):
            with torch.no_grad():
                dist = self.policy.dist(self.obs_of(td))[0]
                td.set("logp_old", self.log_prob(dist, self.act_of(td)))
        td = super().prepare(td)
        self._normalize_advantages(td)
        return td

    # -- loss stages --------------------------------------------------------------------
    def surrogate(self, td: TensorDictBase, dist: Distribution) -> torch.Tensor:
        """NPG's policy loss under ``dist``: ``-mean(log pi(a | s) A)`` (one term per
        action dimension for a per-dimension distribution)."""
        logp = self.log_prob(dist, self.act_of(td))
        n = logp.shape[0]
        return -(logp.reshape(n, -1) * td["adv"].reshape(n, 1)).mean()

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_objective``: the surrogate at the current policy (reaches the actor)."""
        return {"loss_objective": self.surrogate(td, self.policy.dist(self.obs_of(td))[0])}

    def critic_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_critic = mean((R - V(s))^2)`` (reaches the critic)."""
        value = self.critic(self.obs_of(td)).reshape(-1)
        return {"loss_critic": F.mse_loss(td["returns"].to(value.dtype), value)}

    def kl(
        self, td: TensorDictBase, old: Distribution, new: Distribution | None = None
    ) -> torch.Tensor:
        """``mean KL(old || new)``; ``new`` defaults to the current policy on ``td``."""
        if new is None:
            new = self.policy.dist(self.obs_of(td))[0]
        return kl_divergence(old, new).mean()

    # -- the natural-gradient step ------------------------------------------------------
    def fisher_vector_product(
        self, kl_grad: torch.Tensor, v: torch.Tensor, params: Sequence[torch.Tensor]
    ) -> torch.Tensor:
        """``(F + damping I) v``: the KL Hessian times ``v`` from its gradient ``kl_grad``
        (built with ``create_graph=True``)."""
        hv = flat_grad((kl_grad * v).sum(), params, retain_graph=True).detach()
        return hv + self.damping * v

    def actor_step(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """One natural-gradient step of the actor on ``td``; returns the (detached)
        ``loss_objective`` before the step, the ``kl`` of the step and its ``step_size``."""
        td = self.prepare(td)
        params = [p for p in self.policy.actor.parameters() if p.requires_grad]
        fisher = GaussNewtonFisher.for_actor(self.policy.actor) if self.gauss_newton else None
        with fisher.recording() if fisher is not None else contextlib.nullcontext():
            dist, z, _ = self.policy.dist(self.obs_of(td))
        loss = self.surrogate(td, dist)
        grad = flat_grad(loss, params, retain_graph=True)
        # pi_old: the same forward's output, detached (what a no-grad forward computes)
        old = self.policy.dist_fn(_detached(z))
        if fisher is not None:
            product = fisher.product(
                z, params, self.policy.dist_fn, lambda new: self.kl(td, old, new)
            )

            def fvp(v: torch.Tensor) -> torch.Tensor:
                return product(v) + self.damping * v
        else:
            kl_grad = flat_grad(self.kl(td, old, dist), params, create_graph=True)

            def fvp(v: torch.Tensor) -> torch.Tensor:
                return self.fisher_vector_product(kl_grad, v, params)

        direction = -conjugate_gradients(fvp, grad, self.cg_iters)
        with torch.no_grad():
            flat = torch.cat([p.reshape(-1) for p in params])
        stats = self.step_along(td, old, params, flat, direction, fvp, loss.detach())
        return {"loss_objective": loss.detach(), **stats}

    def step_along(
        self,
        td: TensorDictBase,
        old: Distribution,
        params: Sequence[torch.Tensor],
        flat: torch.Tensor,
        direction: torch.Tensor,
        fvp: Callable[[torch.Tensor], torch.Tensor],
        loss: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """Move the actor from ``flat`` along ``direction``: NPG's fixed step
        ``theta + trust_region_size d``; returns ``kl`` and ``step_size``."""
        step = flat.new_tensor(self.trust_region_size)
        set_flat_params(params, flat + step * direction)
        with torch.no_grad():
            kl = self.kl(td, old)
        return {"kl": kl, "step_size": step}

    # -- the update ---------------------------------------------------------------------
    def _run_stages(self, td: TensorDictBase) -> list[tuple[str, torch.Tensor]]:
        """The actor's natural-gradient step, then ``optim_critic_iters`` critic steps."""
        stats = self.actor_step(td)
        for _ in range(self.optim_critic_iters):
            critic = self.critic_losses(td)
            self.optim.step(critic["loss_critic"])
        stats["loss_critic"] = critic["loss_critic"]
        return [(k, v.detach()) for k, v in stats.items()]
