"""The Q-learning family base: a greedy policy over a Q head and its off-policy algorithm.

What every value-based algorithm shares lives here, written once:

* :class:`QLearningPolicy`: ``act = argmax_a Q(s, a)`` over legal actions, epsilon-greedy
  exploration, and a *head hook* (:meth:`QLearningPolicy.q_from_output`) that turns the
  network's output into scalar Q-values (identity for DQN; ``sum_i p_i z_i`` for C51,
  a quantile mean for QR-DQN/IQN/FQF).
* :class:`QLearningAlgorithm`: the n-step target ``G = sum_k gamma^k r_{t+k} + gamma^n
  (1 - term) V'(s_{t+n})`` (:meth:`~QLearningAlgorithm.preprocess`, through the buffer's
  episode API), the target network with its hard update, double-Q bootstrapping,
  action masks, and one-step targets for a plain TorchRL batch
  (:meth:`~QLearningAlgorithm.prepare`). A subclass writes only its loss:
  :meth:`~QLearningAlgorithm.q_losses`.

Action masks: an observation that is a TensorDict with ``obs`` and ``mask`` restricts the
greedy action, the bootstrap action and the random actions to ``mask == True``. As in
Tianshou, illegal actions get ``Q + (min Q - max Q - 1)``: a finite value below every
legal one, so an all-illegal (terminal) next state or an illegal stored action never makes
a loss non-finite.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictParams
from torch import nn
from typing_extensions import TypedDict

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_at_least, require_instance, require_unit
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import Policy, call_model, make_batch
from tdrl.data.batch import Batch

__all__ = [
    "QLearningAlgorithm",
    "QLearningParams",
    "QLearningPolicy",
    "QLearningPolicyParams",
    "mask_q",
]


class QLearningPolicyParams(TypedDict, total=False):
    """The :class:`QLearningPolicy` keywords a subclass passes through unchanged
    (``**kwargs: Unpack[QLearningPolicyParams]``); see it for their meaning and defaults."""

    observation_space: gym.Space | None
    eps_training: float
    eps_inference: float


class QLearningParams(TypedDict, total=False):
    """The :class:`QLearningAlgorithm` keywords a subclass passes through unchanged
    (``**kwargs: Unpack[QLearningParams]``); see it for their meaning and defaults."""

    optim: OptimizerFactory | float
    gamma: float
    n_step: int
    target_update_freq: int
    is_double: bool
    max_grad_norm: float | None


def mask_q(q: torch.Tensor, mask: Any) -> torch.Tensor:
    """Push illegal actions below every legal one by ``min Q - max Q - 1`` (finite).

    >>> q = torch.tensor([[1.0, 3.0], [2.0, 0.0]])
    >>> mask_q(q, torch.tensor([[True, False], [False, False]])).tolist()
    [[1.0, -1.0], [-2.0, -4.0]]
    """
    mask = torch.as_tensor(mask, device=q.device)
    offset = q.min() - q.max() - 1.0
    return q + (~mask.bool()).to(q.dtype) * offset


def split_mask(obs: Any) -> tuple[Any, Any]:
    """``(obs, mask)`` from a ``{"obs", "mask"}`` TensorDict observation, else ``(obs, None)``."""
    if isinstance(obs, TensorDictBase) and "mask" in obs:
        return obs["obs"], obs["mask"]
    return obs, None


class QLearningPolicy(Policy):
    """Greedy policy over a Q head, with epsilon-greedy exploration noise.

    :param model: ``obs -> network output`` (``[B, n_actions]`` Q-values for DQN); models
        with Tianshou's ``forward(obs, state=None, info=None) -> (out, state)`` signature
        get the hidden state and the env info.
    :param action_space: a ``Discrete`` space.
    :param eps_training: epsilon of :meth:`exploration_noise` inside a training step.
    :param eps_inference: epsilon outside a training step (evaluation).

    >>> p = QLearningPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
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
            raise ValueError(
                f"action_space: {type(self).__name__} needs a Discrete action space, "
                f"got {action_space}"
            )
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

    # -- the head hook ------------------------------------------------------------------
    def q_from_output(self, out: torch.Tensor) -> torch.Tensor:
        """Scalar Q-values ``[B, n_actions]`` from the network output (identity here)."""
        return out

    def model_output(
        self, obs: Any, model: nn.Module | None = None, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any, Any]:
        """``(network output, mask or None, new state)`` for ``obs`` under ``model``."""
        obs, mask = split_mask(obs)
        out, new_state = call_model(model if model is not None else self.model, obs, state, info)
        return out, mask, new_state

    def q_values(self, obs: Any, model: nn.Module | None = None) -> torch.Tensor:
        """Q-values of ``obs`` under ``model`` (default: the online model), mask applied."""
        out, mask, _ = self.model_output(obs, model)
        q = self.q_from_output(out)
        return mask_q(q, mask) if mask is not None else q

    def forward(  # type: ignore[override]
        self, batch: TensorDictBase, state: Any = None, model: nn.Module | None = None
    ) -> Batch:
        """Return ``act = argmax_a Q(obs, a)`` (legal actions only) and ``logits = Q``."""
        info = batch.get("info", None) if isinstance(batch, TensorDictBase) else None
        out, mask, new_state = self.model_output(batch["obs"], model, state, info)
        q = self.q_from_output(out)
        if mask is not None:
            q = mask_q(q, mask)
        return make_batch({"logits": q, "act": q.argmax(dim=-1), "state": new_state}, q.shape[0])

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Replace each action by a uniformly random (legal) one with probability eps."""
        eps = self.eps_training if self.is_within_training_step else self.eps_inference
        if eps <= 0.0:
            return act
        is_tensor = isinstance(act, torch.Tensor)
        a = act.detach().cpu().numpy().copy() if is_tensor else np.array(act, copy=True)
        n = a.shape[0]
        explore = np.random.rand(n) < eps
        _, mask = split_mask(batch.get("obs", None))
        if mask is not None:
            scores = np.random.rand(n, self.n_actions) + np.asarray(mask)
            rand_act = scores.argmax(axis=1)
        else:
            rand_act = np.random.randint(self.n_actions, size=n)
        a[explore] = rand_act[explore]
        return torch.from_numpy(a) if is_tensor else a


class QLearningAlgorithm(Algorithm):
    """Off-policy Q-learning base: n-step targets, a hard-updated target net, double-Q.

    :param policy: a :class:`QLearningPolicy`.
    :param optim: optimizer factory (or Adam learning rate) for ``policy.model``.
    :param gamma: discount factor.
    :param n_step: n-step return horizon (tdrl's buffer path; a TorchRL batch gets
        one-step targets).
    :param target_update_freq: copy the online weights into the target network every this
        many gradient steps (``0``: no target network).
    :param is_double: double Q-learning: the online net picks the next action, the target
        net rates it.
    :param max_grad_norm: clip the gradient norm (``None``: no clipping).

    Subclasses implement :meth:`q_losses` (and, for distributional heads, override
    :meth:`next_value`).
    """

    policy_class: ClassVar[type[QLearningPolicy] | None] = None
    """The policy class a subclass needs (checked before anything else; ``None``: any)."""
    model: nn.Module
    model_old: nn.Module | None
    model_params: TensorDictParams
    target_model_params: TensorDictParams

    def __init__(
        self,
        *,
        policy: QLearningPolicy,
        optim: OptimizerFactory | float = 1e-3,
        gamma: float = 0.99,
        n_step: int = 1,
        target_update_freq: int = 0,
        is_double: bool = True,
        max_grad_norm: float | None = None,
    ) -> None:
        if self.policy_class is not None:
            require_instance("policy", policy, self.policy_class)
        require_unit(gamma=gamma)
        require_at_least(1, n_step=n_step)
        require_at_least(0, target_update_freq=target_update_freq)
        super().__init__(policy)
        self.policy: QLearningPolicy = policy
        self.gamma = gamma
        self.n_step = n_step
        self.target_update_freq = target_update_freq
        self.is_double = is_double
        # the target net is kept out of the submodules (no duplicate state, stays in eval)
        self.__dict__["model_old"] = None
        if target_update_freq > 0:
            self.__dict__["model_old"] = self._add_target(policy.model, "model")
            upd = self._hard_updater(target_update_freq)
            # sync before the first gradient step, then every target_update_freq steps
            upd.counter = upd.value_network_update_interval
        self.optim = self._create_optimizer(policy.model, optim, max_grad_norm)
        self._add_stage(self.q_losses, ("loss_qvalue", self.optim))

    # -- targets ------------------------------------------------------------------------
    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``V'(s') [B]``: the target net's value of the online (double) or its own greedy
        action; without a target net, the online max."""
        q_target = (
            self.policy.q_values(obs_next, self.model_old) if self.model_old is not None else None
        )
        if q_target is None:
            return self.policy.q_values(obs_next).max(dim=1).values
        if self.is_double:
            act = self.policy.q_values(obs_next).argmax(dim=1, keepdim=True)
            return q_target.gather(1, act).squeeze(1)
        return q_target.max(dim=1).values

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add the n-step ``returns``."""
        return self._nstep_returns(batch, buffer, indices, self.gamma, self.n_step)

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """One-step ``returns`` for a TorchRL batch (:meth:`Algorithm.one_step_returns`)."""
        return self.one_step_returns(td)

    # -- loss ---------------------------------------------------------------------------
    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``{"loss_qvalue": ...}`` on a batch with targets; sets ``td_error``."""
        raise NotImplementedError

    def taken_q(self, td: TensorDictBase) -> torch.Tensor:
        """``Q(s, a) [B]`` of the stored actions (masked as the policy sees them)."""
        q = self.policy.q_values(self.obs_of(td))
        return q.gather(1, self.act_of(td).long().reshape(-1, 1)).squeeze(1)
