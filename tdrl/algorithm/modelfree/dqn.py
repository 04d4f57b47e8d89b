"""Deep Q-Network (arXiv:1312.5602) with double Q-learning (arXiv:1509.06461).

Dueling networks (arXiv:1511.06581) are a network choice (:class:`tdrl.utils.net.QNet`
with ``dueling=True``), not an algorithm change. The n-step target, the target network
and double-Q come from :class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`; per
gradient step DQN adds only its loss::

    G   = sum_{k<n} gamma^k r_{t+k} + gamma^n Q_target(s_{t+n}, argmax_a Q(s_{t+n}, a))
    td  = G - Q(s_t, a_t)
    L   = mean(w * td^2)          (w: prioritized-replay importance weight, else 1)
    priorities <- |td|            (when the buffer is prioritized)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from typing_extensions import Unpack

from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningParams, QLearningPolicy

__all__ = ["DQN", "DQNParams", "DQNPolicy"]


class DQNParams(QLearningParams, total=False):
    """:class:`DQN`'s keywords besides ``policy`` (``**kwargs: Unpack[DQNParams]``)."""

    huber_loss_delta: float | None


class DQNPolicy(QLearningPolicy):
    """The greedy / epsilon-greedy policy of DQN (see :class:`QLearningPolicy`).

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.policy import make_batch
    >>> p = DQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    >>> p(make_batch({"obs": torch.zeros(3, 4)}, 3))["act"].shape
    torch.Size([3])
    """


class DQN(QLearningAlgorithm):
    """Deep Q-learning with optional double-Q, n-step returns and a hard-updated target.

    :param policy: a :class:`DQNPolicy`.
    :param huber_loss_delta: use a Huber loss with this delta instead of the squared error
        (importance-weighted per sample under prioritized replay; see ``docs/``).

    The other parameters are :class:`QLearningAlgorithm`'s.
    """

    def __init__(
        self,
        *,
        policy: QLearningPolicy,
        huber_loss_delta: float | None = None,
        **kwargs: Unpack[QLearningParams],
    ) -> None:
        super().__init__(policy=policy, **kwargs)
        self.huber_loss_delta = huber_loss_delta

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Squared (or Huber) TD error of ``Q(s, a)`` against ``returns``."""
        q_a = self.taken_q(td)
        returns = td["returns"].reshape(-1).to(q_a.dtype)
        td_error = returns - q_a
        if self.huber_loss_delta is not None:
            per = F.huber_loss(q_a, returns, delta=self.huber_loss_delta, reduction="none")
        else:
            per = td_error.pow(2)
        weight = self.weights(td)
        td.set("td_error", td_error.detach())
        return {"loss_qvalue": weighted_mean(per, weight)}
