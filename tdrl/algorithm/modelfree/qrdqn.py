"""Quantile Regression DQN, QR-DQN (arXiv:1710.10044): N quantile values per action.

The network gives, for each action, the values ``theta_i(s, a)`` of the ``N`` quantiles at
the fixed fractions ``tau_i = (2i + 1) / (2N)``; ``Q(s, a) = mean_i theta_i(s, a)`` (the
policy's head hook). The n-step target, the target network and double-Q come from
:class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`, bootstrapped with quantiles
instead of a scalar; per gradient step QR-DQN adds::

    a*  = argmax_a Q(s_{t+n}, a)                 (online net; target net's own with is_double=False)
    T_j = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - term) theta'_j(s_{t+n}, a*)   (target net)
    u_ij = T_j - theta_i(s_t, a_t)
    rho_ij = |tau_i - 1{u_ij < 0}| * Huber_1(u_ij)
    L   = mean_b(w * mean_i sum_j rho_ij)         (w: prioritized-replay importance weight)
    priorities <- mean_i sum_j Huber_1(u_ij)      (when the buffer is prioritized)

(:func:`~tdrl.algorithm.distributional.quantile_huber_loss` and
:func:`~tdrl.algorithm.distributional.quantile_priority`, with Tianshou 2.0.1's reduction.)
A plain TorchRL batch (``loss(td)``) gets the one-step target ``T_j = r + gamma (1 -
terminated) theta'_j(s', a*)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from typing_extensions import Unpack

from tdrl.algorithm.checks import require_at_least, require_instance
from tdrl.algorithm.distributional import (
    bootstrap_atoms,
    make_td0_estimator,
    quantile_huber_loss_and_priority,
    quantile_midpoints,
    taken_atoms,
)
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningParams, QLearningPolicy

__all__ = ["QRDQN", "QRDQNPolicy"]


class QRDQNPolicy(QLearningPolicy):
    """Greedy (epsilon-greedy) policy over ``Q(s, a) = mean_i theta_i(s, a)``.

    :param model: ``obs -> [B, n_actions, N]`` quantile values (e.g.
        :class:`tdrl.utils.net_distributional.DistributionalQNet`).

    The other parameters are :class:`QLearningPolicy`'s.

    >>> from tdrl.algorithm.policy import make_batch
    >>> import gymnasium as gym
    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = QRDQNPolicy(model=DistributionalQNet(4, 2, 8, (8,)),
    ...                 action_space=gym.spaces.Discrete(2))
    >>> p(make_batch({"obs": torch.zeros(3, 4)}, 3))["logits"].shape
    torch.Size([3, 2])
    """

    def q_from_output(self, out: torch.Tensor) -> torch.Tensor:
        """``Q = mean_i theta_i`` ``[B, n_actions]`` from the quantiles ``[B, n_actions, N]``."""
        if out.dim() != 3:
            raise ValueError(
                f"model output: expected [B, n_actions, num_quantiles], got shape "
                f"{tuple(out.shape)}"
            )
        return out.mean(-1)


class QRDQN(QLearningAlgorithm):
    """Quantile regression DQN: quantile Huber loss to the n-step target quantiles.

    :param policy: a :class:`QRDQNPolicy`.
    :param num_quantiles: quantiles per action, ``>= 2``; the model must output as many.

    The other parameters are :class:`QLearningAlgorithm`'s; with ``is_double`` the online
    network picks the bootstrap action (Tianshou's QR-DQN always does), ``False``: the
    target network's own greedy action.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = QRDQNPolicy(model=DistributionalQNet(4, 2, 8, (8,)),
    ...                 action_space=gym.spaces.Discrete(2))
    >>> alg = QRDQN(policy=p, num_quantiles=8, gamma=0.9, n_step=3, target_update_freq=100)
    >>> from tdrl.data.batch import Batch
    >>> td = Batch(obs=torch.zeros(5, 4), act=torch.zeros(5, dtype=torch.long),
    ...            returns=torch.ones(5, 8))
    >>> sorted(alg(td).keys()), td["td_error"].shape
    (['loss_qvalue'], torch.Size([5]))
    """

    policy: QRDQNPolicy
    taus: torch.Tensor

    def __init__(
        self, *, policy: QRDQNPolicy, num_quantiles: int = 200, **kwargs: Unpack[QLearningParams]
    ) -> None:
        require_instance("policy", policy, QRDQNPolicy)
        require_at_least(2, num_quantiles=num_quantiles)
        super().__init__(policy=policy, **kwargs)
        self.num_quantiles = int(num_quantiles)
        self.register_buffer("taus", quantile_midpoints(self.num_quantiles), persistent=False)

    # -- targets ------------------------------------------------------------------------
    def next_quantiles(self, obs_next: Any) -> torch.Tensor:
        """``theta'(s', a*) [B, N]``: the bootstrap quantiles (see
        :func:`~tdrl.algorithm.modelfree.c51.bootstrap_atoms`)."""
        return bootstrap_atoms(self.policy, obs_next, self.model_old, self.is_double)

    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        """The n-step bootstrap of :meth:`preprocess`: quantiles ``[B, N]`` at ``s_{t+n}``,
        so that ``returns`` holds the ``N`` target quantiles."""
        return self.next_quantiles(self._obs_next(buffer, indices))

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """The one-step target quantiles ``returns [B, N]`` for a TorchRL batch."""
        if "returns" in td:
            return td
        obs_next, rew, term = self.transition_of(td)
        est = self._value_estimator
        gamma = float(est.gamma) if est is not None else self.gamma  # type: ignore[arg-type]
        z = self.next_quantiles(obs_next)
        discount = (gamma * (1.0 - term)).to(z.dtype)
        td.set("returns", rew.to(z.dtype)[:, None] + discount[:, None] * z)
        return td

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> None:
        """TD(0) only (``gamma`` may be given): the target is a set of quantiles.

            >>> import gymnasium as gym
            >>> from torchrl.objectives import ValueEstimators
            >>> import gymnasium as gym
        >>> from tdrl.utils.net_distributional import DistributionalQNet
            >>> p = QRDQNPolicy(model=DistributionalQNet(4, 2, 8, (8,)),
            ...                 action_space=gym.spaces.Discrete(2))
            >>> QRDQN(policy=p, num_quantiles=8).make_value_estimator(  # doctest: +ELLIPSIS
            ...     ValueEstimators.TDLambda)
            Traceback (most recent call last):
            ...
            NotImplementedError: value_type: QRDQN supports ['TD0'] (...), got ...TDLambda
        """
        make_td0_estimator(self, value_type, hyperparams)

    # -- loss ---------------------------------------------------------------------------
    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Quantile Huber loss of ``theta(s, a)`` to ``returns``; sets ``td_error`` to the
        priority."""
        n = self.num_quantiles
        pred = taken_atoms(self.policy, self.obs_of(td), self.act_of(td), n, "num_quantiles")
        return {"loss_qvalue": self.quantile_loss(td, pred)}

    def quantile_loss(self, td: TensorDictBase, pred: torch.Tensor) -> torch.Tensor:
        """``mean(w * quantile Huber(pred, returns))`` for the taken action's quantiles
        ``pred [B, N]``; sets ``td_error`` to the priority."""
        target = td["returns"].to(pred.dtype)
        if target.shape != pred.shape:
            raise ValueError(
                f"returns: expected the target quantiles [B, {self.num_quantiles}] "
                f"(shape {tuple(pred.shape)}), got shape {tuple(target.shape)}"
            )
        per, priority = quantile_huber_loss_and_priority(pred, target, self.taus)
        td.set("td_error", priority)
        return weighted_mean(per, self.weights(td), cast=True)
