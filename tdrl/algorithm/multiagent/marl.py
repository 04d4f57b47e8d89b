"""Independent multi-agent learning: every agent's algorithm learns from its own transitions.

:class:`MultiAgentOffPolicyAlgorithm` holds one algorithm per agent (several agents may
share one algorithm: parameter sharing) and fixed policies for agents that do not learn
(:class:`~tdrl.algorithm.multiagent.manager.RandomPolicy`). Acting goes through a
:class:`~tdrl.algorithm.multiagent.manager.MultiAgentPolicyManager`; learning is each
algorithm's own update on its own data::

    for each learning algorithm k (agents A_k):
        D_k  <- transitions of the agents in A_k only:
                (o_a, act_a, r_a, o'_a, terminated_a)
                r_a  = agent a's rewards summed from its move to its next move,
                o'_a = a's own next observation (its next turn, or the game's end)
        k.update(D_k)                       # DQN: n-step target over a's own chain

:class:`~tdrl.algorithm.multiagent.collector.MultiAgentCollector` writes those per-agent
transitions into :class:`MultiAgentBuffer` (one buffer per learning algorithm, one
sub-buffer per (env, agent)), so n-step returns never cross from one agent to another.

On a *joint* batch (rows of all agents, ``obs = {"agent_id", "obs", "mask"}`` and ``rew``
of shape ``[B, n_agents]``, as Tianshou stores it; or TorchRL's layout after
``set_keys(observation="observation", action="action")``), :meth:`route` splits the rows
by agent, picks each row's own reward column and unwraps the observations;
:meth:`~MultiAgentOffPolicyAlgorithm.forward` returns every learner's ``loss_*`` terms as
``"<term>/<agent>"`` and :meth:`learn` takes one gradient step per learner, Tianshou's
``MultiAgentOffPolicyAlgorithm`` update on one batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.multiagent.manager import MultiAgentPolicyManager, _group, agent_rows
from tdrl.algorithm.policy import Policy, _train_mode, within_training_step
from tdrl.data.buffer import VectorReplayBuffer

__all__ = ["MultiAgentBuffer", "MultiAgentOffPolicyAlgorithm"]


class MultiAgentBuffer:
    """One replay buffer per learning algorithm, one sub-buffer per (env, agent).

    :param buffers: the buffers, in the order of the algorithm's learners.
    :param slots: per buffer, ``{agent index: position}``: the transitions of agent ``a``
        in env ``e`` go to sub-buffer ``e * len(slots[k]) + slots[k][a]``.

    >>> buf = MultiAgentBuffer.create([[0], [1, 2]], n_envs=2, size=40)
    >>> len(buf.buffers), buf.buffers[1].buffer_num, buf.ring(1, env=1, agent=2)
    (2, 4, 3)
    """

    def __init__(self, buffers: Sequence[Any], slots: Sequence[Mapping[int, int]]) -> None:
        if len(buffers) != len(slots):
            raise ValueError(f"slots: expected one per buffer ({len(buffers)}), got {len(slots)}")
        self.buffers = list(buffers)
        self.slots = [dict(s) for s in slots]

    @classmethod
    def create(cls, agents: Sequence[Sequence[int]], n_envs: int, size: int) -> MultiAgentBuffer:
        """A :class:`~tdrl.data.VectorReplayBuffer` of ``size`` per learner."""
        bufs = [VectorReplayBuffer(size, n_envs * len(a)) for a in agents]
        return cls(bufs, [{a: i for i, a in enumerate(ag)} for ag in agents])

    def ring(self, k: int, env: int, agent: int) -> int:
        """The sub-buffer of buffer ``k`` that holds ``agent``'s transitions in ``env``."""
        return env * len(self.slots[k]) + self.slots[k][agent]

    def __getitem__(self, k: int) -> Any:
        return self.buffers[k]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.buffers)

    def __len__(self) -> int:
        return sum(len(b) for b in self.buffers)

    def reset(self, keep_statistics: bool = False) -> None:
        """Empty every buffer."""
        for b in self.buffers:
            b.reset(keep_statistics=keep_statistics)


class MultiAgentOffPolicyAlgorithm(Algorithm):
    """Independent off-policy learners behind one multi-agent policy.

    :param algorithms: agent name -> its algorithm (off-policy, e.g. DQN) or a fixed
        :class:`~tdrl.algorithm.base.Policy` that does not learn. One algorithm object may
        serve several agents (shared parameters, one buffer).
    :param agents: the agent names in index order (``env.agents``).

    ``policy`` is the :class:`MultiAgentPolicyManager`; ``learners`` lists the distinct
    learning algorithms and ``learner_agents[k]`` the agent indices of learner ``k``.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    >>> from tdrl.algorithm.multiagent.manager import RandomPolicy
    >>> space = gym.spaces.Discrete(3)
    >>> dqn = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 3), action_space=space))
    >>> ma = MultiAgentOffPolicyAlgorithm({"a": dqn, "b": RandomPolicy(space)}, agents=["a", "b"])
    >>> ma.learner_agents, ma.learner_names
    ([[0]], ['a'])
    """

    def __init__(self, algorithms: Mapping[str, Algorithm | Policy], agents: Sequence[str]) -> None:
        policies: dict[str, Policy] = {}
        for agent, member in algorithms.items():
            if isinstance(member, Algorithm):
                if member.on_policy:
                    raise ValueError(
                        f"algorithms[{agent!r}]: expected an off-policy algorithm, got the "
                        f"on-policy {type(member).__name__}"
                    )
                policies[agent] = member.policy
            elif isinstance(member, Policy):
                policies[agent] = member
            else:
                raise TypeError(
                    f"algorithms[{agent!r}]: expected an Algorithm or a Policy, got "
                    f"{type(member).__name__}"
                )
        manager = MultiAgentPolicyManager(policies, agents)
        super().__init__(manager)
        self.policy: MultiAgentPolicyManager = manager
        self.agents = list(agents)
        learners = [(m, idx) for m, idx in _group(algorithms, agents) if isinstance(m, Algorithm)]
        self.learners = nn.ModuleList([m for m, _ in learners])
        self.learner_agents: list[list[int]] = [idx for _, idx in learners]
        self.learner_names = ["+".join(self.agents[i] for i in idx) for idx in self.learner_agents]

    def learner_of(self, agent: str | int) -> Algorithm:
        """The algorithm that learns for ``agent`` (a name or an index)."""
        i = self.agents.index(agent) if isinstance(agent, str) and agent in self.agents else agent
        for alg, idx in zip(self.learners, self.learner_agents, strict=True):
            if i in idx:
                return alg  # type: ignore[return-value]
        raise KeyError(
            f"agent: no learning algorithm for {agent!r}; learners: {self.learner_names}"
        )

    def make_buffer(self, n_envs: int, size: int) -> MultiAgentBuffer:
        """Per-learner buffers of ``size`` with one sub-buffer per (env, agent)."""
        return MultiAgentBuffer.create(self.learner_agents, n_envs, size)

    # -- joint batches ------------------------------------------------------------------
    def set_keys(self, **kwargs: Any) -> None:
        """Set the keys of the joint batch; every learner and the policy follow (TorchRL's
        layout: ``set_keys(observation="observation", action="action")``)."""
        super().set_keys(**kwargs)
        for alg in self.learners:
            alg.set_keys(**kwargs)  # type: ignore[operator]

    def route(self, td: TensorDictBase) -> list[tuple[int, TensorDictBase]]:
        """Split a joint batch into ``[(learner k, its rows as a single-agent batch)]``.

        Each row keeps its own agent's reward (a reward with one column per agent,
        ``[B, n_agents]``, is indexed by the row's ``agent_id``); the observation and the
        next observation become ``{"obs", "mask"}`` (or ``obs``). The keys are the
        configured ones (Tianshou's ``obs``/``obs_next``/``rew`` by default, TorchRL's
        ``observation``/``("next", "observation")``/``("next", "reward")`` after
        :meth:`set_keys`).
        """
        obs_key, next_key, rew_key = (
            self.tensor_keys.observation,
            self.next_obs_key,
            self.reward_key,
        )
        obs = self.obs_of(td)
        ids = self.policy.agent_ids(obs)
        obs_next = td.get(next_key, None)
        rew = td.get(rew_key, None)
        per_agent = rew is not None and rew.dim() >= 2 and rew.shape[-1] == len(self.agents) > 1
        out: list[tuple[int, TensorDictBase]] = []
        for k, idx in enumerate(self.learner_agents):
            rows = agent_rows(ids, idx)
            if rows.numel() == 0:
                continue
            sub = td.exclude(obs_key, next_key)[rows]
            sub.set(obs_key, self.policy.inner(obs, rows))
            if obs_next is not None:
                sub.set(next_key, self.policy.inner(obs_next, rows))
            if per_agent:
                own = rew[rows, ids[rows]]  # type: ignore[index]
                sub.set(rew_key, own.unsqueeze(-1) if self.torchrl_layout else own)
            out.append((k, sub))
        return out

    def forward(self, td: TensorDictBase) -> TensorDict:
        """Every learner's terms on its rows of a joint batch, as ``"<term>/<agent>"``."""
        out: dict[str, torch.Tensor] = {}
        for k, sub in self.route(td):
            for key, value in self.learners[k](sub).items():
                out[f"{key}/{self.learner_names[k]}"] = value
        return TensorDict(out, [])

    def learn(self, td: TensorDictBase) -> dict[str, float]:
        """One gradient step per learner on its rows of a joint batch (one-step targets,
        or the ``returns`` already in the batch); returns the terms as floats."""
        stats: dict[str, float] = {}
        for k, sub in self.route(td):
            alg: Algorithm = self.learners[k]  # type: ignore[assignment]
            with within_training_step(alg.policy), _train_mode(alg, alg.policy):
                sub = alg.prepare(sub)
                terms = alg._update_with_batch(sub, None, 1)  # type: ignore[arg-type]
            alg.n_updates += 1
            stats.update({f"{key}/{self.learner_names[k]}": v for key, v in terms.items()})
        return _with_total(stats)

    # -- tdrl's update path -------------------------------------------------------------
    def update(self, buffer: Any, batch_size: int | None, repeat: int = 1) -> dict[str, float]:
        """Each learner's own :meth:`~Algorithm.update` on its own buffer (``buffer[k]``);
        a learner whose buffer is still empty is skipped."""
        if not isinstance(buffer, MultiAgentBuffer):
            raise TypeError(
                f"buffer: expected a MultiAgentBuffer (one buffer per learner), got "
                f"{type(buffer).__name__}"
            )
        if len(buffer.buffers) != len(self.learners):
            raise ValueError(
                f"buffer: expected {len(self.learners)} buffers (one per learner), "
                f"got {len(buffer.buffers)}"
            )
        stats: dict[str, float] = {}
        for k, alg in enumerate(self.learners):
            if len(buffer[k]) == 0:
                continue
            terms = alg.update(buffer[k], batch_size, repeat)  # type: ignore[operator]
            stats.update({f"{key}/{self.learner_names[k]}": v for key, v in terms.items()})
        self.n_updates += 1
        return _with_total(stats)

    # -- checkpointing ------------------------------------------------------------------
    def state_dict(  # type: ignore[override]
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> Any:
        """Every learner's full state (with its optimizers) and the fixed policies'."""
        fixed = [p for p in self.policy.members if not any(p is a.policy for a in self.learners)]
        return {
            "learners": [a.state_dict() for a in self.learners],
            "fixed": [p.state_dict() for p in fixed],
            "n_updates": self.n_updates,
        }

    def load_state_dict(  # type: ignore[override]
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """Inverse of :meth:`state_dict`."""
        for a, s in zip(self.learners, state_dict["learners"], strict=True):
            a.load_state_dict(s, strict=strict)
        fixed = [p for p in self.policy.members if not any(p is a.policy for a in self.learners)]
        for p, s in zip(fixed, state_dict.get("fixed", []), strict=True):
            p.load_state_dict(s, strict=strict)
        self.n_updates = int(state_dict.get("n_updates", 0))


def _with_total(stats: dict[str, float]) -> dict[str, float]:
    """Add ``loss``: the sum of the learners' ``loss_*`` terms."""
    if stats:
        stats["loss"] = float(
            np.sum([v for k, v in stats.items() if k.split("/")[0].startswith("loss_")])
        )
    return stats
