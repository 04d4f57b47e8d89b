"""Categorical DQN, C51 (arXiv:1707.06887): a distribution over a fixed support per action.

The network gives, for each action, probabilities ``p_i(s, a)`` over the fixed atoms
``z_i = v_min + i * (v_max - v_min) / (N - 1)``, ``i < N``; ``Q(s, a) = sum_i p_i(s, a) z_i``
(the policy's head hook). The n-step target, the target network and double-Q come from
:class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`; per gradient step C51 adds::

    R   = sum_{k<n} gamma^k r_{t+k},   d = gamma^n (1 - term)        (n-step, episode-aware)
    a*  = argmax_a Q(s_{t+n}, a)                 (online net; target net's own with is_double=False)
    m   = Phi(R + d z, p'(s_{t+n}, a*))          (target net's distribution, projected onto z)
    CE  = -sum_i m_i log(p_i(s_t, a_t) + 1e-8)
    L   = mean(w * CE)                           (w: prioritized-replay importance weight, else 1)
    priorities <- CE                             (when the buffer is prioritized)

``Phi`` is :func:`~tdrl.algorithm.distributional.categorical_projection`: each shifted atom
``clamp(R + d z_j, v_min, v_max)`` splits ``p'_j`` between its two neighbouring atoms.
``preprocess`` computes ``R`` and ``d`` through the buffer; ``m`` is computed in the loss
stage, so a hard target sync at the start of a gradient step is already in it (as in
Tianshou's C51; DQN's scalar target is computed before the sync, as in Tianshou's DQN).

With ``n_step > 1`` the distribution bootstrapped is that at ``s_{t+n}``, the state the
discount ``gamma^n`` belongs to (as in Rainbow, arXiv:1710.02298, and as Tianshou's own
QR-DQN does). Tianshou 2.0.1's C51 takes it at ``s_{t+1}`` instead; see
``docs/differences.md``. With ``n_step = 1`` the two agree exactly.

A plain TorchRL batch (``loss(td)``) gets the one-step target ``R = r``, ``d = gamma (1 -
terminated)``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.algorithm_base import read_obs_next
from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.distributional import (
    bootstrap_atoms,
    categorical_projection,
    check_atoms,
    make_td0_estimator,
    taken_atoms,
)
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningPolicy, QLearningPolicyParams
from tdrl.algorithm.returns import nstep_reward_discount
from tdrl.data.batch import Batch

__all__ = [
    "C51",
    "C51Policy",
    "bootstrap_atoms",
    "check_atoms",
    "make_td0_estimator",
    "taken_atoms",
]

_CE_EPS = 1e-8  # inside the log of the cross-entropy, as in Tianshou


class C51Policy(QLearningPolicy):
    """Greedy (epsilon-greedy) policy over ``Q(s, a) = sum_i p_i(s, a) z_i``.

    :param model: ``obs -> [B, n_actions, num_atoms]`` probabilities (e.g.
        :class:`tdrl.utils.net_distributional.DistributionalQNet` with ``softmax=True``).
    :param action_space: a ``Discrete`` space.
    :param num_atoms: atoms of the support, ``>= 2``.
    :param v_min: the smallest atom.
    :param v_max: the largest atom, ``> v_min``.
    ``eps_training`` / ``eps_inference`` (keywords passed on): see :class:`QLearningPolicy`.

    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = C51Policy(model=DistributionalQNet(4, 2, 11, (8,), softmax=True),
    ...               action_space=gym.spaces.Discrete(2), num_atoms=11, v_min=-5, v_max=5)
    >>> p.support.tolist()[:3], p(make_batch({"obs": torch.zeros(3, 4)}, 3))["act"].shape
    ([-5.0, -4.0, -3.0], torch.Size([3]))
    """

    support: torch.Tensor

    def __init__(
        self,
        *,
        model: nn.Module,
        action_space: gym.Space,
        num_atoms: int = 51,
        v_min: float = -10.0,
        v_max: float = 10.0,
        **kwargs: Unpack[QLearningPolicyParams],
    ) -> None:
        require_at_least(2, num_atoms=num_atoms)
        if not v_min < v_max:
            raise ValueError(f"v_max: expected a value > v_min = {v_min}, got {v_max}")
        super().__init__(model=model, action_space=action_space, **kwargs)
        self.num_atoms, self.v_min, self.v_max = int(num_atoms), float(v_min), float(v_max)
        self.register_buffer("support", torch.linspace(self.v_min, self.v_max, self.num_atoms))

    def q_from_output(self, out: torch.Tensor) -> torch.Tensor:
        """``Q = sum_i p_i z_i`` ``[B, n_actions]`` from the probabilities ``[B, n_actions, N]``."""
        check_atoms(out, self.num_atoms, "num_atoms")
        return (out * self.support).sum(-1)


class C51(QLearningAlgorithm):
    """Categorical DQN: cross-entropy to the projected n-step target distribution.

    :param policy: a :class:`C51Policy`.
    :param optim: optimizer factory (or Adam learning rate) for ``policy.model``.
    :param gamma: discount factor.
    :param n_step: n-step return horizon (tdrl's buffer path; a TorchRL batch gets
        one-step targets).
    :param target_update_freq: copy the online weights into the target network every this
        many gradient steps (``0``: no target network).
    :param is_double: the online network picks the bootstrap action (Tianshou's C51 always
        does); ``False``: the target network's own greedy action.
    :param max_grad_norm: clip the gradient norm (``None``: no clipping).

    >>> from tdrl.utils.net_distributional import DistributionalQNet
    >>> p = C51Policy(model=DistributionalQNet(4, 2, 11, (8,), softmax=True),
    ...               action_space=gym.spaces.Discrete(2), num_atoms=11)
    >>> alg = C51(policy=p, gamma=0.9, n_step=3, target_update_freq=100)
    >>> td = Batch(obs=torch.zeros(5, 4), act=torch.zeros(5, dtype=torch.long),
    ...            obs_next=torch.ones(5, 4), target_reward=torch.ones(5),
    ...            target_discount=torch.full((5,), 0.9))
    >>> sorted(alg(td).keys()), td["td_error"].shape
    (['loss_qvalue'], torch.Size([5]))
    """

    policy: C51Policy
    policy_class = C51Policy

    # -- targets ------------------------------------------------------------------------
    def next_probs(self, obs_next: Any) -> torch.Tensor:
        """``p'(s', a*) [B, N]``: the bootstrap distribution (see :func:`bootstrap_atoms`)."""
        return bootstrap_atoms(self.policy, obs_next, self.model_old, self.is_double)

    def target_distribution(self, td: TensorDictBase) -> torch.Tensor:
        """``m = Phi(R + d z, p'(s', a*))`` ``[B, N]``, the target projected onto the support.

        ``R`` and ``d`` are ``target_reward`` and ``target_discount``; ``s'`` is
        ``bootstrap_obs`` where the n-step chain ends past ``obs_next``, else the next
        observation. The target network is evaluated here, in the loss stage, so a hard
        update at the start of this gradient step is already in it (as in Tianshou's C51).
        """
        obs = td.get("bootstrap_obs", None)
        if obs is None:
            obs = self._get(td, self.next_obs_key, "next observation")
        p = self.next_probs(obs)
        rew, discount = td["target_reward"], td["target_discount"]
        return categorical_projection(p, rew, discount, self.policy.support)

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the n-step ``target_reward`` ``R`` and ``target_discount`` ``d``, and the
        observation ``s_{t+n}`` to bootstrap from (``bootstrap_obs``, where a chain ends
        past ``obs_next``).

        ``R`` and ``d`` are the buffer's part of the n-step return
        (:func:`~tdrl.algorithm.returns.nstep_reward_discount`), so they follow the buffer's
        episode rules exactly.
        """
        idx = np.asarray(indices)
        ret, disc, last = nstep_reward_discount(buffer, idx, self.gamma, self.n_step)
        dtype = self.policy.support.dtype  # computed on the host: no network in it
        batch.set("target_reward", self._on_device(torch.from_numpy(ret).to(dtype)))
        batch.set("target_discount", self._on_device(torch.from_numpy(disc).to(dtype)))
        if not np.array_equal(last, idx):  # always equal with 1-step returns
            batch.set("bootstrap_obs", self._on_device(read_obs_next(buffer, last)))
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """One-step ``target_reward = r`` and ``target_discount = gamma (1 - terminated)``
        for a TorchRL batch (bootstrapped at its next observation)."""
        if "target_reward" in td:
            return td
        _, rew, term = self.transition_of(td)
        est = self._value_estimator
        gamma = float(est.gamma) if est is not None else self.gamma  # type: ignore[arg-type]
        td.set("target_reward", rew)
        td.set("target_discount", gamma * (1.0 - term))
        return td

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> None:
        """TD(0) only (``gamma`` may be given): the target is a projected distribution.

        >>> from torchrl.objectives import ValueEstimators
        >>> from tdrl.utils.net_distributional import DistributionalQNet
        >>> p = C51Policy(model=DistributionalQNet(4, 2, 11, (8,), softmax=True),
        ...               action_space=gym.spaces.Discrete(2), num_atoms=11)
        >>> C51(policy=p).make_value_estimator(ValueEstimators.TD1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: value_type: C51 supports ['TD0'] (...), got ValueEstimators.TD1
        """
        make_td0_estimator(self, value_type, hyperparams)

    # -- loss ---------------------------------------------------------------------------
    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Cross-entropy of ``p(s, a)`` to the target distribution (set as ``target_dist``);
        sets ``td_error`` to it."""
        n = self.policy.num_atoms
        probs = taken_atoms(self.policy, self.obs_of(td), self.act_of(td), n, "num_atoms")
        target = self.target_distribution(td).to(probs.dtype)
        td.set("target_dist", target)
        ce = -(target * torch.log(probs + _CE_EPS)).sum(-1)
        td.set("td_error", ce.detach())
        weight = self.weights(td)
        return {"loss_qvalue": weighted_mean(ce, weight, cast=True)}
