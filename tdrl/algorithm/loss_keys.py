"""Where a loss finds its data: Tianshou's keys or TorchRL's, and TorchRL's value estimators.

:class:`LossKeys` is the part of :class:`~tdrl.algorithm.algorithm_base.Algorithm` that
reads a batch: the configurable keys (``set_keys``: Tianshou's ``obs``/``act``/``rew``
by default, TorchRL's ``observation``/``action`` with reward/done/terminated under
``"next"``), the accessors the losses use (:meth:`LossKeys.obs_of`,
:meth:`LossKeys.transition_of`, ...) and the one-step targets of a TorchRL batch
(:meth:`LossKeys.one_step_returns`, :meth:`LossKeys.make_value_estimator`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from tensordict import NestedKey, TensorDictBase

from tdrl.algorithm.policy import Policy

__all__ = ["LossKeys", "weighted_mean"]


def weighted_mean(x: torch.Tensor, weight: torch.Tensor | None, cast: bool = False) -> torch.Tensor:
    """``mean(x * weight)`` with prioritized-replay importance weights, ``mean(x)`` without
    (``weight=None``); ``cast``: the weights in ``x``'s dtype first.

    >>> weighted_mean(torch.tensor([1.0, 3.0]), torch.tensor([1.0, 0.0])).item()
    0.5
    >>> weighted_mean(torch.tensor([1.0, 3.0]), None).item()
    2.0
    """
    if weight is None:
        return x.mean()
    return (x * (weight.to(x.dtype) if cast else weight)).mean()


class LossKeys:
    """Key layout mixin of :class:`~tdrl.algorithm.algorithm_base.Algorithm` (placed before
    TorchRL's ``LossModule`` in its bases)."""

    policy: Policy
    tensor_keys: Any
    _value_estimator: Any

    @dataclass
    class _AcceptedKeys:
        """Configurable keys (``set_keys``); Tianshou's names by default.

        observation: the observation key (the next one is ``obs_next`` for Tianshou's
            layout, ``("next", observation)`` otherwise).
        action: the action key.
        reward, done, terminated: looked up under ``"next"`` in TorchRL's layout (their
            TorchRL names ``reward``, ``done``, ``terminated`` are the defaults there).
        sample_log_prob: where the policy writes the log-probability of a sampled action.
        priority: where the loss writes ``|td_error|`` for a prioritized TorchRL buffer.
        """

        observation: NestedKey = "obs"
        action: NestedKey = "act"
        reward: NestedKey = "rew"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        sample_log_prob: NestedKey = "action_log_prob"
        priority: NestedKey = "td_error"

    _TIANSHOU_TO_TORCHRL: ClassVar[dict[str, str]] = {
        "rew": "reward",
        "done": "done",
        "terminated": "terminated",
    }

    def set_keys(self, **kwargs: Any) -> None:
        """Set tensordict keys (TorchRL's ``LossModule.set_keys``); the policy follows.

        >>> from gymnasium.spaces import Discrete
        >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
        >>> alg = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=Discrete(2)))
        >>> alg.set_keys(observation="observation", action="action")
        >>> alg.policy.in_keys, alg.policy.out_keys, alg.reward_key
        (['observation'], ['action'], ('next', 'reward'))
        """
        super().set_keys(**kwargs)  # type: ignore[misc]  # LossModule.set_keys (the MRO)
        self.policy.set_keys(self.tensor_keys.observation, self.tensor_keys.action)
        self.policy.log_prob_key = self.tensor_keys.sample_log_prob

    @property
    def torchrl_layout(self) -> bool:
        """Whether the keys point at TorchRL's layout (observation key other than ``obs``)."""
        return self.tensor_keys.observation != "obs"

    def _next_key(self, name: str) -> NestedKey:
        key = getattr(self.tensor_keys, name)
        if not self.torchrl_layout:
            return key
        key = self._TIANSHOU_TO_TORCHRL.get(key, key) if isinstance(key, str) else key
        return ("next", *key) if isinstance(key, tuple) else ("next", key)

    @property
    def next_obs_key(self) -> NestedKey:
        """``obs_next`` (Tianshou) or ``("next", observation)`` (TorchRL)."""
        if not self.torchrl_layout:
            return "obs_next"
        obs = self.tensor_keys.observation
        return ("next", *obs) if isinstance(obs, tuple) else ("next", obs)

    @property
    def reward_key(self) -> NestedKey:
        """``rew`` (Tianshou) or ``("next", reward)`` (TorchRL)."""
        return self._next_key("reward")

    @property
    def terminated_key(self) -> NestedKey:
        """``terminated`` (Tianshou) or ``("next", terminated)`` (TorchRL)."""
        return self._next_key("terminated")

    def _get(self, td: TensorDictBase, key: NestedKey, name: str) -> torch.Tensor:
        """``td[key]``; a missing key raises naming the key and the keys present."""
        value = td.get(key, None)
        if value is None:
            present = sorted(str(k) for k in td.keys(True, True))
            raise KeyError(
                f"{type(self).__name__}: the {name} key {key!r} is missing; the batch has "
                f"{present}. Use set_keys(...) to point the loss at your layout."
            )
        return value

    def obs_of(self, td: TensorDictBase) -> Any:
        """The observation of a batch under the configured key."""
        return self._get(td, self.tensor_keys.observation, "observation")

    def act_of(self, td: TensorDictBase) -> torch.Tensor:
        """The stored raw action: in TorchRL's layout the env action is mapped back with
        :meth:`Policy.map_action_inverse_torch` (the policy wrote it in the env's range)."""
        act = self._get(td, self.tensor_keys.action, "action")
        return self.policy.map_action_inverse_torch(act) if self.torchrl_layout else act

    def transition_of(self, td: TensorDictBase) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """``(next obs, reward [B], terminated [B] as float)`` under the configured keys."""
        obs_next = self._get(td, self.next_obs_key, "next observation")
        rew = self._get(td, self.reward_key, "reward").reshape(-1)
        term = self._get(td, self.terminated_key, "terminated").reshape(-1)
        return obs_next, rew, term.to(rew.dtype if rew.is_floating_point() else torch.float32)

    @staticmethod
    def weights(td: TensorDictBase) -> torch.Tensor | None:
        """Prioritized-replay importance weights ``[B]`` (tdrl's ``weight`` or TorchRL's
        ``priority_weight``), or ``None``."""
        for key in ("weight", "priority_weight"):
            if key in td:
                return td.get(key).reshape(-1)
        return None

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """The bootstrap value ``V'(s') [B]`` of the off-policy families (no grad)."""
        raise NotImplementedError

    def one_step_returns(self, td: TensorDictBase) -> TensorDictBase:
        """Set ``returns`` on a TorchRL batch that has none: by default TorchRL's one-step
        TD target ``r + gamma (1 - terminated) V'(s')`` (:meth:`next_value`); after
        :meth:`make_value_estimator`, that estimator's target over the same ``V'``.

        A vector-valued ``V'`` (``[B, M]`` quantiles: IQN, FQF) gets the same target per
        entry, and TorchRL's (scalar) estimators do not apply to it.
        """
        if "returns" in td:
            return td
        est = self._value_estimator
        obs_next, rew, term = self.transition_of(td)
        with torch.no_grad():
            v = self.next_value(obs_next).to(rew.dtype)
        if est is not None and v.dim() > 1:
            raise NotImplementedError(
                f"value_type: {type(self).__name__} bootstraps a vector of {v.shape[1]} values "
                f"and supports only its own one-step target, got {type(est).__name__}"
            )
        if est is not None:
            target = est.value_estimate(td, next_value=v.reshape(*td.batch_size, 1))
            td.set("returns", target.reshape(-1))
            return td
        gamma: float = self.gamma  # type: ignore[attr-defined]
        if v.dim() > 1:  # per entry: [B, 1] rewards and masks against [B, M] values
            rew, term = rew.unsqueeze(-1), term.unsqueeze(-1)
        td.set("returns", rew + gamma * (1.0 - term) * v)
        return td

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> None:
        """Choose how a TorchRL batch's target is estimated, as TorchRL's losses do.

        ``ValueEstimators.TD0`` (the default, ``gamma`` = the algorithm's), ``TD1`` or
        ``TDLambda`` (``lmbda=...``) build TorchRL's estimator of that kind over
        :meth:`next_value`; an estimator instance is used as given. The keys follow the
        loss's ``reward``/``done``/``terminated`` keys. tdrl's own buffer path keeps its
        n-step returns.

        >>> from torchrl.objectives import ValueEstimators
        >>> from gymnasium.spaces import Discrete
        >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
        >>> alg = DQN(policy=DQNPolicy(model=torch.nn.Linear(2, 2), action_space=Discrete(2)))
        >>> alg.make_value_estimator(ValueEstimators.TDLambda, lmbda=0.9)
        >>> type(alg._value_estimator).__name__, alg._value_estimator.gamma.item()
        ('TDLambdaEstimator', 0.9900000095367432)
        """
        from torchrl.objectives import ValueEstimators
        from torchrl.objectives.value import (
            TD0Estimator,
            TD1Estimator,
            TDLambdaEstimator,
            ValueEstimatorBase,
        )

        if isinstance(value_type, ValueEstimatorBase):
            self._value_estimator = value_type
            return
        value_type = ValueEstimators.TD0 if value_type is None else value_type
        classes = {
            ValueEstimators.TD0: TD0Estimator,
            ValueEstimators.TD1: TD1Estimator,
            ValueEstimators.TDLambda: TDLambdaEstimator,
        }
        if value_type not in classes or not hasattr(self, "gamma"):
            raise NotImplementedError(
                f"value_type: {type(self).__name__} supports "
                f"{[v.name for v in classes] if hasattr(self, 'gamma') else []}, "
                f"got {value_type}"
            )
        hyperparams.setdefault("gamma", self.gamma)
        est = classes[value_type](value_network=None, **hyperparams)
        self.value_type = value_type
        self._value_estimator = est
        self._forward_value_estimator_keys()

    def _forward_value_estimator_keys(self, **kwargs: Any) -> None:
        est = self.__dict__.get("_value_estimator")
        if est is None:
            return
        names: dict[str, NestedKey] = {}
        for name in ("reward", "done", "terminated"):
            key = self._next_key(name)  # the estimator looks these up under "next" itself
            if isinstance(key, tuple) and key[0] == "next":
                key = key[1:] if len(key) > 2 else key[1]
            names[name] = key
        est.set_keys(**names)
