"""Discrete conservative Q-learning, CQL(H) on QR-DQN (arXiv:2006.04779).

Offline Q-learning overestimates actions the data never tried; CQL pushes every action's
Q-value down (a soft maximum, ``logsumexp``) and the data's actions up. As in Tianshou's
DiscreteCQL the Q function is QR-DQN's (``Q(s, a) = mean_i theta_i(s, a)``, N quantiles
per action) with its n-step target quantiles, target network and double-Q bootstrap
(:class:`~tdrl.algorithm.modelfree.qrdqn.QRDQN`); a gradient step adds one term::

    T_j     = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - term) theta'_j(s_{t+n}, a*)
    u_ij    = T_j - theta_i(s_t, a_t)
    L_QR    = mean_b(w * mean_i sum_j |tau_i - 1{u_ij < 0}| Huber_1(u_ij))
    L_CQL   = min_q_weight * mean_b(logsumexp_a Q(s_t, a) - Q(s_t, a_t))
    one optimizer step on L_QR + L_CQL;  priorities <- mean_i sum_j Huber_1(u_ij)
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from typing_extensions import Unpack

from tdrl.algorithm.distributional import check_atoms
from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tdrl.algorithm.qlearning import QLearningParams, mask_q

__all__ = ["DiscreteCQL", "DiscreteCQLPolicy"]

DiscreteCQLPolicy = QRDQNPolicy
"""Discrete CQL acts as QR-DQN does: greedy over the quantile means."""


class DiscreteCQL(QRDQN):
    """QR-DQN with the conservative (CQL(H)) regularizer, for offline data.

    :param policy: a :class:`~tdrl.algorithm.modelfree.qrdqn.QRDQNPolicy`.
    :param min_q_weight: weight of the CQL term, ``>= 0`` (``0``: plain QR-DQN).

    The other parameters are :class:`~tdrl.algorithm.modelfree.qrdqn.QRDQN`'s (Tianshou's
    defaults: no target network, 200 quantiles).

    >>> import gymnasium as gym
    >>> from tdrl.data.batch import Batch
    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = QRDQNPolicy(model=DistributionalQNet(4, 2, 8, (8,)),
    ...                 action_space=gym.spaces.Discrete(2))
    >>> alg = DiscreteCQL(policy=p, num_quantiles=8, min_q_weight=5.0)
    >>> td = Batch(obs=torch.zeros(5, 4), act=torch.zeros(5, dtype=torch.long),
    ...            returns=torch.ones(5, 8))
    >>> sorted(alg(td).keys())
    ['loss_cql', 'loss_qvalue']
    """

    def __init__(
        self,
        *,
        policy: QRDQNPolicy,
        min_q_weight: float = 10.0,
        num_quantiles: int = 200,
        **kwargs: Unpack[QLearningParams],
    ) -> None:
        if not min_q_weight >= 0:
            raise ValueError(f"min_q_weight: expected a value >= 0, got {min_q_weight}")
        super().__init__(policy=policy, num_quantiles=num_quantiles, **kwargs)
        self.min_q_weight = float(min_q_weight)
        # both terms drive the one optimizer (the base registered loss_qvalue alone)
        self._stages.clear()
        self._add_stage(self.q_losses, (("loss_qvalue", "loss_cql"), self.optim))

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """QR-DQN's quantile Huber loss and the weighted CQL term, from one network pass;
        sets ``td_error`` to the priority."""
        n = self.num_quantiles
        out, mask, _ = self.policy.model_output(self.obs_of(td))
        check_atoms(out, n, "num_quantiles")
        act = self.act_of(td).long().reshape(-1, 1)
        pred = out.gather(1, act.unsqueeze(-1).expand(-1, 1, n)).squeeze(1)
        loss = self.quantile_loss(td, pred)
        q = self.policy.q_from_output(out)
        if mask is not None:  # illegal actions barely count in the soft maximum
            q = mask_q(q, mask)
        gap = q.logsumexp(1) - q.gather(1, act).squeeze(1)
        return {
            "loss_qvalue": loss,
            "loss_cql": self.min_q_weight * gap.mean(),
        }
