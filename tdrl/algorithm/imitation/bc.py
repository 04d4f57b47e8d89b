"""Behaviour cloning: supervised learning of the dataset's actions.

The policy ``pi`` is fitted to the state-action pairs of a dataset (offline, sampled by
:class:`~tdrl.trainer.OfflineTrainer` from a fixed buffer) or of a replay buffer that a
collector fills (off-policy, :class:`~tdrl.trainer.OffPolicyTrainer`): the same update,
Tianshou's ``OfflineImitationLearning`` and ``OffPolicyImitationLearning``. Per gradient
step, on a sampled batch ``{(s_i, a_i)}``::

    discrete:    L = -mean_i log softmax(f(s_i))[a_i]          (cross-entropy on logits f)
                 (``output="probs"``: the actor outputs probabilities p, L = -mean log p[a_i])
    continuous:  L = mean_{i,d} (pi(s_i)_d - a_{i,d})^2        (MSE on raw actions)
    pi <- pi - lr grad L

The policy acts greedily: ``argmax f(s)`` (discrete) or ``pi(s)`` (continuous, a raw
action in ``[-1, 1]`` that ``map_action`` scales to the Box, as stored in tdrl and
Tianshou buffers). The loss is one stage (``loss_bc``), so ``forward(td)`` and
``update()`` share it; a TorchRL batch's env-range actions are mapped back to raw ones.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_instance
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import Policy, call_model, make_batch
from tdrl.data.batch import Batch

__all__ = ["BC", "ImitationPolicy"]


class ImitationPolicy(Policy):
    """The policy of behaviour cloning: ``actor(obs)`` read as logits (or probabilities)
    of a discrete action, or as a raw continuous action.

    :param actor: ``obs -> [B, n_actions]`` (discrete) or ``obs -> [B, act_dim]``
        (continuous, e.g. :class:`tdrl.utils.net.DeterministicActor` in ``[-1, 1]``);
        recurrent actors with Tianshou's ``forward(obs, state, info) -> (out, h)`` work too.
    :param action_space: ``Discrete`` or ``Box``.
    :param output: discrete only: ``"logits"`` (default) or ``"probs"`` (the actor ends
        in a softmax); the greedy action is the argmax either way.
    :param action_scaling: scale a raw ``[-1, 1]`` action to the Box (continuous only).
    :param action_bound_method: ``"clip"``, ``"tanh"`` or ``None`` (continuous only).

    >>> p = ImitationPolicy(actor=nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    >>> out = p(make_batch({"obs": torch.zeros(3, 4)}, 3))
    >>> out["act"].shape, out["logits"].shape
    (torch.Size([3]), torch.Size([3, 2]))
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        output: Literal["logits", "probs"] = "logits",
        action_scaling: bool = False,
        action_bound_method: Literal["clip", "tanh"] | None = "clip",
    ) -> None:
        if not isinstance(action_space, gym.spaces.Discrete | gym.spaces.Box):
            raise ValueError(
                f"action_space: expected Discrete or Box, got {type(action_space).__name__}"
            )
        if output not in ("logits", "probs"):
            raise ValueError(f"output: expected 'logits' or 'probs', got {output!r}")
        super().__init__(
            action_space,
            observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor = actor
        self.output = output

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """Discrete: ``logits`` (the actor's output) and ``act = argmax``; continuous:
        ``act`` (the actor's raw action)."""
        out, hidden = call_model(self.actor, batch["obs"], state, batch.get("info", None))
        n = out.shape[0]
        if self.action_type == "discrete":
            return make_batch({"logits": out, "act": out.argmax(-1), "state": hidden}, n)
        return make_batch({"act": out, "state": hidden}, n)


class BC(Algorithm):
    """Behaviour cloning (imitation learning), offline or off-policy.

    :param policy: an :class:`ImitationPolicy`.
    :param optim: optimizer factory (or Adam learning rate) for the actor.
    :param max_grad_norm: clip the actor's gradient norm (``None``: no clipping).

    Stage: :meth:`bc_losses` (``loss_bc``).

    >>> policy = ImitationPolicy(actor=nn.Linear(3, 1), action_space=gym.spaces.Box(-2, 2, (1,)))
    >>> alg = BC(policy=policy, optim=1e-2)
    >>> td = make_batch({"obs": torch.ones(4, 3), "act": torch.zeros(4, 1)}, 4)
    >>> sorted(alg(td).keys())
    ['loss_bc']
    """

    def __init__(
        self,
        *,
        policy: ImitationPolicy,
        optim: OptimizerFactory | float = 1e-3,
        max_grad_norm: float | None = None,
    ) -> None:
        require_instance("policy", policy, ImitationPolicy, ValueError)
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"max_grad_norm: expected a value > 0 or None, got {max_grad_norm}")
        super().__init__(policy)
        self.policy: ImitationPolicy = policy
        self.optim = self._create_optimizer(policy.actor, optim, max_grad_norm)
        self._add_stage(self.bc_losses, ("loss_bc", self.optim))

    def target_actions(self, td: TensorDictBase) -> torch.Tensor:
        """The dataset's actions: class indices ``[B]`` (a TorchRL one-hot action is turned
        into its index) or raw continuous actions ``[B, act_dim]``."""
        act = self.act_of(td)
        if self.policy.action_type == "discrete":
            n = int(getattr(self.policy.action_space, "n"))  # noqa: B009
            if act.is_floating_point() and act.dim() > 1 and act.shape[-1] == n:
                act = act.argmax(-1)  # TorchRL's one-hot encoding
            return act.reshape(-1).long()
        return act

    def bc_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_bc``: cross-entropy of the stored discrete actions (NLL of ``log p`` for
        a probability output) or the MSE to the stored raw continuous actions."""
        out = self.policy(make_batch({"obs": self.obs_of(td)}, td.batch_size[0]))
        target = self.target_actions(td)
        if self.policy.action_type == "discrete":
            scores = out["logits"]
            logp = scores.clamp_min(1e-8).log() if self.policy.output == "probs" else None
            logp = F.log_softmax(scores, dim=-1) if logp is None else logp
            return {"loss_bc": F.nll_loss(logp, target.to(logp.device))}
        act = out["act"]
        return {"loss_bc": F.mse_loss(act, target.to(act.dtype).reshape(act.shape))}
