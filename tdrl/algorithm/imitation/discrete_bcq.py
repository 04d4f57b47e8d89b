"""Discrete batch-constrained deep Q-learning, discrete BCQ (arXiv:1910.01708).

Offline Q-learning that only trusts actions the data supports. Beside the Q network, an
imitator ``G(s) -> logits`` learns the behaviour policy; an action whose imitation
probability is below a fraction ``tau`` (``unlikely_action_threshold``) of the most likely
action's is never chosen, neither for acting nor for the bootstrap. On the Q-learning base
(n-step target through the buffer, hard-updated target network) a gradient step is::

    allowed(s)  = {a : G(a|s) / max_b G(b|s) >= tau}    (logits l: l_a - max_b l_b >= log tau)
    a*          = argmax_{a in allowed(s_{t+n})} Q(s_{t+n}, a)                 (online Q)
    G_t         = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - term) Q'(s_{t+n}, a*)   (target Q')
    L_Q         = mean(w * Huber_1(Q(s_t, a_t) - G_t))          (w: PER weight, else 1)
    L_imitation = -mean(log softmax(l(s_t))[a_t])               (behaviour cloning, NLL)
    L_penalty   = imitation_logits_penalty * mean(l(s_t)^2)
    one optimizer step on L_Q + L_imitation + L_penalty (Q network and imitator together;
    they may share layers); Q' <- Q every target_update_freq steps (first before step 0)

Acting is ``argmax_{a in allowed(s)} Q(s, a)``, with Tianshou's ``eps_inference`` random
actions when testing (there is no online exploration: the data are fixed).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.checks import require_instance
from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.optim import GradStep, OptimizerFactory
from tdrl.algorithm.policy import call_model, make_batch
from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningPolicy, split_mask
from tdrl.data.batch import Batch

__all__ = ["DiscreteBCQ", "DiscreteBCQPolicy"]


class DiscreteBCQPolicy(QLearningPolicy):
    """Greedy policy over the Q-values of the actions the imitator finds likely enough.

    :param model: ``obs -> Q [B, n_actions]``.
    :param imitator: ``obs -> imitation logits [B, n_actions]`` (the behaviour policy's; it
        may share layers with ``model``).
    :param action_space: a ``Discrete`` space.
    :param unlikely_action_threshold: ``tau`` in ``[0, 1)``: actions whose imitation
        probability is below ``tau`` times the most likely action's are excluded (``0``:
        none is).
    :param eps_inference: epsilon of random actions outside training steps (testing).

    The result holds ``act``, ``q_value`` (the model's Q), ``imitation_logits`` and, as in
    Tianshou, ``logits`` (the imitation logits).

    >>> p = DiscreteBCQPolicy(model=torch.nn.Linear(3, 2), imitator=torch.nn.Linear(3, 2),
    ...                       action_space=gym.spaces.Discrete(2), unlikely_action_threshold=0.5)
    >>> out = p(make_batch({"obs": torch.zeros(4, 3)}, 4))
    >>> out["act"].shape, out["q_value"].shape, out["imitation_logits"].shape
    (torch.Size([4]), torch.Size([4, 2]), torch.Size([4, 2]))
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        imitator: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        unlikely_action_threshold: float = 0.3,
        eps_inference: float = 0.0,
    ) -> None:
        if not 0.0 <= unlikely_action_threshold < 1.0:
            raise ValueError(
                f"unlikely_action_threshold: expected a value in [0, 1), "
                f"got {unlikely_action_threshold}"
            )
        super().__init__(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            eps_training=0.0,  # offline: no data collection in training
            eps_inference=eps_inference,
        )
        self.imitator = imitator
        self.unlikely_action_threshold = unlikely_action_threshold
        self._log_tau = (
            math.log(unlikely_action_threshold) if unlikely_action_threshold > 0 else -math.inf
        )

    def imitation_logits(self, obs: Any, state: Any = None, info: Any = None) -> torch.Tensor:
        """The imitator's logits ``[B, n_actions]`` for ``obs`` (without its action mask)."""
        obs, _ = split_mask(obs)
        return call_model(self.imitator, obs, state, info)[0]  # type: ignore[no-any-return]

    def allowed(self, logits: torch.Tensor, mask: Any = None) -> torch.Tensor:
        """``G(a|s) >= tau max_b G(b|s)`` (and legal, given an action mask) ``[B, A]`` bool.

        >>> p = DiscreteBCQPolicy(model=torch.nn.Linear(1, 3), imitator=torch.nn.Linear(1, 3),
        ...                       action_space=gym.spaces.Discrete(3),
        ...                       unlikely_action_threshold=0.5)
        >>> p.allowed(torch.log(torch.tensor([[0.5, 0.3, 0.2]]))).tolist()
        [[True, True, False]]
        """
        if mask is not None:
            legal = torch.as_tensor(mask, device=logits.device).bool()
            logits = logits.masked_fill(~legal, -math.inf)
        ok = logits - logits.max(dim=-1, keepdim=True).values >= self._log_tau
        return ok & legal if mask is not None else ok

    def constrained_greedy(self, q: torch.Tensor, logits: torch.Tensor, mask: Any) -> torch.Tensor:
        """``argmax`` of ``q`` over the allowed actions ``[B]``."""
        return q.masked_fill(~self.allowed(logits, mask), -math.inf).argmax(dim=-1)

    def forward(  # type: ignore[override]
        self, batch: TensorDictBase, state: Any = None, model: nn.Module | None = None
    ) -> Batch:
        """``act = argmax_{a allowed} Q(obs, a)``; also ``q_value`` and the imitation logits."""
        info = batch.get("info", None) if isinstance(batch, TensorDictBase) else None
        out, mask, new_state = self.model_output(batch["obs"], model, state, info)
        q = self.q_from_output(out)
        logits = self.imitation_logits(batch["obs"], state, info)
        act = self.constrained_greedy(q, logits, mask)
        fields = {
            "act": act,
            "q_value": q,
            "imitation_logits": logits,
            "logits": logits,
            "state": new_state,
        }
        return make_batch(fields, q.shape[0])


class DiscreteBCQ(QLearningAlgorithm):
    """Discrete BCQ: Q-learning restricted to likely actions, plus behaviour cloning.

    :param policy: a :class:`DiscreteBCQPolicy`.
    :param optim: optimizer factory (or Adam learning rate) for the Q network and the
        imitator together.
    :param gamma: discount factor.
    :param n_step: n-step return horizon.
    :param target_update_freq: copy the Q network into the target network every this many
        gradient steps, the first time before the first step (``0``: no target network, the
        online Q rates the bootstrap action).
    :param imitation_logits_penalty: weight of the ``mean(logits^2)`` regularizer.
    :param max_grad_norm: clip the gradient norm (``None``: no clipping).

    >>> from tdrl.utils.net import MLP
    >>> space = gym.spaces.Discrete(2)
    >>> p = DiscreteBCQPolicy(model=MLP(4, 2, (8,)), imitator=MLP(4, 2, (8,)), action_space=space)
    >>> alg = DiscreteBCQ(policy=p, target_update_freq=10)
    >>> td = Batch(obs=torch.zeros(5, 4), act=torch.zeros(5, dtype=torch.long),
    ...            returns=torch.ones(5))
    >>> sorted(alg(td).keys())
    ['loss_imitation', 'loss_logits_penalty', 'loss_qvalue']
    """

    policy: DiscreteBCQPolicy

    def __init__(
        self,
        *,
        policy: DiscreteBCQPolicy,
        optim: OptimizerFactory | float = 1e-3,
        gamma: float = 0.99,
        n_step: int = 1,
        target_update_freq: int = 8000,
        imitation_logits_penalty: float = 1e-2,
        max_grad_norm: float | None = None,
    ) -> None:
        require_instance("policy", policy, DiscreteBCQPolicy)
        if not imitation_logits_penalty >= 0:
            raise ValueError(
                f"imitation_logits_penalty: expected a value >= 0, got {imitation_logits_penalty}"
            )
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step=n_step,
            target_update_freq=target_update_freq,
            is_double=True,
            max_grad_norm=max_grad_norm,
        )
        self.imitation_logits_penalty = imitation_logits_penalty
        # all three terms drive the one optimizer (the base registered loss_qvalue alone)
        self._stages.clear()
        terms = ("loss_qvalue", "loss_imitation", "loss_logits_penalty")
        self._add_stage(self.q_losses, (terms, self.optim))

    def _create_optimizer(
        self,
        params: nn.Module | Any,
        optim: OptimizerFactory | float,
        max_grad_norm: float | None = None,
    ) -> GradStep:
        """The base asks for the Q network's optimizer; BCQ's also trains the imitator
        (one optimizer over the whole policy, shared layers once, as Tianshou)."""
        if params is self.policy.model:
            params = self.policy
        return super()._create_optimizer(params, optim, max_grad_norm)

    # -- targets ------------------------------------------------------------------------
    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``Q'(s', a*)`` ``[B]``, ``a*`` the online Q's best allowed action (``Q`` itself
        without a target network)."""
        p = self.policy
        out, mask, _ = p.model_output(obs_next)
        act = p.constrained_greedy(p.q_from_output(out), p.imitation_logits(obs_next), mask)
        q_target = p.q_values(obs_next, self.model_old)  # model_old None: the online Q
        return q_target.gather(1, act.unsqueeze(1)).squeeze(1)

    # -- loss ---------------------------------------------------------------------------
    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Huber TD loss of ``Q(s, a)``, the imitator's NLL of ``a`` and the logits penalty;
        sets ``td_error``."""
        obs = self.obs_of(td)
        act = self.act_of(td).long().reshape(-1)
        q = self.policy.q_values(obs)
        logits = self.policy.imitation_logits(obs)
        q_a = q.gather(1, act.unsqueeze(1)).squeeze(1)
        returns = td["returns"].reshape(-1).to(q_a.dtype)
        per = F.huber_loss(q_a, returns, delta=1.0, reduction="none")
        weight = self.weights(td)
        td.set("td_error", (returns - q_a).detach())
        return {
            "loss_qvalue": weighted_mean(per, weight),
            "loss_imitation": F.nll_loss(F.log_softmax(logits, dim=-1), act),
            "loss_logits_penalty": self.imitation_logits_penalty * logits.pow(2).mean(),
        }
