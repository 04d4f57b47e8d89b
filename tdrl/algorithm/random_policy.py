"""``RandomActionPolicy``: uniformly random actions, whatever the observation.

A baseline, a source of exploration data before training, or a stand-in opponent. Discrete
spaces give uniformly random action indices; bounded ``Box`` spaces uniform actions in
``[low, high]``, already in the environment's range (no scaling or clipping is applied).

>>> import numpy as np
>>> policy = RandomActionPolicy(gym.spaces.Discrete(4))
>>> out = policy(Batch(obs=np.zeros((5, 2))))
>>> tuple(out.act.shape), bool(((out.act >= 0) & (out.act < 4)).all())
((5,), True)
>>> policy.compute_action(np.zeros(2)) in range(4)
True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.policy import Policy, make_batch
from tdrl.data.batch import Batch
from tdrl.utils.torch_utils import create_uniform_action_dist

__all__ = ["RandomActionPolicy", "RandomActor"]


def _check_space(action_space: gym.Space) -> gym.spaces.Box | gym.spaces.Discrete:
    if isinstance(action_space, gym.spaces.Discrete):
        create_uniform_action_dist(action_space)  # refuses a space that does not start at 0
        return action_space
    if isinstance(action_space, gym.spaces.Box):
        if not action_space.is_bounded("both"):
            raise ValueError(
                f"action_space: uniform random actions need a bounded Box, got {action_space}"
            )
        return action_space
    raise ValueError(
        f"action_space: expected a gymnasium Discrete or bounded Box space, got {action_space!r}"
    )


def _batch_len(obs: Any) -> int:
    if isinstance(obs, TensorDictBase):
        return int(obs.batch_size[0])
    return len(obs)


class RandomActor(nn.Module):
    """An actor network without parameters that ignores its input (Tianshou's actor of a
    random policy).

    ``forward(obs) -> (out, state)``, ``state`` passed through: for a ``Discrete(n)`` space
    ``out`` is the uniform probabilities ``[B, n]`` (what a discrete actor outputs); for a
    ``Box`` space, uniformly random actions ``[B, *shape]``. :meth:`sample` draws actions
    for both.

    :param action_space: a ``Discrete`` space starting at 0 or a bounded ``Box``.
    """

    def __init__(self, action_space: gym.Space) -> None:
        super().__init__()
        self.action_space = _check_space(action_space)

    def sample(self, batch_size: int) -> torch.Tensor:
        """``batch_size`` uniformly random actions (indices for a ``Discrete`` space)."""
        return create_uniform_action_dist(self.action_space, batch_size).sample()

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        """Uniform probabilities (``Discrete``) or random actions (``Box``) for each of the
        ``len(obs)`` observations."""
        n = _batch_len(obs)
        space = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            return torch.full((n, int(space.n)), 1.0 / int(space.n)), state
        return self.sample(n), state


class RandomActionPolicy(Policy):
    """A policy that acts uniformly at random (Tianshou's ``RandomActionPolicy``).

    ``policy(batch).act`` holds one random action per observation: indices ``[B]`` for a
    ``Discrete`` space, actions ``[B, *shape]`` within ``[low, high]`` for a bounded
    ``Box`` (the environment's own range, so :meth:`map_action` leaves them alone). Other
    spaces are a ``ValueError``.

    :param action_space: the environment's action space.
    :param observation_space: the observation space (kept for reference).

    >>> import numpy as np
    >>> policy = RandomActionPolicy(gym.spaces.Box(-2.0, 2.0, (3,)))
    >>> act = policy.compute_action(np.zeros(4))
    >>> act.shape, bool(policy.action_space.contains(act))
    ((3,), True)
    """

    def __init__(self, action_space: gym.Space, observation_space: gym.Space | None = None):
        actor = RandomActor(action_space)
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.actor = actor

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """One random action per observation of ``batch["obs"]``; ``state`` is passed on."""
        n = int(batch.batch_size[0]) if len(batch.batch_size) else _batch_len(batch["obs"])
        return make_batch({"act": self.actor.sample(n), "state": state}, n)

    def log_prob_of(self, out: Batch, act: torch.Tensor) -> torch.Tensor | None:
        """The log-probability ``[B]`` of ``act`` under the uniform distribution."""
        dist = create_uniform_action_dist(self.actor.action_space, act.shape[0])
        if isinstance(dist, torch.distributions.Categorical):
            return dist.log_prob(act.long())
        return dist.log_prob(act.float()).reshape(act.shape[0], -1).sum(-1)
