"""Implicit Quantile Networks (arXiv:1806.06923).

IQN learns the whole quantile function ``Z_tau(s, a)`` of the return: the network
(:class:`~tdrl.utils.net_quantile.ImplicitQuantileNetwork`) takes fractions ``tau`` as an
input, and every evaluation draws fresh ones from ``U(0, 1)``. The n-step target, the
target network and its hard update come from
:class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`; per gradient step IQN does::

    tau_j  ~ U(0, 1), j < N               (N = online_sample_size, fresh per sample)
    tau'_k ~ U(0, 1), k < M               (M = target_sample_size)
    a*     = argmax_a mean_j Z_{tau''_j}(s', a)            (online net, N fresh fractions)
    T_k    = sum_{i<n} gamma^i r_{t+i} + gamma^n (1 - term) Z'_{tau'_k}(s', a*)  (target net)
    u_jk   = T_k - Z_{tau_j}(s, a)
    L      = mean_b w_b sum_k mean_j |tau_j - 1{u_jk < 0}| huber(u_jk)
    priorities <- mean_j sum_k huber(u_jk)          (when the buffer is prioritized)

and acts with ``argmax_a mean_j Z_{tau_j}(s, a)`` over ``sample_size`` fresh fractions.
Fractions are drawn with ``torch.rand`` from the policy's ``generator`` (default: torch's
global generator, which ``torch.manual_seed`` seeds), in the order Tianshou draws them:
bootstrap action, target quantiles, then the online quantiles of the loss.

:class:`~tdrl.algorithm.distributional.QuantileQLearningAlgorithm` (imported here too) is
what IQN and FQF share on top of the Q-learning base: targets that are vectors of quantile
values, ``returns [B, M]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.distributional import (
    QuantileQLearningAlgorithm,
    quantile_huber_loss_and_priority,
    take_action,
)
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.qlearning import QLearningPolicy, QLearningPolicyParams, split_mask

__all__ = ["IQN", "IQNPolicy", "QuantileQLearningAlgorithm", "take_action"]


class IQNPolicy(QLearningPolicy):
    """Greedy (epsilon-greedy) policy over the mean of sampled quantiles.

    :param model: an :class:`~tdrl.utils.net_quantile.ImplicitQuantileNetwork` or the
        Tianshou-signature :class:`~tdrl.utils.tianshou_net.discrete.ImplicitQuantileNetwork`
        (any module with ``features(obs) -> [B, D]`` and ``quantiles(features, taus [B, N])
        -> [B, n_actions, N]``); a module with only Tianshou's contract ``forward(obs,
        sample_size) -> ((Z [B, n_actions, N], taus [B, N]), state)`` works too, its
        fractions then drawn by the module from torch's global generator.
    :param action_space: a ``Discrete`` space.
    :param sample_size: fractions per state when acting.
    :param online_sample_size: fractions per sample for the online quantiles of the loss
        (and for picking the bootstrap action).
    :param target_sample_size: fractions per sample for the target quantiles.
    :param generator: the ``torch.Generator`` fractions are drawn from (on the model's
        device); ``None``: torch's global generator.
    ``eps_training`` / ``eps_inference`` (keywords passed on): epsilon-greedy exploration, as
        :class:`~tdrl.algorithm.qlearning.QLearningPolicy`.

    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_quantile import ImplicitQuantileNetwork
    >>> net = ImplicitQuantileNetwork(4, 2, hidden_sizes=(16,), num_cosines=8)
    >>> p = IQNPolicy(model=net, action_space=gym.spaces.Discrete(2), sample_size=5)
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, out["logits"].shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        action_space: gym.Space,
        sample_size: int = 32,
        online_sample_size: int = 8,
        target_sample_size: int = 8,
        generator: torch.Generator | None = None,
        **kwargs: Unpack[QLearningPolicyParams],
    ) -> None:
        require_at_least(
            2,
            sample_size=sample_size,
            online_sample_size=online_sample_size,
            target_sample_size=target_sample_size,
        )
        super().__init__(model=model, action_space=action_space, **kwargs)
        self.sample_size = sample_size
        self.online_sample_size = online_sample_size
        self.target_sample_size = target_sample_size
        self.generator = generator

    def quantiles(
        self, obs: Any, n: int, model: nn.Module | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """``(Z [B, n_actions, n], taus [B, n], mask or None)`` at ``n`` fresh fractions
        under ``model`` (default: the online model)."""
        obs, mask = split_mask(obs)
        net: Any = model if model is not None else self.model
        if not (hasattr(net, "features") and hasattr(net, "quantiles")):
            # Tianshou's contract: the network draws the fractions itself
            (z, taus), _ = net(obs, sample_size=n)
            return z, taus, mask
        features = net.features(obs)
        taus = torch.rand(
            features.shape[0],
            n,
            generator=self.generator,
            dtype=features.dtype,
            device=features.device,
        )
        return net.quantiles(features, taus), taus, mask

    def model_output(
        self, obs: Any, model: nn.Module | None = None, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any, Any]:
        """``(Z [B, n_actions, sample_size], mask, None)``: quantiles for acting."""
        z, _, mask = self.quantiles(obs, self.sample_size, model)
        return z, mask, None

    def q_from_output(self, out: torch.Tensor) -> torch.Tensor:
        """``Q(s, a) = mean_j Z_{tau_j}(s, a)``."""
        return out.mean(-1)


class IQN(QuantileQLearningAlgorithm):
    """Implicit Quantile Network: quantile regression at sampled fractions.

    :param policy: an :class:`IQNPolicy` (it holds the three sample sizes).
    :param is_double: pick the bootstrap action with the online net (as Tianshou's IQN
        does whenever there is a target net); ``False``: with the target net's own means.

    The other parameters are :class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`'s.

    >>> from tdrl.utils.net_quantile import ImplicitQuantileNetwork
    >>> from tdrl.algorithm.policy import make_batch
    >>> net = ImplicitQuantileNetwork(3, 2, hidden_sizes=(8,), num_cosines=4)
    >>> alg = IQN(policy=IQNPolicy(model=net, action_space=gym.spaces.Discrete(2)),
    ...           target_update_freq=10)
    >>> batch = make_batch({"obs": torch.zeros(5, 3), "act": torch.zeros(5, dtype=torch.long),
    ...                     "returns": torch.ones(5, 8)}, 5)
    >>> sorted(alg(batch).keys())
    ['loss_qvalue']
    """

    policy: IQNPolicy
    policy_class = IQNPolicy

    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``Z'(s', a*) [B, target_sample_size]`` (``online_sample_size`` without a target
        net): the target net's quantiles of the online net's greedy action."""
        p = self.policy
        if self.model_old is None:
            z, _, mask = p.quantiles(obs_next, p.online_sample_size)
            return take_action(z, self._greedy(z, mask))
        if self.is_double:
            z, _, mask = p.quantiles(obs_next, p.online_sample_size)
            act = self._greedy(z, mask)
            z_target, _, _ = p.quantiles(obs_next, p.target_sample_size, self.model_old)
        else:
            z_target, _, mask = p.quantiles(obs_next, p.target_sample_size, self.model_old)
            act = self._greedy(z_target, mask)
        return take_action(z_target, act)

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Quantile Huber loss of ``Z_tau(s, a)`` at ``online_sample_size`` fresh fractions
        against the ``returns`` quantiles; sets ``td_error`` (the priority)."""
        p = self.policy
        z, taus, _ = p.quantiles(self.obs_of(td), p.online_sample_size)
        z_a = take_action(z, self.act_of(td))
        target = self._target_quantiles(td, z_a)
        per, priority = quantile_huber_loss_and_priority(z_a, target, taus)
        td.set("td_error", priority)
        weight = self.weights(td)
        return {"loss_qvalue": weighted_mean(per, weight)}
