"""Small torch helpers: a temporary train/eval mode, and uniform action distributions.

>>> net = torch.nn.Linear(2, 2).eval()
>>> with torch_train_mode(net):
...     net.training
True
>>> net.training
False
>>> dist = create_uniform_action_dist(gym.spaces.Discrete(3), batch_size=2)
>>> tuple(dist.probs.shape), tuple(dist.sample().shape)
((2, 3), (2,))
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import overload

import gymnasium as gym
import numpy as np
import torch
from torch import distributions as D
from torch import nn

__all__ = ["create_uniform_action_dist", "torch_train_mode"]


@contextlib.contextmanager
def torch_train_mode(module: nn.Module, enabled: bool = True) -> Iterator[nn.Module]:
    """Put ``module`` (and its submodules) in train mode (``enabled=False``: eval mode) for
    the block; the mode it had before comes back on exit, also when the block raises.

    Only ``module.training`` of the module itself is restored afterwards, through
    ``module.train(previous)``, which sets every submodule alike (as ``train``/``eval`` do).

    :param module: the module to switch.
    :param enabled: ``True`` for train mode, ``False`` for eval mode.
    :return: a context manager yielding ``module``.

    >>> bn = torch.nn.BatchNorm1d(3)
    >>> with torch_train_mode(bn, False):
    ...     bn.training
    False
    >>> bn.training
    True
    """
    previous = module.training
    module.train(enabled)
    try:
        yield module
    finally:
        module.train(previous)


@overload
def create_uniform_action_dist(action_space: gym.spaces.Box, batch_size: int = 1) -> D.Uniform: ...
@overload
def create_uniform_action_dist(
    action_space: gym.spaces.Discrete, batch_size: int = 1
) -> D.Categorical: ...
def create_uniform_action_dist(
    action_space: gym.spaces.Box | gym.spaces.Discrete, batch_size: int = 1
) -> D.Uniform | D.Categorical:
    """A distribution whose one sample is a batch of ``batch_size`` uniformly random actions.

    * ``Box``: a ``Uniform`` over ``[low, high]``, ``low``/``high`` of shape
      ``[batch_size, *space.shape]`` (float32), so ``sample()`` has that shape. The bounds
      must be finite.
    * ``Discrete(n)``: a ``Categorical`` with equal probabilities ``[batch_size, n]``; its
      samples are action indices ``0..n-1`` of shape ``[batch_size]`` (a space with
      ``start != 0`` is refused: a ``Categorical`` cannot shift its support).

    Anything else is a ``ValueError`` naming the space.

    :param action_space: the action space.
    :param batch_size: the number of actions per sample (e.g. the number of envs).

    >>> d = create_uniform_action_dist(gym.spaces.Box(-1.0, 1.0, (2,)), batch_size=4)
    >>> type(d).__name__, tuple(d.sample().shape)
    ('Uniform', (4, 2))
    """
    if batch_size < 1:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size}")
    if isinstance(action_space, gym.spaces.Box):
        low = np.asarray(action_space.low, dtype=np.float32)
        high = np.asarray(action_space.high, dtype=np.float32)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise ValueError(
                f"action_space: a uniform distribution needs finite bounds, got {action_space}"
            )
        shape = (batch_size, *low.shape)
        return D.Uniform(
            torch.from_numpy(low).expand(shape).clone(),
            torch.from_numpy(high).expand(shape).clone(),
        )
    if isinstance(action_space, gym.spaces.Discrete):
        if int(action_space.start) != 0:
            raise ValueError(
                f"action_space: expected a Discrete space starting at 0, got {action_space}"
            )
        return D.Categorical(probs=torch.ones(batch_size, int(action_space.n)))
    raise ValueError(
        f"action_space: expected a gymnasium Box or Discrete space, got {action_space!r}"
    )
