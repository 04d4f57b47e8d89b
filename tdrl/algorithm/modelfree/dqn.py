"""Deep Q-Network (arXiv:1312.5602) with double Q-learning (arXiv:1509.06461).

Dueling networks (arXiv:1511.06581) are a network choice (:class:`tdrl.utils.net.QNet`
with ``dueling=True``), not an algorithm change. Per gradient step::

    every target_update_freq steps: theta_target <- theta            (hard update)
    G   = sum_{k<n} gamma^k r_{t+k} + gamma^n Q_target(s_{t+n}, argmax_a Q(s_{t+n}, a))
    td  = G - Q(s_t, a_t)
    L   = mean(w * td^2)          (w: prioritized-replay importance weight, else 1)
    priorities <- |td|            (when the buffer is prioritized)

``G`` comes from :func:`tdrl.algorithm.returns.compute_nstep_return`, so n-step chains
stop at episode ends and bootstrap from truncated / unfinished steps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn

from tdrl.algorithm.base import Algorithm, OptimizerFactory, Policy, make_batch
from tdrl.data.batch import Batch

__all__ = ["DQN", "DQNPolicy"]


def _model_out(out: Any) -> torch.Tensor:
    """Accept plain-tensor models and Tianshou-style ``(logits, state)`` models."""
    return out[0] if isinstance(out, tuple) else out


class DQNPolicy(Policy):
    """Greedy policy over a Q-network, with epsilon-greedy exploration noise.

    :param model: ``obs -> Q-values [B, n_actions]``.
    :param action_space: a ``Discrete`` space.
    :param eps_training: epsilon used by :meth:`exploration_noise` inside a training step.
    :param eps_inference: epsilon used outside a training step (evaluation).

    An observation that is a TensorDict with ``obs`` and ``mask`` entries restricts the
    greedy and the random actions to ``mask == True``.

    >>> p = DQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, out["logits"].shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        eps_training: float = 0.0,
        eps_inference: float = 0.0,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(f"action_space: expected Discrete, got {type(action_space).__name__}")
        super().__init__(action_space, observation_space, action_bound_method=None)
        self.model = model
        self.n_actions = int(action_space.n)
        self.eps_training = eps_training
        self.eps_inference = eps_inference

    def set_eps(self, eps: float) -> None:
        """Set the training epsilon (Tianshou 1.x name)."""
        self.eps_training = eps

    def set_eps_training(self, eps: float) -> None:
        """Set the epsilon used inside training steps."""
        self.eps_training = eps

    def set_eps_inference(self, eps: float) -> None:
        """Set the epsilon used outside training steps."""
        self.eps_inference = eps

    def q_values(self, obs: Any, model: nn.Module | None = None) -> torch.Tensor:
        """Q-values of ``obs`` under ``model`` (default: the online model), mask applied."""
        mask = None
        if isinstance(obs, TensorDictBase) and "mask" in obs:
            mask = obs["mask"]
            obs = obs["obs"]
        q = _model_out((model if model is not None else self.model)(obs))
        if mask is not None:
            q = q.masked_fill(~torch.as_tensor(mask, dtype=torch.bool), -torch.inf)
        return q

    def forward(  # type: ignore[override]
        self, batch: TensorDictBase, state: Any = None, model: nn.Module | None = None
    ) -> Batch:
        """Return ``act = argmax_a Q(obs, a)`` and ``logits = Q(obs, .)``."""
        q = self.q_values(batch["obs"], model)
        return make_batch({"logits": q, "act": q.argmax(dim=-1), "state": state}, q.shape[0])

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Replace each action by a uniformly random (allowed) one with probability eps."""
        eps = self.eps_training if self.is_within_training_step else self.eps_inference
        if eps <= 0.0:
            return act
        is_tensor = isinstance(act, torch.Tensor)
        a = act.detach().cpu().numpy().copy() if is_tensor else np.array(act, copy=True)
        n = a.shape[0]
        explore = np.random.rand(n) < eps
        obs = batch.get("obs", None)
        if isinstance(obs, TensorDictBase) and "mask" in obs:
            scores = np.random.rand(n, self.n_actions) + np.asarray(obs["mask"])
            rand_act = scores.argmax(axis=1)
        else:
            rand_act = np.random.randint(self.n_actions, size=n)
        a[explore] = rand_act[explore]
        return torch.from_numpy(a) if is_tensor else a


class DQN(Algorithm):
    """Deep Q-learning with optional double-Q, n-step returns and a hard-updated target.

    :param policy: a :class:`DQNPolicy`.
    :param optim: optimizer factory (or a learning rate for Adam) for ``policy.model``.
    :param gamma: discount factor.
    :param n_step: n-step return horizon.
    :param target_update_freq: copy the online weights into the target network every this
        many gradient steps (``0``: no target network).
    :param is_double: double Q-learning: the online net picks the next action, the target
        net rates it.
    :param huber_loss_delta: use a Huber loss with this delta instead of the squared error.
    :param max_grad_norm: clip the gradient norm (``None``: no clipping).
    """

    model: nn.Module
    model_old: nn.Module | None
    model_params: TensorDictParams
    target_model_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: DQNPolicy,
        optim: OptimizerFactory | float = 1e-3,
        gamma: float = 0.99,
        n_step: int = 1,
        target_update_freq: int = 0,
        is_double: bool = True,
        huber_loss_delta: float | None = None,
        max_grad_norm: float | None = None,
    ) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma: expected a value in [0, 1], got {gamma}")
        if n_step < 1:
            raise ValueError(f"n_step: expected an int >= 1, got {n_step}")
        if target_update_freq < 0:
            raise ValueError(f"target_update_freq: expected >= 0, got {target_update_freq}")
        super().__init__(policy)
        self.policy: DQNPolicy = policy
        self.gamma = gamma
        self.n_step = n_step
        self.target_update_freq = target_update_freq
        self.is_double = is_double
        self.huber_loss_delta = huber_loss_delta
        self._target_updater = None
        # the target net is kept out of the submodules (no duplicate state, stays in eval)
        self.__dict__["model_old"] = None
        if target_update_freq > 0:
            self.__dict__["model_old"] = self._add_target(policy.model, "model")
            self._target_updater = self._hard_updater(target_update_freq)
            # sync before the first gradient step, then every target_update_freq steps
            self._target_updater.counter = self._target_updater.value_network_update_interval
        self.optim = self._create_optimizer(policy.model, optim, max_grad_norm)

    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        """Bootstrap value of ``buffer[indices].obs_next`` (no grad)."""
        obs_next = self._obs_next(buffer, indices)
        q_target = (
            self.policy.q_values(obs_next, self.model_old) if self.model_old is not None else None
        )
        if self.is_double or q_target is None:
            q_online = self.policy.q_values(obs_next)
            if q_target is None:
                return q_online.max(dim=1).values
            return q_target.gather(1, q_online.argmax(dim=1, keepdim=True)).squeeze(1)
        return q_target.max(dim=1).values

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the n-step ``returns``."""
        return self._nstep_returns(batch, buffer, indices, self.gamma, self.n_step)

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """TD loss on a batch with ``obs``, ``act``, ``returns`` (and optional ``weight``).

        Also writes ``td_error`` (detached) into ``batch`` for prioritized replay.
        """
        q = self.policy.q_values(batch["obs"])
        q_a = q.gather(1, batch["act"].long().reshape(-1, 1)).squeeze(1)
        returns = batch["returns"].reshape(-1).to(q_a.dtype)
        td_error = returns - q_a
        weight = batch["weight"].reshape(-1) if "weight" in batch else None
        if self.huber_loss_delta is not None:
            per = F.huber_loss(q_a, returns, delta=self.huber_loss_delta, reduction="none")
        else:
            per = td_error.pow(2)
        loss = (per * weight).mean() if weight is not None else per.mean()
        batch["td_error"] = td_error.detach()
        return TensorDict({"loss": loss}, [])

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> dict[str, float]:
        if self._target_updater is not None:
            self._target_updater.step()
        loss = self(batch)["loss"]
        self.optim.step(loss)
        return {"loss": loss.item()}
