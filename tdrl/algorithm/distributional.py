"""Distributional-RL building blocks: the C51 projection and the quantile Huber loss.

Shared by the distributional Q-learning family:

* C51 and Rainbow (arXiv:1707.06887, arXiv:1710.02298) build their target distribution with
  :func:`categorical_projection` over a fixed support from :func:`categorical_support`;
* QR-DQN (arXiv:1710.10044), IQN (arXiv:1806.06923) and FQF (arXiv:1911.02140) all train their
  quantile values with :func:`quantile_huber_loss` and feed prioritized replay with
  :func:`quantile_priority`. They differ only in the fractions ``taus`` they pass (``pred``: the
  online quantiles of the taken action, ``target``: the n-step target quantiles)::

      # QR-DQN: N fixed fractions shared by all samples; target from the target net, M == N
      quantile_huber_loss(pred[B, N], target[B, N], quantile_midpoints(N))
      # IQN: N fractions drawn per sample for the online net, M drawn for the target net
      quantile_huber_loss(pred[B, N], target[B, M], taus[B, N])
      # FQF: the midpoints of the proposed fractions tau[B, N + 1]; M == N
      quantile_huber_loss(pred[B, N], target[B, N], (tau[:, 1:] + tau[:, :-1]) / 2)

All three use ``kappa = 1`` and the weight ``|tau - 1{u < 0}|`` with ``u = target - pred``, as
Tianshou 2.0.1's ``QRDQN``, ``IQN`` and ``FQF`` do (at ``u == 0`` the Huber term and its gradient
are 0, so ``<`` here and Tianshou's ``<=`` give the same loss and gradient), and the same
reduction (see ``sum_over``).

The family's shared algorithm parts live here too: the atoms of the taken and of the
bootstrap action (:func:`taken_atoms`, :func:`bootstrap_atoms`, used by C51, Rainbow, QR-DQN
and discrete CQL), the TD(0)-only value estimator (:func:`make_td0_estimator`) and the
base of IQN and FQF (:class:`QuantileQLearningAlgorithm`, quantile-valued targets).

>>> z = categorical_support(-1.0, 1.0, 5)
>>> categorical_projection(torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0]]), 0.25, 1.0, z)
tensor([[0.0000, 0.0000, 0.5000, 0.5000, 0.0000]])
"""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningPolicy, mask_q
from tdrl.algorithm.quantile_kernel import fused_quantile_huber

__all__ = [
    "QuantileQLearningAlgorithm",
    "bootstrap_atoms",
    "categorical_projection",
    "categorical_support",
    "check_atoms",
    "make_td0_estimator",
    "quantile_huber_loss",
    "quantile_huber_loss_and_priority",
    "quantile_midpoints",
    "quantile_priority",
    "take_action",
    "taken_atoms",
]

TensorLike = torch.Tensor | float


def categorical_support(
    v_min: float,
    v_max: float,
    num_atoms: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The fixed C51 support: ``num_atoms`` evenly spaced atoms from ``v_min`` to ``v_max``.

    >>> categorical_support(-10.0, 10.0, 5)
    tensor([-10.,  -5.,   0.,   5.,  10.])
    """
    if int(num_atoms) != num_atoms or num_atoms < 2:
        raise ValueError(f"num_atoms must be an int >= 2, got {num_atoms!r}")
    if not v_min < v_max:
        raise ValueError(f"v_min must be < v_max, got v_min={v_min!r} and v_max={v_max!r}")
    return torch.linspace(v_min, v_max, int(num_atoms), device=device, dtype=dtype)


def categorical_projection(
    next_probs: torch.Tensor,
    rewards: TensorLike,
    discount: TensorLike,
    support: torch.Tensor,
) -> torch.Tensor:
    """Project the distribution of ``rewards + discount * Z`` onto the fixed ``support``.

    ``Z`` takes the value ``support[j]`` with probability ``next_probs[..., j]``. Each shifted
    atom ``Tz_j = clamp(r + d * z_j, v_min, v_max)`` splits its mass between the two neighbouring
    atoms of the support in proportion to its distance to them (the C51 projection Φ of
    arXiv:1707.06887, Algorithm 1), so that ``out[..., i] = sum_j p_j * clamp(1 - |Tz_j - z_i| /
    Δz, 0, 1)``. Only the two atoms each ``Tz_j`` can reach are visited, so the work is
    ``O(num_atoms)`` per sample (two scatter-adds) instead of the dense ``O(num_atoms ** 2)``,
    and the two shares of each ``p_j`` add up to 1 exactly.

    :param next_probs: probabilities over the support at the bootstrap state, ``[..., n]``.
    :param rewards: the (n-step, discounted) reward sum ``sum_{k<n} gamma^k r_{t+k}``, shaped
        like ``next_probs.shape[:-1]`` (or broadcastable to it, a float included).
    :param discount: the per-sample discount of the bootstrap, ``gamma^n`` for a chain of ``n``
        steps and ``0`` where the chain ends in a terminal state (then all mass goes to the
        projection of ``rewards``). Same shape rules as ``rewards``.
    :param support: the atoms ``z``, 1-D, evenly spaced and increasing (see
        :func:`categorical_support`); ``v_min = support[0]``, ``v_max = support[-1]``.
    :return: the projected probabilities, ``[..., n]`` in ``next_probs``'s dtype and device;
        each row sums to the row sum of ``next_probs``. Differentiable in ``next_probs``.

    Tianshou's C51 gets the same result from ``returns = rewards + discount * support`` (its
    n-step return with ``support`` as the target "Q"), clamped and projected with the
    ``clamp(1 - |Tz - z| / Δz, 0, 1)`` formula; TorchRL's ``DistributionalDQNLoss`` computes it
    inline with ``discount = gamma ** steps_to_next_obs * (1 - terminated)``.

    >>> z = categorical_support(0.0, 4.0, 5)
    >>> p = torch.tensor([[0.5, 0.5, 0.0, 0.0, 0.0]])
    >>> categorical_projection(p, torch.tensor([1.0]), torch.tensor([0.5]), z)
    tensor([[0.0000, 0.7500, 0.2500, 0.0000, 0.0000]])
    >>> categorical_projection(p, 10.0, 1.0, z)  # all mass clamped at v_max
    tensor([[0., 0., 0., 0., 1.]])
    """
    if support.dim() != 1 or support.numel() < 2:
        raise ValueError(f"support must be 1-D with >= 2 atoms, got shape {tuple(support.shape)}")
    n = support.numel()
    if next_probs.shape[-1:] != (n,):
        raise ValueError(
            f"next_probs must end in the {n} atoms of the support, "
            f"got shape {tuple(next_probs.shape)}"
        )
    dtype, device = next_probs.dtype, next_probs.device
    z = support.to(device=device, dtype=dtype)
    r = torch.as_tensor(rewards, dtype=dtype, device=device)
    d = torch.as_tensor(discount, dtype=dtype, device=device)
    batch = next_probs.shape[:-1]
    # (the common case, both shaped like the batch, skips torch.broadcast_shapes: slow)
    if not (r.shape == batch and d.shape == batch) and _broadcast(r.shape, d.shape, batch) != batch:
        raise ValueError(
            f"rewards {tuple(r.shape)} and discount {tuple(d.shape)} must broadcast to the batch "
            f"shape {tuple(batch)} of next_probs (a trailing dim of 1 must be squeezed first)"
        )
    r, d = r.unsqueeze(-1), d.unsqueeze(-1)
    v_min, v_max = z[0], z[-1]
    # the spacing from float64 endpoints, as when computed from Python floats (MPS has no float64)
    wide = dtype if z.device.type == "mps" else torch.float64
    delta = ((support[-1].to(wide) - support[0].to(wide)) / (n - 1)).to(dtype)
    tz = torch.clamp(r + d * z, v_min, v_max)
    probs = next_probs
    if tz.shape != probs.shape:
        tz, probs = torch.broadcast_tensors(tz, next_probs)
    # each shifted atom falls between atoms lo and hi = lo + 1 (hi = lo at the last atom); the
    # index is clamped as an integer, so NaN inputs stay in range and show as NaN in the output
    lo = ((tz - v_min) / delta).floor().long().clamp_(0, n - 1)
    hi = (lo + 1).clamp_(max=n - 1)
    # share of the mass that goes up to hi, measured from atom lo (1 - it stays at lo): the two
    # shares add up to 1 exactly, and at the last atom both land on it
    up = ((tz - z[lo]) / delta).clamp_(0, 1)
    out = torch.zeros_like(probs)
    out.scatter_add_(-1, lo, probs * (1 - up))
    out.scatter_add_(-1, hi, probs * up)
    return out


def quantile_midpoints(
    n: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The fixed QR-DQN fractions ``tau_i = (2i + 1) / (2n)``, ``i = 0..n-1``.

    They are the midpoints of ``n`` equal slices of ``[0, 1]``, the minimisers of the
    1-Wasserstein projection (arXiv:1710.10044, Lemma 2).

    >>> quantile_midpoints(4)
    tensor([0.1250, 0.3750, 0.6250, 0.8750])
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    i = torch.arange(int(n), device=device, dtype=dtype or torch.get_default_dtype())
    return (2 * i + 1) / (2 * int(n))


def _broadcast(*shapes: tuple[int, ...] | torch.Size) -> tuple[int, ...] | None:
    """The broadcast of ``shapes``, or None where they do not broadcast (numpy's rule, in
    plain Python: ``torch.broadcast_shapes`` costs ~25 µs, a tenth of a small loss).

    >>> _broadcast((5,), (3, 1)), _broadcast((0, 1), (1, 4)), _broadcast((2,), (3,))
    ((3, 5), (0, 4), None)
    """
    out = [1] * max(map(len, shapes), default=0)
    for shape in shapes:
        for i, d in enumerate(shape, len(out) - len(shape)):
            if d != 1:
                if out[i] == 1:
                    out[i] = d
                elif out[i] != d:
                    return None
    return tuple(out)


def _pairwise(pred: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``pred[..., N, 1]`` and ``target[..., 1, M]`` broadcast to ``[..., N, M]``."""
    if pred.dim() < 1 or target.dim() < 1 or pred.shape[:-1] != target.shape[:-1]:
        raise ValueError(
            "pred_quantiles [..., N] and target_quantiles [..., M] need the same batch shape, "
            f"got {tuple(pred.shape)} and {tuple(target.shape)}"
        )
    p, t = torch.broadcast_tensors(pred.unsqueeze(-1), target.detach().unsqueeze(-2))
    return p, t


def _huber(p: torch.Tensor, t: torch.Tensor, kappa: float) -> torch.Tensor:
    if not kappa >= 0:
        raise ValueError(f"kappa must be >= 0, got {kappa!r}")
    return F.smooth_l1_loss(p, t, reduction="none", beta=float(kappa))


def quantile_huber_loss(
    pred_quantiles: torch.Tensor,
    target_quantiles: torch.Tensor,
    taus: torch.Tensor,
    kappa: float = 1.0,
    *,
    sum_over: Literal["target", "pred"] = "target",
) -> torch.Tensor:
    """Quantile Huber loss per sample (arXiv:1710.10044 eq. 10, arXiv:1806.06923 eq. 3).

    With ``u_ij = target_j - pred_i``::

        rho_ij = |taus_i - 1{u_ij < 0}| * L_kappa(u_ij) / kappa
        L_kappa(u) = u^2 / 2 if |u| <= kappa else kappa * (|u| - kappa / 2)

    (``kappa = 0`` gives the plain quantile loss ``|taus_i - 1{u < 0}| * |u|``). ``L / kappa`` is
    ``torch.nn.functional.smooth_l1_loss(beta=kappa)``, what Tianshou uses with ``kappa = 1``.

    :param pred_quantiles: predicted quantile values ``[..., N]`` (the online network's, for the
        taken action). Gradients flow into them.
    :param target_quantiles: target quantile values ``[..., M]``; treated as constants.
    :param taus: the fractions of the predicted quantiles, broadcastable to ``[..., N]``
        (``[N]`` for QR-DQN, ``[B, N]`` for IQN / FQF); treated as constants.
    :param kappa: the Huber threshold, ``>= 0``.
    :param sum_over: ``"target"`` (default): sum over the target quantiles, mean over the
        predicted ones: Tianshou 2.0.1's ``QRDQN``/``IQN``/``FQF`` reduction
        (``.sum(-1).mean(1)`` over ``[B, N, M]``). ``"pred"``: sum over the predicted quantiles,
        mean over the targets, as the papers write it. ``"target"`` gives ``M / N`` times the
        ``"pred"`` value, so they agree whenever ``N == M`` (always for QR-DQN and FQF).
    :return: the loss per sample, shaped ``[...]`` (``[B]`` for a batch), unreduced so that the
        caller can apply prioritized-replay importance weights: ``(loss * weight).mean()``.

    >>> pred = torch.tensor([[0.0, 1.0]], requires_grad=True)
    >>> loss = quantile_huber_loss(pred, torch.tensor([[0.5, 3.0]]), quantile_midpoints(2))
    >>> loss
    tensor([0.9062], grad_fn=<MeanBackward1>)
    """
    p, t = _pairwise(pred_quantiles, target_quantiles)
    if _broadcast(taus.shape, pred_quantiles.shape) != tuple(pred_quantiles.shape):
        raise ValueError(
            f"taus {tuple(taus.shape)} must broadcast to pred_quantiles "
            f"{tuple(pred_quantiles.shape)}"
        )
    huber = _huber(p, t, kappa)
    below = (t - p.detach() < 0).to(huber.dtype)
    weight = (taus.detach().to(huber.dtype).unsqueeze(-1) - below).abs()
    rho = weight * huber
    if sum_over == "target":
        return rho.sum(-1).mean(-1)
    if sum_over == "pred":
        return rho.mean(-1).sum(-1)
    raise ValueError(f"sum_over must be 'target' or 'pred', got {sum_over!r}")


class _QuantileHuber(torch.autograd.Function):
    """:func:`quantile_huber_loss` (``sum_over="target"``) and :func:`quantile_priority` in
    one pass over ``[..., N, M]``, with the gradient in ``pred`` written out.

    Forward: the same operations as the two functions (the same values). Backward:
    ``d loss / d pred_i = sum_j g / N * w_ij * clamp((pred_i - target_j) / kappa, -1, 1)``
    (``sign`` for ``kappa = 0``), what autograd computes through ``smooth_l1_loss``, the
    weight, the sum and the mean, in four tensor operations instead of a graph of seven
    nodes (and without the priority's second Huber pass).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        pred: torch.Tensor,
        target: torch.Tensor,
        taus: torch.Tensor,
        kappa: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        fused = fused_quantile_huber(pred, target, taus, kappa)
        if fused is not None:  # one compiled pass: the values and the gradient at once
            loss, priority, grad = fused
            ctx.save_for_backward(grad)
            ctx.fused = True
            ctx.mark_non_differentiable(priority)
            return loss, priority
        ctx.fused = False
        p, t = pred.unsqueeze(-1), target.unsqueeze(-2)
        pb, tb = torch.broadcast_tensors(p, t)
        huber = F.smooth_l1_loss(pb, tb, reduction="none", beta=kappa)
        # ``t - p < 0`` is ``p > t`` exactly (IEEE subtraction is 0 only for equal values)
        below = (p > t).to(huber.dtype)
        weight = (taus.to(huber.dtype).unsqueeze(-1) - below).abs()
        loss = (weight * huber).sum(-1).mean(-1)
        priority = huber.sum(-1).mean(-1)
        ctx.save_for_backward(pred, target, weight)
        ctx.kappa = kappa
        ctx.mark_non_differentiable(priority)
        return loss, priority

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(  # type: ignore[override]
        ctx: Any, grad_loss: torch.Tensor, grad_priority: Any
    ) -> tuple[torch.Tensor | None, None, None, None]:
        if ctx.fused:
            (grad,) = ctx.saved_tensors
            return grad_loss.unsqueeze(-1) * grad, None, None, None
        pred, target, weight = ctx.saved_tensors
        diff = pred.unsqueeze(-1) - target.unsqueeze(-2)
        kappa = ctx.kappa
        slope = diff.sign() if kappa == 0 else (diff / kappa if kappa != 1 else diff).clamp_(-1, 1)
        g = (grad_loss / pred.shape[-1]).unsqueeze(-1).unsqueeze(-1)
        return (g * weight * slope).sum(-1), None, None, None


def quantile_huber_loss_and_priority(
    pred_quantiles: torch.Tensor,
    target_quantiles: torch.Tensor,
    taus: torch.Tensor,
    kappa: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(quantile_huber_loss(pred, target, taus, kappa), quantile_priority(pred, target,
    kappa))`` computed together: the same values and gradient, in one pass over the
    ``[..., N, M]`` pairs (what QR-DQN, IQN and FQF need every gradient step).

    >>> pred = torch.tensor([[0.0, 1.0]], requires_grad=True)
    >>> loss, prio = quantile_huber_loss_and_priority(
    ...     pred, torch.tensor([[0.5, 3.0]]), quantile_midpoints(2))
    >>> loss.detach(), prio
    (tensor([0.9062]), tensor([2.1250]))
    >>> loss.sum().backward(); pred.grad
    tensor([[-0.1875, -0.3125]])
    """
    _pairwise(pred_quantiles, target_quantiles)  # the shape checks
    if _broadcast(taus.shape, pred_quantiles.shape) != tuple(pred_quantiles.shape):
        raise ValueError(
            f"taus {tuple(taus.shape)} must broadcast to pred_quantiles "
            f"{tuple(pred_quantiles.shape)}"
        )
    if not kappa >= 0:
        raise ValueError(f"kappa must be >= 0, got {kappa!r}")
    loss, priority = _QuantileHuber.apply(
        pred_quantiles, target_quantiles.detach(), taus.detach(), float(kappa)
    )
    return loss, priority


def quantile_priority(
    pred_quantiles: torch.Tensor, target_quantiles: torch.Tensor, kappa: float = 1.0
) -> torch.Tensor:
    """Prioritized-replay priority of quantile methods: ``mean_i sum_j L_kappa(u_ij) / kappa``.

    The unweighted Huber term of :func:`quantile_huber_loss` with its default reduction,
    detached: what Tianshou's ``QRDQN``, ``IQN`` and ``FQF`` write back as the new priority.

    >>> quantile_priority(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 3.0]]))
    tensor([2.1250])
    """
    p, t = _pairwise(pred_quantiles.detach(), target_quantiles)
    return _huber(p, t, kappa).sum(-1).mean(-1)


# -- the distributional Q-learning family's shared parts -------------------------------


def check_atoms(out: torch.Tensor, num_atoms: int, name: str) -> None:
    """Raise ``ValueError`` unless the network output is ``[B, n_actions, num_atoms]``.

    >>> check_atoms(torch.zeros(2, 3, 5), 5, "num_atoms")
    >>> check_atoms(torch.zeros(2, 3), 5, "num_atoms")
    Traceback (most recent call last):
    ...
    ValueError: model output: expected [B, n_actions, num_atoms=5], got shape (2, 3)
    """
    if out.dim() != 3 or out.shape[-1] != num_atoms:
        raise ValueError(
            f"model output: expected [B, n_actions, {name}={num_atoms}], "
            f"got shape {tuple(out.shape)}"
        )


def taken_atoms(
    policy: QLearningPolicy, obs: Any, act: torch.Tensor, num_atoms: int, name: str
) -> torch.Tensor:
    """The online network's atoms ``[B, num_atoms]`` of the stored actions ``act``.

    :param name: the argument that set ``num_atoms``, named by the shape error.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.c51 import C51Policy
    >>> net = torch.nn.Sequential(torch.nn.Linear(1, 6), torch.nn.Unflatten(1, (2, 3)))
    >>> p = C51Policy(model=net, action_space=gym.spaces.Discrete(2), num_atoms=3)
    >>> taken_atoms(p, torch.zeros(4, 1), torch.tensor([0, 1, 1, 0]), 3, "num_atoms").shape
    torch.Size([4, 3])
    """
    out, _, _ = policy.model_output(obs)
    check_atoms(out, num_atoms, name)
    index = act.long().reshape(-1, 1, 1).expand(-1, 1, out.shape[-1])
    return out.gather(1, index).squeeze(1)


def bootstrap_atoms(
    policy: QLearningPolicy, obs_next: Any, target_model: nn.Module | None, is_double: bool
) -> torch.Tensor:
    """The atoms ``[B, K]`` of the bootstrap action at ``obs_next`` (no gradient).

    With a target network, the target network's atoms of the action the online network
    picks (``is_double``, Tianshou's choice) or of the target network's own greedy action;
    without one, the online network's atoms of its greedy action. Greedy over the expected
    Q-values (the policy's head hook) among the legal actions.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.c51 import C51Policy
    >>> net = torch.nn.Sequential(torch.nn.Linear(1, 6), torch.nn.Unflatten(1, (2, 3)))
    >>> p = C51Policy(model=net, action_space=gym.spaces.Discrete(2), num_atoms=3)
    >>> bootstrap_atoms(p, torch.zeros(4, 1), None, True).shape
    torch.Size([4, 3])
    """
    with torch.no_grad():
        if target_model is None:
            out, mask, _ = policy.model_output(obs_next)
            q = policy.q_from_output(out)
        else:
            out, mask, _ = policy.model_output(obs_next, target_model)
            q = policy.q_from_output(policy.model_output(obs_next)[0] if is_double else out)
        if mask is not None:
            q = mask_q(q, mask)
        return take_action(out, q.argmax(dim=-1))


def make_td0_estimator(
    alg: QLearningAlgorithm, value_type: Any, hyperparams: dict[str, Any]
) -> None:
    """``alg.make_value_estimator`` of the distributional algorithms: TD(0) (the only
    estimator of a distribution's one-step target; ``gamma`` may be set), else
    ``NotImplementedError``.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.c51 import C51, C51Policy
    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = C51Policy(model=DistributionalQNet(4, 2, 11, (8,), softmax=True),
    ...               action_space=gym.spaces.Discrete(2), num_atoms=11)
    >>> alg = C51(policy=p)
    >>> make_td0_estimator(alg, None, {"gamma": 0.5})
    >>> float(alg._value_estimator.gamma)
    0.5
    """
    from torchrl.objectives import ValueEstimators

    if value_type not in (None, ValueEstimators.TD0):
        raise NotImplementedError(
            f"value_type: {type(alg).__name__} supports ['TD0'] (a one-step "
            f"distributional target), got {value_type}"
        )
    QLearningAlgorithm.make_value_estimator(alg, value_type, **hyperparams)


def take_action(z: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
    """The quantile values ``[B, N]`` of action ``act [B]`` in ``z [B, n_actions, N]``.

    >>> z = torch.arange(12.0).reshape(2, 3, 2)
    >>> take_action(z, torch.tensor([2, 0])).tolist()
    [[4.0, 5.0], [6.0, 7.0]]
    """
    index = act.long().reshape(-1, 1, 1).expand(-1, 1, z.shape[-1])
    return z.gather(1, index).squeeze(1)


class QuantileQLearningAlgorithm(QLearningAlgorithm):
    """Q-learning with quantile-valued targets (the base of IQN and FQF).

    The bootstrap :meth:`next_value` is a vector of quantile values ``[B, M]``, so the
    n-step ``returns`` are ``[B, M]`` as well (``r + gamma^n (1 - term) Z'``, per
    quantile). A TorchRL batch gets the one-step version per quantile
    (:meth:`Algorithm.one_step_returns`).
    Subclasses define :meth:`next_value` and :meth:`q_losses`.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.iqn import IQN, IQNPolicy
    >>> from tdrl.utils.net_quantile import ImplicitQuantileNetwork
    >>> net = ImplicitQuantileNetwork(1, 2, hidden_sizes=(4,), num_cosines=2)
    >>> alg = IQN(policy=IQNPolicy(model=net, action_space=gym.spaces.Discrete(2)))
    >>> isinstance(alg, QuantileQLearningAlgorithm)
    True
    """

    def _greedy(self, out: Any, mask: Any) -> torch.Tensor:
        """The greedy action ``[B]`` of a network output (masked)."""
        q = self.policy.q_from_output(out)
        return (mask_q(q, mask) if mask is not None else q).argmax(1)

    def _target_quantiles(self, td: TensorDictBase, like: torch.Tensor) -> torch.Tensor:
        """The ``returns [B, M]`` of a batch in the dtype of ``like``."""
        returns: torch.Tensor = td["returns"]
        return returns.reshape(like.shape[0], -1).to(like.dtype)

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> None:
        """TD(0) only (``gamma`` may be given): the target is a vector of quantile values,
        which TorchRL's scalar TD(1)/TD(lambda) estimators do not apply to. Any other
        ``value_type`` raises ``NotImplementedError`` at once and leaves the loss as it was.

        >>> import gymnasium as gym
        >>> from torchrl.objectives import ValueEstimators
        >>> from tdrl.algorithm.modelfree.iqn import IQN, IQNPolicy
        >>> from tdrl.utils.net_quantile import ImplicitQuantileNetwork
        >>> net = ImplicitQuantileNetwork(1, 2, hidden_sizes=(4,), num_cosines=2)
        >>> alg = IQN(policy=IQNPolicy(model=net, action_space=gym.spaces.Discrete(2)))
        >>> alg.make_value_estimator(ValueEstimators.TD1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: value_type: IQN supports ['TD0'] (...), got ValueEstimators.TD1
        >>> alg.make_value_estimator(ValueEstimators.TD0, gamma=0.5)
        >>> float(alg._value_estimator.gamma)
        0.5
        """
        make_td0_estimator(self, value_type, hyperparams)

    def one_step_returns(self, td: TensorDictBase) -> TensorDictBase:
        """A TorchRL batch's ``returns [B, M]``: ``r + gamma (1 - terminated) Z'(s')`` per
        quantile, ``gamma`` the TD(0) estimator's when one was made."""
        est = self._value_estimator
        if "returns" in td or est is None:
            return super().one_step_returns(td)
        obs_next, rew, term = self.transition_of(td)
        with torch.no_grad():
            z = self.next_value(obs_next).to(rew.dtype)
        gamma = float(est.gamma)  # type: ignore[arg-type]
        td.set("returns", rew[:, None] + gamma * (1.0 - term)[:, None] * z)
        return td
