"""Soft Actor-Critic for discrete actions (arXiv:1910.07207).

The actor is categorical, ``pi(.|s) = softmax(actor(s))``, and each critic gives every
action's value at once, ``Q_j(s) -> [B, |A|]``, so the expectations over actions that SAC
estimates with one sampled action are computed exactly. On the off-policy actor-critic
base (twin critics, their n-step critic loss, soft targets) a gradient step is::

    V'(s') = sum_a pi(a|s') min_j Q'_j(s', a) + alpha H(pi(.|s'))
    y      = r + gamma^n (1 - term) V'(s_{t+n})
    L_Q     = mean(w sum_j (Q_j(s, a) - y)^2)                            (critic step)
    L_pi    = -mean(alpha H(pi(.|s)) + sum_a pi(a|s) min_j Q_j(s, a))     (actor step;
                                                          Q without gradient)
    L_alpha = -mean(log_alpha (H_target - H(pi(.|s))))                    (auto alpha)
    Q'_j <- (1 - tau) Q'_j + tau Q_j

With auto-alpha, the ``"auto"`` target entropy is ``0.98 log |A|`` (Tianshou's test and
Atari example), close to the entropy of the uniform policy.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDictBase
from torch import nn
from torch.distributions import Categorical
from typing_extensions import Unpack

from tdrl.algorithm.actor_critic import AutoAlpha, SoftActorCritic, SoftActorCriticParams
from tdrl.algorithm.checks import require_instance
from tdrl.algorithm.policy import call_model
from tdrl.algorithm.policy_gradient import ActorPolicy

__all__ = ["AutoAlpha", "DiscreteSAC", "DiscreteSACPolicy"]

AUTO_ENTROPY_RATIO = 0.98
"""``"auto"`` target entropy: this fraction of the uniform policy's entropy ``log |A|``."""


class DiscreteSACPolicy(ActorPolicy):
    """Categorical policy ``pi(.|s) = softmax(actor(s))``; greedy (argmax) when evaluating.

    :param actor: ``obs -> logits [B, |A|]`` (e.g. :class:`tdrl.utils.net.DiscreteActor`);
        recurrent actors with ``forward(obs, state=None, info=None)`` get the hidden state.
    :param action_space: a ``Discrete`` space.
    :param deterministic_eval: act with the most probable action outside training steps.

    The result holds ``act`` and ``logits``; ``result.dist`` is the ``Categorical``.

    >>> from tdrl.algorithm.policy import make_batch
    >>> p = DiscreteSACPolicy(actor=torch.nn.Linear(4, 3), action_space=gym.spaces.Discrete(3))
    >>> out = p(make_batch({"obs": torch.zeros(2, 4)}, 2))
    >>> out["act"].shape, out["logits"].shape, type(out.dist).__name__
    (torch.Size([2]), torch.Size([2, 3]), 'Categorical')
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        deterministic_eval: bool = True,
        observation_space: gym.Space | None = None,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(f"action_space: expected Discrete, got {type(action_space).__name__}")
        super().__init__(
            actor=actor,
            action_space=action_space,
            deterministic_eval=deterministic_eval,
            observation_space=observation_space,
        )

    def probs(self, obs: Any) -> Categorical:
        """The action distribution ``pi(.|obs)`` (with gradient into the actor)."""
        dist: Categorical = self.dist(obs)[0]  # type: ignore[assignment]
        return dist


class DiscreteSAC(SoftActorCritic):
    """SAC for ``Discrete`` actions with twin ``Q(s) -> [B, |A|]`` critics.

    :param policy: a :class:`DiscreteSACPolicy`.

    The other parameters are :class:`~tdrl.algorithm.actor_critic.SoftActorCritic`'s
    (``critic``: ``obs -> Q [B, |A|]``, e.g. :class:`tdrl.utils.net.QNet`; ``"auto"``
    target entropy: ``0.98 log |A|``).

    >>> from tdrl.utils.net import DiscreteActor, QNet
    >>> space = gym.spaces.Discrete(2)
    >>> alg = DiscreteSAC(policy=DiscreteSACPolicy(actor=DiscreteActor(4, 2), action_space=space),
    ...                   critic=QNet(4, 2, (16,)), alpha=AutoAlpha("auto"))
    >>> round(alg.auto_alpha.target_entropy, 4), alg.q_values(torch.zeros(3, 4))[0].shape
    (0.6793, torch.Size([3, 2]))
    """

    def __init__(
        self, *, policy: DiscreteSACPolicy, **kwargs: Unpack[SoftActorCriticParams]
    ) -> None:
        require_instance("policy", policy, DiscreteSACPolicy, ValueError)
        super().__init__(policy=policy, **kwargs)
        self.policy: DiscreteSACPolicy = policy

    def auto_target_entropy(self) -> float:
        """``0.98 log |A|``: close to the entropy of the uniform policy."""
        n = int(self.policy.action_space.n)  # type: ignore[union-attr, arg-type]
        return AUTO_ENTROPY_RATIO * math.log(n)

    def q_values(
        self,
        obs: Any,
        act: torch.Tensor | None = None,
        target: bool = False,
        detach: bool = False,
    ) -> list[torch.Tensor]:
        """Each critic's ``Q(obs, .) [B, |A|]``, or ``Q(obs, act) [B]`` given ``act``.

        :param target: use the target critics.
        :param detach: no gradient at all (the critics take no action, so nothing else
            could receive one).
        """
        critics: list[Any] = self.critics_old if target else list(self.critics)
        with torch.no_grad() if detach else contextlib.nullcontext():
            qs = [call_model(c, obs)[0] for c in critics]
        if act is None:
            return qs
        index = act.long().reshape(-1, 1)
        return [q.gather(1, index).squeeze(1) for q in qs]

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``sum_a pi(a|s') min_j Q'_j(s', a) + alpha H(pi(.|s'))``."""
        dist = self.policy.probs(obs_next)
        q = torch.min(*self.q_values(obs_next, target=True))
        return (dist.probs * q).sum(-1) + self.alpha_now() * dist.entropy()

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(alpha H + sum_a pi min_j Q_j)`` (critics without gradient),
        and with auto-alpha ``loss_alpha = -mean(log_alpha (H_target - H))``."""
        obs = self.obs_of(td)
        dist = self.policy.probs(obs)
        entropy = dist.entropy()
        q = torch.min(*self.q_values(obs, detach=True))
        alpha = self.alpha_now()
        loss = -(alpha * entropy + (dist.probs * q).sum(-1)).mean()
        return {"loss_actor": loss, **self.temperature_terms(entropy, alpha)}
