"""Deep Recurrent Q-Network (arXiv:1507.06527): DQN with a recurrent Q-network trained on
stacked sequences from the replay buffer.

DRQN changes the network and the data, not the update: the loss is DQN's
(:class:`~tdrl.algorithm.modelfree.dqn.DQN`: n-step target, target network, double-Q),
and what flows through it is a sequence instead of a single observation.

How the sequence flows::

    acting (Collector, one step per env, hidden state carried):
        q_t, (h_t, c_t) = net(o_t, state=(h_{t-1}, c_{t-1}))    state zeroed on env reset
        a_t = argmax_a q_t  (epsilon-greedy)
    storing:   the buffer keeps single observations o_t (no hidden state)
    learning (buffer built with stack_num = T):
        s_t     = [o_{t-T+1}, ..., o_t]     buffer[idx]["obs"] -> [B, T, obs_dim]; frames
                                            before the episode's start repeat its first one
        s_{t+n} = the stack ending at o_{t+n}                    ("obs_next" the same way)
        Q(s_t, .)   = net(s_t, state=0)[0]                       (LSTM over T frames)
        G   = sum_{k<n} gamma^k r_{t+k} + gamma^n Q_target(s_{t+n}, argmax_a Q(s_{t+n}, a))
        L   = mean(w * (G - Q(s_t, a_t))^2)

So the learner replays each sample from a zero hidden state over its last ``stack_num``
frames (Tianshou's DRQN; the paper's "bootstrapped random updates" with a window of
``stack_num``), while the actor carries the state over the whole episode. Under TorchRL,
``loss.set_keys(observation="observation", action="action")`` and a batch whose
``observation`` and ``("next", "observation")`` are ``[B, T, obs_dim]`` stacks train the
same way through ``forward``, with one-step targets (TorchRL's ``CatFrames(N=T, dim=-1)``
output ``[B, T * obs_dim]``, oldest frame first, is read as the same ``T`` frames).

The network is any model with Tianshou's ``forward(obs, state=None, info=None) -> (q,
state)`` signature that accepts ``[B, obs_dim]`` and ``[B, T, obs_dim]``:
:class:`tdrl.utils.net_recurrent.RecurrentQNet` (embedding, LSTM, linear head).
"""

from __future__ import annotations

import gymnasium as gym
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.modelfree.dqn import DQN, DQNParams, DQNPolicy
from tdrl.algorithm.policy import _takes_state
from tdrl.algorithm.qlearning import QLearningPolicy, QLearningPolicyParams

__all__ = ["DRQN", "DRQNPolicy"]


def _require_recurrent(model: nn.Module) -> None:
    """Raise unless ``model.forward`` takes the hidden ``state`` (Tianshou's signature)."""
    if not _takes_state(model):
        raise ValueError(
            "model: DRQN expected a recurrent model with forward(obs, state=None, info=None) "
            f"-> (q, state), got {type(model).__name__} without a 'state' argument"
        )


class DRQNPolicy(DQNPolicy):
    """DQN's greedy / epsilon-greedy policy over a recurrent Q-network.

    The collector passes each env's hidden state to :meth:`forward` and keeps the returned
    one (zeroed when the env resets); the learner calls the model on frame stacks from a
    zero state.

    :param model: a recurrent Q-network (``forward(obs, state=None, info=None) -> (q,
        state)``), e.g. :class:`~tdrl.utils.net_recurrent.RecurrentQNet`.

    The other parameters are :class:`~tdrl.algorithm.qlearning.QLearningPolicy`'s.

    >>> import torch
    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_recurrent import RecurrentQNet
    >>> p = DRQNPolicy(model=RecurrentQNet(4, 2, hidden_size=8),
    ...                action_space=gym.spaces.Discrete(2))
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, out["state"].shape
    (torch.Size([3]), torch.Size([3, 2, 1, 8]))
    >>> DRQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model: DRQN expected a recurrent model ... got Linear without a 'state' argument
    """

    def __init__(
        self, *, model: nn.Module, action_space: gym.Space, **kwargs: Unpack[QLearningPolicyParams]
    ) -> None:
        _require_recurrent(model)
        super().__init__(model=model, action_space=action_space, **kwargs)


class DRQN(DQN):
    """DQN over a recurrent Q-network; samples are frame stacks (buffer ``stack_num``).

    :param policy: a :class:`DRQNPolicy` (or any Q-learning policy over a recurrent model).

    The other parameters are :class:`~tdrl.algorithm.modelfree.dqn.DQN`'s (Tianshou's DRQN
    is its DQN with a recurrent net; the same defaults).

    >>> import numpy as np
    >>> from tdrl.data.batch import Batch
    >>> from tdrl.data.buffer import VectorReplayBuffer
    >>> from tdrl.utils.net_recurrent import RecurrentQNet
    >>> policy = DRQNPolicy(model=RecurrentQNet(4, 2, hidden_size=8),
    ...                     action_space=gym.spaces.Discrete(2))
    >>> alg = DRQN(policy=policy, gamma=0.9, n_step=3, target_update_freq=10)
    >>> buf = VectorReplayBuffer(40, 2, stack_num=4, ignore_obs_next=True)
    >>> for t in range(6):
    ...     _ = buf.add(Batch(obs=np.full((2, 4), t, np.float32), act=np.zeros(2, np.int64),
    ...                   rew=np.ones(2, np.float32), terminated=np.zeros(2, bool),
    ...                   truncated=np.zeros(2, bool)))
    >>> buf[np.array([1])]["obs"][0, :, 0].tolist()     # frames 0, 0, 0, 1 (episode start)
    [0.0, 0.0, 0.0, 1.0]
    >>> sorted(alg.update(buf, batch_size=8))
    ['loss', 'loss_qvalue']
    """

    def __init__(self, *, policy: QLearningPolicy, **kwargs: Unpack[DQNParams]) -> None:
        _require_recurrent(policy.model)
        super().__init__(policy=policy, **kwargs)
