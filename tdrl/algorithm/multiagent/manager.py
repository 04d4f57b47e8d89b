"""The multi-agent policy manager: each agent's observations go to that agent's policy.

A multi-agent observation is a TensorDict ``{"agent_id", "obs", "mask"}`` (the layout of
:mod:`tdrl.env.pettingzoo`): row ``i`` belongs to agent ``agent_id[i]`` (an index into the
manager's ``agents``). :class:`MultiAgentPolicyManager` splits a batch by agent, gives each
policy the rows of its agents as a plain single-agent batch (``{"obs", "mask"}``, which the
Q-learning policies mask with :func:`~tdrl.algorithm.qlearning.mask_q`; or ``obs`` alone
when there is no mask), and writes the actions back in row order. Several agents can share
one policy object (parameter sharing): their rows go to it in one call.

:class:`RandomPolicy` is the uniformly random legal player, a fixed opponent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.algorithm.policy import Policy, make_batch
from tdrl.data.batch import Batch

__all__ = ["MultiAgentPolicyManager", "RandomPolicy", "agent_rows"]


def _group(members: Mapping[str, Any], agents: Sequence[str]) -> list[tuple[Any, list[int]]]:
    """``[(member, [agent indices])]`` with each distinct member (by identity) once, in the
    order of its first agent; checks that ``members`` names exactly ``agents``."""
    agents = list(agents)
    if len(set(agents)) != len(agents):
        raise ValueError(f"agents: expected distinct names, got {agents}")
    unknown = [a for a in members if a not in agents]
    if unknown:
        raise KeyError(f"agent: unknown agent {unknown[0]!r}; the env's agents are {agents}")
    missing = [a for a in agents if a not in members]
    if missing:
        raise KeyError(f"agent: no policy for agent {missing[0]!r}; the env's agents are {agents}")
    groups: list[tuple[Any, list[int]]] = []
    for i, agent in enumerate(agents):
        member = members[agent]
        for m, idx in groups:
            if m is member:
                idx.append(i)
                break
        else:
            groups.append((member, [i]))
    return groups


def agent_rows(agent_id: torch.Tensor, agents: Sequence[int]) -> torch.Tensor:
    """Row indices (``[n]``, long) whose ``agent_id`` is one of ``agents``.

    >>> agent_rows(torch.tensor([0, 1, 0, 2]), [0, 2]).tolist()
    [0, 2, 3]
    """
    ids = agent_id.reshape(-1)
    if len(agents) == 1:
        return (ids == agents[0]).nonzero().reshape(-1)
    return torch.isin(ids, torch.as_tensor(agents, device=ids.device)).nonzero().reshape(-1)


class RandomPolicy(Policy):
    """A uniformly random player: a legal action where the observation has a ``mask``.

    :param action_space: a ``Discrete`` space.

    >>> p = RandomPolicy(gym.spaces.Discrete(3))
    >>> mask = torch.tensor([[False, True, False]] * 4)
    >>> obs = TensorDict({"obs": torch.zeros(4, 2), "mask": mask}, [4])
    >>> p(make_batch({"obs": obs}, 4))["act"].tolist()
    [1, 1, 1, 1]
    """

    def __init__(self, action_space: gym.Space) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(
                f"action_space: RandomPolicy needs a Discrete space, got {action_space}"
            )
        super().__init__(action_space, action_bound_method=None)
        self.n_actions = int(action_space.n)

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:  # type: ignore[override]
        """``act``: uniform over the legal actions of each row."""
        obs = batch["obs"]
        n = batch.batch_size[0]
        if isinstance(obs, TensorDictBase) and "mask" in obs:
            scores = torch.rand(n, self.n_actions) + obs["mask"].to(torch.float32).cpu()
            act = scores.argmax(dim=-1)
        else:
            act = torch.randint(self.n_actions, (n,))
        return make_batch({"act": act}, n)


class MultiAgentPolicyManager(Policy):
    """Route each agent's rows to its own policy (shared or separate).

    :param policies: agent name -> policy; one policy object may serve several agents.
    :param agents: the agent names in index order (``env.agents``); ``agent_id`` ``i`` in an
        observation means ``agents[i]``.

    ``forward`` returns ``act`` for every row; ``exploration_noise`` applies each policy's
    own noise to its rows. Setting ``is_within_training_step`` sets it on every policy.

    >>> space = gym.spaces.Discrete(3)
    >>> fixed = RandomPolicy(space)
    >>> m = MultiAgentPolicyManager({"a": fixed, "b": fixed}, agents=["a", "b"])
    >>> obs = TensorDict({"agent_id": torch.tensor([1, 0]), "obs": torch.zeros(2, 4),
    ...                   "mask": torch.tensor([[True, False, False], [False, False, True]])}, [2])
    >>> m(make_batch({"obs": obs}, 2))["act"].tolist()
    [0, 2]
    """

    def __init__(self, policies: Mapping[str, Policy], agents: Sequence[str]) -> None:
        groups = _group(policies, agents)
        first = groups[0][0]
        super().__init__(first.action_space, first.observation_space, action_bound_method=None)
        self.agents: list[str] = list(agents)
        self.policies: dict[str, Policy] = {a: policies[a] for a in self.agents}
        self.members = nn.ModuleList([p for p, _ in groups])
        self._groups = [(p, idx) for p, idx in groups]

    @property  # type: ignore[override]
    def is_within_training_step(self) -> bool:
        """Whether a training step is running (set on every member policy too)."""
        return bool(self.__dict__.get("_within", False))

    @is_within_training_step.setter
    def is_within_training_step(self, value: bool) -> None:
        self.__dict__["_within"] = value
        for member in self.__dict__.get("_modules", {}).get("members", []):
            member.is_within_training_step = value

    def agent_ids(self, obs: Any) -> torch.Tensor:
        """The ``agent_id [B]`` of a multi-agent observation, checked against ``agents``."""
        if not isinstance(obs, TensorDictBase) or "agent_id" not in obs:
            raise KeyError(
                "obs: a multi-agent observation needs an 'agent_id' entry "
                f"({{'agent_id', 'obs', 'mask'}}), got {type(obs).__name__}"
                + (f" with keys {sorted(obs.keys())}" if isinstance(obs, TensorDictBase) else "")
            )
        ids = obs["agent_id"].reshape(-1).long()
        if ids.numel():
            bad = ids[(ids < 0) | (ids >= len(self.agents))]
            if bad.numel():
                raise KeyError(
                    f"agent_id: unknown agent id {int(bad[0])}; the manager knows "
                    f"{dict(enumerate(self.agents))}"
                )
        return ids

    @staticmethod
    def inner(obs: TensorDictBase, rows: torch.Tensor) -> Any:
        """The single-agent observation of ``rows``: ``{"obs", "mask"}`` or ``obs``."""
        if "mask" in obs:
            return obs.select("obs", "mask")[rows]
        return obs["obs"][rows]

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:  # type: ignore[override]
        """``act [B]``: each row's action from its agent's policy."""
        obs = batch["obs"]
        ids = self.agent_ids(obs)
        n = ids.shape[0]
        act: torch.Tensor | None = None
        for policy, idx in self._groups:
            rows = agent_rows(ids, idx)
            if rows.numel() == 0:
                continue
            out = policy(make_batch({"obs": self.inner(obs, rows)}, rows.numel()))
            a = torch.as_tensor(out["act"])
            if act is None:
                act = a.new_zeros((n, *a.shape[1:]))
            act[rows] = a.to(act.dtype)
        if act is None:
            act = torch.zeros(n, dtype=torch.long)
        return make_batch({"act": act}, n)

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Each policy's own exploration noise on the rows of its agents."""
        obs = batch["obs"]
        ids = self.agent_ids(obs)
        is_tensor = isinstance(act, torch.Tensor)
        out = act.clone() if is_tensor else np.array(act, copy=True)
        for policy, idx in self._groups:
            rows = agent_rows(ids, idx)
            if rows.numel() == 0:
                continue
            sub = make_batch({"obs": self.inner(obs, rows)}, rows.numel())
            r = rows if is_tensor else rows.numpy()
            noisy = policy.exploration_noise(out[r], sub)
            out[r] = torch.as_tensor(noisy) if is_tensor else np.asarray(noisy)
        return out

    def compute_action(  # type: ignore[override]
        self, obs: Mapping[str, Any], info: dict[str, Any] | None = None, state: Any = None
    ) -> np.ndarray | int:
        """The action for one env observation dict (``{"agent_id", "obs", "mask"}``): an
        ``int`` for a turn-based env, one action per agent for a parallel one.

        >>> m = MultiAgentPolicyManager({"a": RandomPolicy(gym.spaces.Discrete(2))}, ["a"])
        >>> m.compute_action({"agent_id": 0, "obs": np.zeros(3), "mask": [False, True]})
        1
        """
        scalar = np.ndim(obs["agent_id"]) == 0
        fields = {k: torch.as_tensor(np.asarray(v)) for k, v in obs.items()}
        if scalar:
            fields = {k: v.unsqueeze(0) for k, v in fields.items()}
        if "mask" in fields:
            fields["mask"] = fields["mask"].bool()
        n = fields["agent_id"].shape[0]
        with torch.no_grad():
            act = self.forward(make_batch({"obs": TensorDict(fields, [n])}, n))["act"]
        return int(act[0]) if scalar else act.numpy()
