"""Fully parameterized Quantile Function (arXiv:1911.02140).

FQF learns both the quantile values and *where* to put them: a fraction proposal network
(:class:`~tdrl.utils.net_quantile.FractionProposalNetwork`) proposes ``N`` fractions per
state, ``0 = tau_0 < tau_1 < ... < tau_N = 1``, and the quantile function
(:class:`~tdrl.utils.net_quantile.FullQuantileFunction`) is evaluated at their midpoints
``tau^_i = (tau_i + tau_{i+1}) / 2``. On the Q-learning base (n-step target, hard-updated
target net) each gradient step does::

    psi    = psi(s);  tau = P(psi) (proposal on detached features);  tau^ = midpoints
    Q(s,a) = sum_i (tau_{i+1} - tau_i) F^{-1}_{s,a}(tau^_i)               (acting, a*)
    T_k    = sum_{i<n} gamma^i r_{t+i} + gamma^n (1 - term) F'^{-1}_{s',a*}(tau^'_k)
             (tau^' proposed for s' by the online nets, F' the target quantile function)
    u_jk   = T_k - F^{-1}_{s,a}(tau^_j)
    L_Z    = mean_b w_b sum_k mean_j |tau^_j - 1{u_jk < 0}| huber(u_jk)     (quantile step)
    g_i    = dW1/dtau_i = 2 F(tau_i) - F(tau^_{i-1}) - F(tau^_i),  0 < i < N
             (F = F^{-1}_{s,a} at the pre-step weights, no gradient; sign-robust form)
    L_P    = mean_b sum_i g_i tau_i  -  ent_coef * mean_b H(tau)             (fraction step)

The two losses train disjoint parameters (``L_Z`` the quantile function, ``L_P`` the
proposal network) from one forward pass, so they are two stages: :meth:`FQF.q_losses`
(the base's, with the quantile function's optimizer) leaves the detached features and
quantile values the fraction gradient needs in the batch, and :meth:`FQF.fraction_losses`
re-runs only the proposal layer on them with its own optimizer. Each step sees exactly
the pre-step quantities Tianshou's single ``retain_graph`` pass sees.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import torch
from tensordict import TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.checks import require_instance
from tdrl.algorithm.distributional import (
    QuantileQLearningAlgorithm,
    quantile_huber_loss_and_priority,
    take_action,
)
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.qlearning import (
    QLearningParams,
    QLearningPolicy,
    QLearningPolicyParams,
    split_mask,
)
from tdrl.utils.net_quantile import Fractions

__all__ = ["FQF", "FQFOutput", "FQFPolicy", "fraction_gradient"]


class FQFOutput(NamedTuple):
    """One pass of the FQF networks over a batch of states (see :meth:`FQFPolicy.propose`)."""

    quantiles: torch.Tensor
    """``[B, n_actions, N]``: the quantile function at the midpoints ``tau_hats``."""
    fractions: Fractions
    """The proposed (or given) fractions."""
    features: torch.Tensor
    """``[B, D]``: the state features of the quantile function."""
    mask: Any
    """The action mask of the observation, or ``None``."""


def fraction_gradient(z_tau: torch.Tensor, z_hat: torch.Tensor) -> torch.Tensor:
    """``dW1/dtau_i``, ``0 < i < N``, of the quantile values at the proposed fractions.

    ``z_tau [B, N - 1]`` holds ``F^{-1}(tau_i)`` for the inner fractions, ``z_hat [B, N]``
    ``F^{-1}(tau^_i)`` at the midpoints. For a monotone quantile function the gradient is
    ``2 F^{-1}(tau_i) - F^{-1}(tau^_{i-1}) - F^{-1}(tau^_i)`` (arXiv:1911.02140, Prop. 1);
    each of its two differences takes the sign of the step from the neighbouring value
    (``tau^_0`` or ``tau_{i-1}`` below, ``tau_{i+1}`` or ``tau^_{N-1}`` above), which keeps
    it a descent direction while the estimate is not monotone (Tianshou's form).

    >>> fraction_gradient(torch.tensor([[1.0, 2.0]]), torch.tensor([[0.5, 1.5, 2.5]]))
    tensor([[0., 0.]])
    >>> fraction_gradient(torch.tensor([[1.2]]), torch.tensor([[0.0, 2.0]]))
    tensor([[0.4000]])
    """
    below = torch.cat([z_hat[:, :1], z_tau[:, :-1]], dim=1)
    above = torch.cat([z_tau[:, 1:], z_hat[:, -1:]], dim=1)
    to_lower = z_tau - z_hat[:, :-1]
    to_upper = z_tau - z_hat[:, 1:]
    return torch.where(z_tau > below, to_lower, -to_lower) + torch.where(
        z_tau < above, to_upper, -to_upper
    )


class FQFPolicy(QLearningPolicy):
    """Greedy (epsilon-greedy) policy over the fraction-weighted quantile mean.

    :param model: a :class:`~tdrl.utils.net_quantile.FullQuantileFunction` or the
        Tianshou-signature :class:`~tdrl.utils.tianshou_net.discrete.FullQuantileFunction`
        (any module with ``features(obs) -> [B, D]`` and ``quantiles(features, taus [B, N])
        -> [B, n_actions, N]``).
    :param fraction_model: a :class:`~tdrl.utils.net_quantile.FractionProposalNetwork`
        over the model's features (``embedding_dim = model.feature_dim``, Tianshou's
        ``model.input_dim``); one returning a plain ``(taus, tau_hats, entropies)`` tuple,
        as Tianshou's does, works too.
    :param action_space: a ``Discrete`` space.
    ``eps_training`` / ``eps_inference`` (keywords passed on): epsilon-greedy exploration, as
        :class:`~tdrl.algorithm.qlearning.QLearningPolicy`.

    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_quantile import FractionProposalNetwork, FullQuantileFunction
    >>> net = FullQuantileFunction(4, 2, hidden_sizes=(16,), num_cosines=8)
    >>> p = FQFPolicy(model=net, fraction_model=FractionProposalNetwork(6, 16),
    ...               action_space=gym.spaces.Discrete(2))
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, out["logits"].shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        fraction_model: nn.Module,
        action_space: gym.Space,
        **kwargs: Unpack[QLearningPolicyParams],
    ) -> None:
        super().__init__(model=model, action_space=action_space, **kwargs)
        self.fraction_model = fraction_model

    def propose(
        self, obs: Any, model: nn.Module | None = None, fractions: Fractions | None = None
    ) -> FQFOutput:
        """Features, fractions (proposed from the detached features unless given) and the
        quantiles at their midpoints under ``model`` (default: the online model)."""
        obs, mask = split_mask(obs)
        net: Any = model if model is not None else self.model
        features = net.features(obs)
        if fractions is None:
            # Tianshou's proposal network returns a plain (taus, tau_hats, entropies)
            fractions = Fractions(*self.fraction_model(features.detach()))
        return FQFOutput(net.quantiles(features, fractions.tau_hats), fractions, features, mask)

    def model_output(
        self, obs: Any, model: nn.Module | None = None, state: Any = None, info: Any = None
    ) -> tuple[Any, Any, Any]:
        """``((Z [B, n_actions, N], taus [B, N + 1]), mask, None)`` for acting."""
        out = self.propose(obs, model)
        return (out.quantiles, out.fractions.taus), out.mask, None

    def q_from_output(self, out: Any) -> torch.Tensor:
        """``Q(s, a) = sum_i (tau_{i+1} - tau_i) Z_{tau^_i}(s, a)`` from ``(Z, taus)``."""
        z, taus = out
        return ((taus[:, 1:] - taus[:, :-1]).unsqueeze(1) * z).sum(-1)


class FQF(QuantileQLearningAlgorithm):
    """FQF: quantile regression at proposed fractions, and the proposal trained to
    minimize the 1-Wasserstein error of the resulting staircase.

    :param policy: an :class:`FQFPolicy`.
    :param fraction_optim: optimizer factory (or Adam learning rate) of the fraction
        proposal network (default: RMSprop with the paper's ``lr = 2.5e-9``).
    :param ent_coef: weight of the entropy bonus of the proposed fractions (``>= 0``).
    :param num_fractions: the number of fractions (Tianshou's argument; the fraction model
        proposes them, so a value that differs from its ``num_fractions`` is an error).

    The other parameters are :class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`'s:
    ``optim`` is the optimizer factory (or Adam learning rate) of the quantile function;
    ``is_double`` picks the bootstrap action with the online nets (as Tianshou's FQF does
    whenever there is a target net), ``False`` with the target net's own values. The
    terms are ``loss_qvalue`` (``L_Z``), ``loss_fraction`` (the W1 term of ``L_P``) and
    ``loss_entropy`` (``-ent_coef * H``), plus the statistic ``entropy``.

    >>> from tdrl.utils.net_quantile import FractionProposalNetwork, FullQuantileFunction
    >>> from tdrl.algorithm.policy import make_batch
    >>> net = FullQuantileFunction(3, 2, hidden_sizes=(8,), num_cosines=4)
    >>> p = FQFPolicy(model=net, fraction_model=FractionProposalNetwork(4, 8),
    ...               action_space=gym.spaces.Discrete(2))
    >>> alg = FQF(policy=p, ent_coef=0.1, target_update_freq=10)
    >>> batch = make_batch({"obs": torch.zeros(5, 3), "act": torch.zeros(5, dtype=torch.long),
    ...                     "returns": torch.ones(5, 4)}, 5)
    >>> sorted(alg(batch).keys())
    ['entropy', 'loss_entropy', 'loss_fraction', 'loss_qvalue']
    """

    policy: FQFPolicy

    def __init__(
        self,
        *,
        policy: FQFPolicy,
        fraction_optim: OptimizerFactory | float | None = None,
        ent_coef: float = 0.0,
        num_fractions: int | None = None,
        **kwargs: Unpack[QLearningParams],
    ) -> None:
        require_instance("policy", policy, FQFPolicy)
        proposed = getattr(policy.fraction_model, "num_fractions", None)
        if num_fractions is not None and proposed is not None and num_fractions != proposed:
            raise ValueError(
                f"num_fractions: the fraction model proposes {proposed} fractions, "
                f"got num_fractions={num_fractions}"
            )
        if not ent_coef >= 0.0:
            raise ValueError(f"ent_coef: expected a value >= 0, got {ent_coef}")
        super().__init__(policy=policy, **kwargs)
        self.ent_coef = ent_coef
        if fraction_optim is None:
            fraction_optim = OptimizerFactory(torch.optim.RMSprop, lr=2.5e-9)
        self.fraction_optim = self._create_optimizer(policy.fraction_model, fraction_optim)
        self._add_stage(
            self.fraction_losses, (("loss_fraction", "loss_entropy"), self.fraction_optim)
        )

    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``F'^{-1}_{s',a*} [B, N]`` at the fractions the online nets propose for ``s'``
        (the online quantiles without a target net)."""
        p = self.policy
        out = p.propose(obs_next)
        if self.model_old is None:
            z = out.quantiles
            act = self._greedy((z, out.fractions.taus), out.mask)
        else:
            z = p.propose(obs_next, self.model_old, out.fractions).quantiles
            chooser = out.quantiles if self.is_double else z
            act = self._greedy((chooser, out.fractions.taus), out.mask)
        return take_action(z, act)

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``L_Z``: the quantile Huber loss at the proposed midpoints; sets ``td_error`` and
        the inputs of :meth:`fraction_losses` (detached, pre-step)."""
        out = self.policy.propose(self.obs_of(td))
        act = self.act_of(td)
        z_hat = take_action(out.quantiles, act)
        target = self._target_quantiles(td, z_hat)
        per, priority = quantile_huber_loss_and_priority(z_hat, target, out.fractions.tau_hats)
        td.set("td_error", priority)
        model: Any = self.policy.model
        with torch.no_grad():
            z_tau = take_action(model.quantiles(out.features, out.fractions.taus[:, 1:-1]), act)
        td.set("fraction_features", out.features.detach())
        td.set("quantiles_hat", z_hat.detach())
        td.set("quantiles_tau", z_tau)
        weight = self.weights(td)
        return {"loss_qvalue": weighted_mean(per, weight)}

    def fraction_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``L_P``: the W1 fraction loss and the entropy bonus, from the features and
        quantile values :meth:`q_losses` left in ``td``."""
        features = self._get(td, "fraction_features", "fraction features (set by q_losses)")
        fractions = Fractions(*self.policy.fraction_model(features))
        grad = fraction_gradient(td["quantiles_tau"], td["quantiles_hat"])
        entropy = fractions.entropies.mean()
        return {
            "loss_fraction": (grad * fractions.taus[:, 1:-1]).sum(1).mean(),
            "loss_entropy": -self.ent_coef * entropy,
            "entropy": entropy.detach(),
        }
