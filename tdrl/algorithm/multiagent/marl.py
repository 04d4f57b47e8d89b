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

Tianshou's way works too: ``MultiAgentOffPolicyAlgorithm(algorithms=[...], env=env)``
trained by the plain :class:`~tdrl.data.Collector` (``Collector(algorithm, envs,
VectorReplayBuffer(...))``: the policy manager acts, the buffer stores joint transitions).
:meth:`~MultiAgentOffPolicyAlgorithm.update` on such a *joint* buffer samples one batch,
splits it by ``agent_id`` and gives each learner its own rows, with its own reward column
in the batch and in the buffer its n-step returns (or GAE) read, as Tianshou does (the
differences: ``docs/differences.md``, "PettingZoo agents and Tianshou's multi-agent
forms"). :class:`MARLRandomDiscreteMaskedOffPolicyAlgorithm` is Tianshou's
random legal player as an algorithm that never learns, and
:class:`MultiAgentOnPolicyAlgorithm` the same manager over on-policy learners.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.algorithm.algorithm_base import Algorithm, _reset_flag
from tdrl.algorithm.multiagent.manager import (
    MultiAgentPolicyManager,
    RandomPolicy,
    _group,
    agent_rows,
)
from tdrl.algorithm.policy import Policy, _train_mode, within_training_step
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer

__all__ = [
    "MARLRandomDiscreteMaskedOffPolicyAlgorithm",
    "MultiAgentBuffer",
    "MultiAgentOffPolicyAlgorithm",
    "MultiAgentOnPolicyAlgorithm",
]


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


class MARLRandomDiscreteMaskedOffPolicyAlgorithm(Algorithm):
    """A player that moves uniformly at random among its legal actions and never learns.

    Tianshou's fixed opponent for multi-agent games, as an algorithm: its ``policy`` is a
    :class:`~tdrl.algorithm.multiagent.manager.RandomPolicy` (uniform over ``mask == True``
    where the observation has a ``mask``, else over the whole ``Discrete`` space), it has
    no parameters, and :meth:`update` takes no gradient step. Multi-agent algorithms treat
    it as a fixed policy: no buffer is kept and no update is run for it.

    :param action_space: the agents' ``Discrete`` action space.

    >>> from tdrl.algorithm.policy import make_batch
    >>> alg = MARLRandomDiscreteMaskedOffPolicyAlgorithm(gym.spaces.Discrete(3))
    >>> mask = torch.tensor([[False, False, True], [True, False, False]])
    >>> obs = TensorDict({"obs": torch.zeros(2, 4), "mask": mask}, [2])
    >>> alg.policy(make_batch({"obs": obs}, 2))["act"].tolist(), dict(alg.update(None, 8))
    ([2, 0], {})
    """

    learns: ClassVar[bool] = False
    """Whether the algorithm takes gradient steps (multi-agent algorithms skip it if not)."""

    Policy: ClassVar[type[RandomPolicy]] = RandomPolicy
    """The policy class (Tianshou's nested ``MARLRandomDiscreteMaskedOffPolicyAlgorithm.Policy``
    is its random policy)."""

    def __init__(self, action_space: gym.Space) -> None:
        super().__init__(RandomPolicy(action_space))

    def update(self, buffer: Any, batch_size: int | None, repeat: int = 1) -> UpdateStats:
        """Nothing to learn: empty statistics, whatever the buffer holds."""
        return UpdateStats()

    def _update_with_batch(self, batch: Batch, batch_size: int | None, repeat: int) -> UpdateStats:
        """Nothing to learn: empty statistics."""
        return UpdateStats()


def _learns(member: Any) -> bool:
    """Whether ``member`` is an algorithm that takes gradient steps."""
    return isinstance(member, Algorithm) and bool(getattr(member, "learns", True))


class _AgentView:
    """A joint replay buffer (one row per env step, ``rew [N, n_agents]``) as the learner
    of agent ``column`` reads it: ``rew`` is that agent's reward column (``None``: the
    buffer's reward as it is) and the rows ``buffer[index]`` return hold that column and
    single-agent observations (``{"obs", "mask"}`` or ``obs``); everything else is the
    buffer's."""

    def __init__(self, buffer: Any, column: int | None) -> None:
        self.buffer = buffer
        self.column = column

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.buffer, name)

    @property
    def rew(self) -> Any:
        rew = self.buffer.rew
        return rew if self.column is None else rew[:, self.column]

    def __len__(self) -> int:
        return len(self.buffer)

    def __getitem__(self, index: Any) -> Any:
        rows = self.buffer[index]
        if not isinstance(rows, TensorDictBase):
            return rows
        out = rows.exclude("obs", "obs_next", "rew")
        for key in ("obs", "obs_next"):
            value = rows.get(key, None)
            if value is not None:
                out.set(key, _single_agent(value))
        rew = rows.get("rew", None)
        if rew is not None:
            out.set("rew", rew if self.column is None or rew.dim() < 2 else rew[:, self.column])
        return out


def _single_agent(obs: Any) -> Any:
    """``{"obs", "mask"}`` (or ``obs``) of a multi-agent observation; others as they are."""
    if isinstance(obs, TensorDictBase) and "agent_id" in obs:
        return obs.select("obs", "mask") if "mask" in obs else obs["obs"]
    return obs


class MultiAgentOffPolicyAlgorithm(Algorithm):
    """Independent off-policy learners behind one multi-agent policy.

    :param algorithms: agent name -> its algorithm (off-policy, e.g. DQN) or a fixed
        :class:`~tdrl.algorithm.base.Policy` that does not learn; or, as in Tianshou, a
        list with one member per agent in the order of ``env.agents``. One algorithm
        object may serve several agents (shared parameters, one buffer). An algorithm that
        never learns (:class:`MARLRandomDiscreteMaskedOffPolicyAlgorithm`) counts as a
        fixed policy.
    :param agents: the agent names in index order (``env.agents``).
    :param env: instead of ``agents``: the :class:`~tdrl.env.pettingzoo.PettingZooEnv`
        whose ``agents`` name them (Tianshou's ``env=``).

    ``policy`` is the :class:`MultiAgentPolicyManager`; ``learners`` lists the distinct
    learning algorithms and ``learner_agents[k]`` the agent indices of learner ``k``;
    :meth:`get_algorithm` returns any agent's member.

    It trains in two ways: with tdrl's
    :class:`~tdrl.algorithm.multiagent.collector.MultiAgentCollector`, whose
    :class:`MultiAgentBuffer` holds each agent's own transitions, or, as in Tianshou, with
    the plain :class:`~tdrl.data.Collector` and a joint replay buffer (see :meth:`update`).

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    >>> from tdrl.algorithm.multiagent.manager import RandomPolicy
    >>> space = gym.spaces.Discrete(3)
    >>> dqn = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 3), action_space=space))
    >>> ma = MultiAgentOffPolicyAlgorithm({"a": dqn, "b": RandomPolicy(space)}, agents=["a", "b"])
    >>> ma.learner_agents, ma.learner_names
    ([[0]], ['a'])
    >>> opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(space)
    >>> ma = MultiAgentOffPolicyAlgorithm([opponent, dqn], agents=["a", "b"])
    >>> ma.learner_names, ma.get_algorithm("a") is opponent
    (['b'], True)
    """

    on_policy = False

    def __init__(
        self,
        algorithms: Mapping[str, Algorithm | Policy] | Sequence[Algorithm | Policy],
        agents: Sequence[str] | None = None,
        *,
        env: Any = None,
    ) -> None:
        names = _agent_names(agents, env)
        if isinstance(algorithms, Mapping):
            members: dict[str, Algorithm | Policy] = dict(algorithms)
        else:
            members_list = list(algorithms)
            if len(members_list) != len(names):
                raise ValueError(
                    f"algorithms: expected one per agent ({len(names)}: {names}), "
                    f"got {len(members_list)}"
                )
            members = dict(zip(names, members_list, strict=True))
        kind, other = ("on", "off") if self.on_policy else ("off", "on")
        policies: dict[str, Policy] = {}
        for agent, member in members.items():
            if isinstance(member, Algorithm):
                if _learns(member) and member.on_policy != self.on_policy:
                    raise ValueError(
                        f"algorithms[{agent!r}]: expected an {kind}-policy algorithm, got the "
                        f"{other}-policy {type(member).__name__}"
                    )
                policies[agent] = member.policy
            elif isinstance(member, Policy):
                policies[agent] = member
            else:
                raise TypeError(
                    f"algorithms[{agent!r}]: expected an Algorithm or a Policy, got "
                    f"{type(member).__name__}"
                )
        manager = MultiAgentPolicyManager(policies, names)
        super().__init__(manager)
        self.policy: MultiAgentPolicyManager = manager
        self.agents = list(names)
        self.algorithms = {a: members[a] for a in self.agents}
        learners = [(m, idx) for m, idx in _group(members, names) if _learns(m)]
        self.learners = nn.ModuleList([m for m, _ in learners])
        self.learner_agents: list[list[int]] = [idx for _, idx in learners]
        self.learner_names = ["+".join(self.agents[i] for i in idx) for idx in self.learner_agents]

    def _index(self, agent: str | int) -> int:
        if isinstance(agent, str) and agent in self.agents:
            return self.agents.index(agent)
        if isinstance(agent, int | np.integer) and 0 <= int(agent) < len(self.agents):
            return int(agent)
        raise KeyError(f"agent: unknown agent {agent!r}; the agents are {self.agents}")

    def get_algorithm(self, agent: str | int) -> Algorithm | Policy:
        """The algorithm (or fixed policy) given for ``agent`` (a name or an index)."""
        return self.algorithms[self.agents[self._index(agent)]]

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

    def _joint(self, td: TensorDictBase) -> tuple[Any, torch.Tensor, Any, Any, bool]:
        """``(obs, agent ids, obs_next, rew, rew has one column per agent)`` of a joint
        batch."""
        obs = self.obs_of(td)
        ids = self.policy.agent_ids(obs)
        obs_next = td.get(self.next_obs_key, None)
        rew = td.get(self.reward_key, None)
        per_agent = rew is not None and rew.dim() >= 2 and rew.shape[-1] == len(self.agents) > 1
        return obs, ids, obs_next, rew, per_agent

    def _rows(
        self,
        td: TensorDictBase,
        joint: tuple[Any, torch.Tensor, Any, Any, bool],
        rows: torch.Tensor,
    ) -> TensorDictBase:
        """The single-agent batch of ``rows``: observations unwrapped, each row's own
        reward column."""
        obs, ids, obs_next, rew, per_agent = joint
        obs_key, next_key, rew_key = (
            self.tensor_keys.observation,
            self.next_obs_key,
            self.reward_key,
        )
        sub = td.exclude(obs_key, next_key)[rows]
        sub.set(obs_key, self.policy.inner(obs, rows))
        if obs_next is not None:
            sub.set(next_key, self.policy.inner(obs_next, rows))
        if per_agent:
            own = rew[rows, ids[rows]]
            sub.set(rew_key, own.unsqueeze(-1) if self.torchrl_layout else own)
        return sub

    def route(self, td: TensorDictBase) -> list[tuple[int, TensorDictBase]]:
        """Split a joint batch into ``[(learner k, its rows as a single-agent batch)]``.

        Each row keeps its own agent's reward (a reward with one column per agent,
        ``[B, n_agents]``, is indexed by the row's ``agent_id``); the observation and the
        next observation become ``{"obs", "mask"}`` (or ``obs``). The keys are the
        configured ones (Tianshou's ``obs``/``obs_next``/``rew`` by default, TorchRL's
        ``observation``/``("next", "observation")``/``("next", "reward")`` after
        :meth:`set_keys`).
        """
        joint = self._joint(td)
        out: list[tuple[int, TensorDictBase]] = []
        for k, idx in enumerate(self.learner_agents):
            rows = agent_rows(joint[1], idx)
            if rows.numel() == 0:
                continue
            out.append((k, self._rows(td, joint, rows)))
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
        """Update every learner from ``buffer``.

        * a :class:`MultiAgentBuffer` (tdrl's ``MultiAgentCollector``): each learner's own
          :meth:`~Algorithm.update` on its own buffer ``buffer[k]``; a learner whose buffer
          is still empty is skipped;
        * any other replay buffer holds *joint* transitions (the plain
          :class:`~tdrl.data.Collector`, as in Tianshou): off-policy, ``repeat`` times one
          sample of ``batch_size`` rows split by ``agent_id``; on-policy, the whole buffer
          once, each learner then running its ``repeat`` epochs of ``batch_size``
          minibatches. Each learner preprocesses its own rows (n-step returns, GAE) with
          its agent's reward column of the buffer, takes its gradient step(s) and writes
          its priorities back. ``buffer=None`` does nothing.
        """
        if buffer is None:
            return {}
        if not isinstance(buffer, MultiAgentBuffer):
            if not (hasattr(buffer, "sample") and hasattr(buffer, "sample_indices")):
                raise TypeError(
                    "buffer: expected a MultiAgentBuffer (one buffer per learner) or a replay "
                    f"buffer of joint transitions, got {type(buffer).__name__}"
                )
            return self._update_joint(buffer, batch_size, repeat)
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

    def _update_joint(self, buffer: Any, batch_size: int | None, repeat: int) -> dict[str, float]:
        """:meth:`update` on a joint replay buffer."""
        if len(buffer) == 0:
            raise ValueError(
                "buffer: expected a buffer holding transitions, got an empty one (len 0); "
                "collect data before updating"
            )
        stats: dict[str, float] = {}
        if self.on_policy:
            indices = np.asarray(buffer.sample_indices(0))
            stats = self._learn_joint(buffer[indices], buffer, indices, batch_size, repeat)
        else:
            if batch_size is None or batch_size <= 0:
                raise ValueError(
                    f"batch_size: expected an int > 0 for an off-policy update, got {batch_size!r}"
                )
            for _ in range(repeat):
                batch, indices = buffer.sample(batch_size)
                stats = self._learn_joint(batch, buffer, np.asarray(indices), batch_size, 1)
        self.n_updates += 1
        return _with_total(stats)

    def _learn_joint(
        self,
        td: TensorDictBase,
        buffer: Any,
        indices: np.ndarray,
        batch_size: int | None,
        repeat: int,
    ) -> dict[str, float]:
        """Each learner's update on its rows of the joint batch ``td`` (``buffer[indices]``)."""
        joint = self._joint(td)
        ids = joint[1]
        stats: dict[str, float] = {}
        for k, idx in enumerate(self.learner_agents):
            alg: Algorithm = self.learners[k]  # type: ignore[assignment]
            parts: list[TensorDictBase] = []
            where: list[np.ndarray] = []
            alg._in_update = True
            with (
                within_training_step(alg.policy),
                _train_mode(alg, alg.policy),
                _reset_flag(alg, "_in_update"),
            ):
                for a in idx:
                    rows = agent_rows(ids, [a])
                    if rows.numel() == 0:
                        continue
                    at = indices[rows.cpu().numpy()]
                    view = _AgentView(buffer, a if joint[4] else None)
                    parts.append(
                        alg.preprocess(alg._on_device(self._rows(td, joint, rows)), view, at)
                    )
                    where.append(at)
                if not parts:
                    continue
                sub = parts[0] if len(parts) == 1 else torch.cat(parts)  # type: ignore[arg-type]
                at = where[0] if len(where) == 1 else np.concatenate(where)
                terms = alg._update_with_batch(sub, batch_size, repeat)  # type: ignore[arg-type]
                alg.postprocess(sub, buffer, at)  # type: ignore[arg-type]
            for sched in alg.lr_schedulers:
                sched.step()
            alg.n_updates += 1
            stats.update({f"{key}/{self.learner_names[k]}": v for key, v in terms.items()})
        return stats

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


class MultiAgentOnPolicyAlgorithm(MultiAgentOffPolicyAlgorithm):
    """Independent on-policy learners (e.g. PPO) behind one multi-agent policy.

    Tianshou's ``MultiAgentOnPolicyAlgorithm``: the parameters are
    :class:`MultiAgentOffPolicyAlgorithm`'s, every learning member must be on-policy, and
    :meth:`~MultiAgentOffPolicyAlgorithm.update` takes the whole buffer (joint, from the
    plain :class:`~tdrl.data.Collector`; or a :class:`MultiAgentBuffer`), each learner
    computing its returns and advantages on its own rows with its own reward column, then
    running its ``repeat`` epochs. Train it with the ``OnPolicyTrainer``.

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    >>> space = gym.spaces.Discrete(2)
    >>> dqn = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=space))
    >>> MultiAgentOnPolicyAlgorithm([dqn], agents=["a"])
    Traceback (most recent call last):
      ...
    ValueError: algorithms['a']: expected an on-policy algorithm, got the off-policy DQN
    """

    on_policy = True


def _agent_names(agents: Sequence[str] | None, env: Any) -> list[str]:
    """The agent names from ``agents`` or ``env.agents`` (they must agree when both are
    given)."""
    if env is not None:
        from_env = getattr(env, "agents", None)
        if from_env is None:
            raise TypeError(
                f"env: expected a PettingZooEnv (with agents), got {type(env).__name__}"
            )
        if agents is not None and list(agents) != list(from_env):
            raise ValueError(f"agents: {list(agents)} differ from env.agents {list(from_env)}")
        return list(from_env)
    if agents is None:
        raise TypeError("agents: pass the agent names (agents=env.agents) or env=")
    return list(agents)


def _with_total(stats: dict[str, float]) -> dict[str, float]:
    """Add ``loss``: the sum of the learners' ``loss_*`` terms."""
    if stats:
        stats["loss"] = float(
            np.sum([v for k, v in stats.items() if k.split("/")[0].startswith("loss_")])
        )
    return stats
