"""PettingZoo environments as gymnasium-style environments with an agent id per observation.

Two wrappers, one observation layout (a dict):

* ``agent_id``: the index (into ``env.agents``) of the agent that is to act;
* ``obs``: that agent's observation;
* ``mask``: its legal actions (``True`` = legal; all ``True`` when the game has no mask).

:class:`PettingZooEnv` wraps a turn-based (AEC) environment such as tic-tac-toe: one agent
acts per step, ``agent_id`` is a scalar, and ``step(action)`` returns the rewards of *every*
agent for that step (an array indexed like ``env.agents``), as Tianshou's wrapper does.
:class:`PettingZooParallelEnv` wraps a parallel environment such as pistonball: every agent
acts at once, so ``agent_id`` is ``arange(n_agents)``, ``obs`` and ``mask`` stack the
agents' rows and ``step`` takes one action per agent.

>>> from pettingzoo.classic import tictactoe_v3
>>> env = PettingZooEnv(tictactoe_v3.env())
>>> obs, info = env.reset(seed=0)
>>> env.agents, int(obs["agent_id"]), obs["obs"].shape, obs["mask"].tolist()[:3]
(['player_1', 'player_2'], 0, (3, 3, 2), [True, True, True])
>>> obs, rew, terminated, truncated, info = env.step(4)
>>> int(obs["agent_id"]), rew.tolist(), bool(obs["mask"][4])
(1, [0.0, 0.0], False)

``observation_space`` (a :class:`PettingZooObservationSpace`) describes those keys, and its
item lookup also answers PettingZoo's own keys, which is what Tianshou's
``observation_space`` (PettingZoo's per-agent space) offers:

>>> sorted(env.observation_space.spaces), env.observation_space.spaces["observation"].shape
(['agent_id', 'mask', 'obs'], (3, 3, 2))
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["PettingZooEnv", "PettingZooObservationSpace", "PettingZooParallelEnv"]


def _spaces(env: Any, agents: list[str]) -> tuple[gym.Space, gym.Space, bool]:
    """``(observation space, action space, has_mask)``; every agent must share them."""
    obs_space = env.observation_space(agents[0])
    act_space = env.action_space(agents[0])
    for agent in agents[1:]:
        if env.observation_space(agent) != obs_space:
            raise ValueError(
                f"observation_space: every agent needs the same space; {agents[0]!r} has "
                f"{obs_space}, {agent!r} has {env.observation_space(agent)} "
                "(SuperSuit's pad_observations_v0 can make them equal)"
            )
        if env.action_space(agent) != act_space:
            raise ValueError(
                f"action_space: every agent needs the same space; {agents[0]!r} has "
                f"{act_space}, {agent!r} has {env.action_space(agent)} "
                "(SuperSuit's pad_action_space_v0 can make them equal)"
            )
    has_mask = isinstance(obs_space, gym.spaces.Dict) and "action_mask" in obs_space.spaces
    return obs_space, act_space, has_mask


class _AliasedSpaces(dict):  # type: ignore[type-arg]
    """``PettingZooObservationSpace.spaces``: the emitted keys; a lookup of a key it does
    not hold falls back to ``aliases`` (PettingZoo's own keys)."""

    aliases: dict[str, gym.Space]

    def __missing__(self, key: str) -> gym.Space:
        aliases = self.__dict__.get("aliases", {})
        if key in aliases:
            return aliases[key]  # type: ignore[no-any-return]
        raise KeyError(key)


class PettingZooObservationSpace(gym.spaces.Dict):
    """The observation space of :class:`PettingZooEnv` and :class:`PettingZooParallelEnv`.

    A ``Dict`` of the keys the wrapper emits: ``agent_id`` (``Discrete(n_agents)``),
    ``obs`` (the agent's observation) and, for discrete actions, ``mask``
    (``MultiBinary(n_actions)``). Iterating, sampling, ``contains`` and the vector envs'
    shared-memory layout see exactly these keys.

    Looking a key up (``space["observation"]`` or ``space.spaces["observation"]``) also
    answers PettingZoo's own keys, which is what Tianshou's ``observation_space`` (the
    PettingZoo per-agent space itself) offers: ``"observation"`` is the agent's observation
    space (the same space as ``"obs"``) and ``"action_mask"`` PettingZoo's mask space when
    the game has one. ``pettingzoo_space`` is PettingZoo's own per-agent space unchanged.

    :param pettingzoo_space: PettingZoo's per-agent observation space.
    :param action_space: the agents' (shared) action space.
    :param n_agents: the number of agents.

    >>> raw = gym.spaces.Dict({"observation": gym.spaces.Box(0, 1, (2,)),
    ...                        "action_mask": gym.spaces.Box(0, 1, (3,), np.int8)})
    >>> space = PettingZooObservationSpace(raw, gym.spaces.Discrete(3), n_agents=2)
    >>> list(space.spaces), int(space["agent_id"].n), space["observation"] is space["obs"]
    (['agent_id', 'mask', 'obs'], 2, True)
    >>> space.spaces["action_mask"].dtype, space.pettingzoo_space is raw
    (dtype('int8'), True)
    """

    def __init__(self, pettingzoo_space: gym.Space, action_space: gym.Space, n_agents: int) -> None:
        has_mask = (
            isinstance(pettingzoo_space, gym.spaces.Dict)
            and "action_mask" in pettingzoo_space.spaces
        )
        inner = pettingzoo_space["observation"] if has_mask else pettingzoo_space  # type: ignore[index]
        spaces: dict[str, gym.Space] = {"agent_id": gym.spaces.Discrete(n_agents), "obs": inner}
        if isinstance(action_space, gym.spaces.Discrete):
            spaces["mask"] = gym.spaces.MultiBinary(int(action_space.n))
        super().__init__(spaces)
        self.pettingzoo_space = pettingzoo_space
        aliased = _AliasedSpaces(self.spaces)
        aliased.aliases = {"observation": inner}
        if has_mask:
            aliased.aliases["action_mask"] = pettingzoo_space["action_mask"]  # type: ignore[index]
        self.spaces = aliased


class PettingZooEnv(gym.Env):  # type: ignore[type-arg]
    """A turn-based (AEC) PettingZoo environment with gymnasium's ``reset``/``step``.

    :param env: a PettingZoo ``AECEnv`` (e.g. ``tictactoe_v3.env()``). All agents need
        the same observation and action spaces.

    ``agents`` lists the agent names (``env.possible_agents``); ``agent_idx`` maps a name to
    its index. The observation is ``{"agent_id", "obs", "mask"}`` for the agent to act
    (``mask`` only for discrete actions); ``agent_id`` is the agent's index into ``agents``
    (Tianshou's wrapper emits the name: ``agents[agent_id]`` is that name), so that it can
    live in tensors and replay buffers. ``observation_space`` is a
    :class:`PettingZooObservationSpace`: the emitted keys, with PettingZoo's own keys
    (``"observation"``, ``"action_mask"``) answered on lookup as by Tianshou's.
    ``step(action)`` returns ``(obs, rewards, terminated, truncated, info)`` where
    ``rewards[i]`` is agent ``i``'s reward for this step and ``terminated``/``truncated``
    are the next agent's flags: the game is over when either is set. :meth:`observe` gives
    any agent's current observation (the final observation of an agent that does not move
    last).
    """

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self, env: Any) -> None:
        from pettingzoo.utils.env import AECEnv

        if not isinstance(env, AECEnv):
            raise TypeError(
                f"env: expected a PettingZoo AECEnv, got "
                f"{type(env).__name__}; wrap parallel envs in PettingZooParallelEnv"
            )
        self.env = env
        self.agents: list[str] = list(env.possible_agents)
        self.agent_idx: dict[str, int] = {a: i for i, a in enumerate(self.agents)}
        raw, self.action_space, self._has_mask = _spaces(env, self.agents)
        self.observation_space = PettingZooObservationSpace(
            raw, self.action_space, len(self.agents)
        )
        self._rewards = np.zeros(len(self.agents), dtype=np.float32)

    @property
    def current_agent(self) -> str:
        """The name of the agent to act."""
        return str(self.env.agent_selection)

    def _wrap(self, agent: str, raw: Any) -> dict[str, Any]:
        if self._has_mask:
            obs = np.asarray(raw["observation"])
            mask = np.asarray(raw["action_mask"]) == 1
        else:
            obs = np.asarray(raw)
            n = (
                int(self.action_space.n)
                if isinstance(self.action_space, gym.spaces.Discrete)
                else 0
            )
            mask = np.ones(n, dtype=bool)
        out: dict[str, Any] = {"agent_id": np.int64(self.agent_idx[agent]), "obs": obs}
        if isinstance(self.action_space, gym.spaces.Discrete):
            out["mask"] = mask
        return out

    def observe(self, agent: str | int) -> dict[str, Any]:
        """The current observation dict of ``agent`` (a name or an index)."""
        name = self.agents[agent] if isinstance(agent, int | np.integer) else agent
        if name not in self.agent_idx:
            raise KeyError(f"agent: unknown agent {name!r}; the env has {self.agents}")
        return self._wrap(name, self.env.observe(name))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the game; return the first agent's observation and its info."""
        super().reset(seed=seed)
        self.env.reset(seed=seed, options=options)
        raw, _, _, _, info = self.env.last()
        return self._wrap(self.current_agent, raw), dict(info)

    def step(self, action: Any) -> tuple[dict[str, Any], np.ndarray, bool, bool, dict[str, Any]]:
        """Play ``action`` for the current agent; return the next agent's view and every
        agent's reward for this step."""
        discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.env.step(int(np.asarray(action).reshape(())) if discrete else action)
        raw, _, terminated, truncated, info = self.env.last()
        rewards = np.zeros(len(self.agents), dtype=np.float32)
        for agent, r in self.env.rewards.items():
            rewards[self.agent_idx[agent]] = r
        self._rewards = rewards
        return (
            self._wrap(self.current_agent, raw),
            rewards,
            bool(terminated),
            bool(truncated),
            dict(info),
        )

    def render(self) -> Any:
        """The wrapped env's ``render()``."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()


class PettingZooParallelEnv(gym.Env):  # type: ignore[type-arg]
    """A parallel PettingZoo environment: every agent observes and acts at each step.

    :param env: a PettingZoo ``ParallelEnv`` (e.g. ``pistonball_v6.parallel_env()``). All
        agents need the same observation and action spaces.

    The observation stacks the agents' rows: ``agent_id = arange(n)``, ``obs [n, ...]``,
    ``mask [n, n_actions]``; ``step(actions)`` takes ``actions[i]`` for agent ``i`` and
    returns ``rewards [n]``. The episode ends (``terminated``/``truncated``) when every
    agent is done; an agent that is done earlier keeps its last observation, its
    ``mask`` turns all ``False`` and its action is ignored. ``info["terminated"]`` and
    ``info["truncated"]`` hold the per-agent flags.

    >>> from pettingzoo.butterfly import pistonball_v6
    >>> env = PettingZooParallelEnv(pistonball_v6.parallel_env(continuous=False, n_pistons=3))
    >>> obs, _ = env.reset(seed=0)
    >>> obs["agent_id"].tolist(), obs["obs"].shape, obs["mask"].shape
    ([0, 1, 2], (3, 457, 120, 3), (3, 3))
    >>> _, rew, terminated, truncated, info = env.step(np.array([1, 1, 1]))
    >>> rew.shape, info["terminated"].shape
    ((3,), (3,))
    """

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self, env: Any) -> None:
        from pettingzoo.utils.env import ParallelEnv

        if not isinstance(env, ParallelEnv):
            raise TypeError(
                f"env: expected a PettingZoo ParallelEnv, got {type(env).__name__}; "
                "wrap it in PettingZooEnv"
            )
        self.env = env
        self.agents: list[str] = list(env.possible_agents)
        self.agent_idx: dict[str, int] = {a: i for i, a in enumerate(self.agents)}
        raw, self.action_space, self._has_mask = _spaces(env, self.agents)
        self.observation_space = PettingZooObservationSpace(
            raw, self.action_space, len(self.agents)
        )
        self._obs: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._done = np.zeros(len(self.agents), dtype=bool)

    def _update(self, obs: dict[str, Any]) -> dict[str, Any]:
        n_act = (
            int(self.action_space.n) if isinstance(self.action_space, gym.spaces.Discrete) else 0
        )
        for agent, raw in obs.items():
            i = self.agent_idx[agent]
            o = np.asarray(raw["observation"] if self._has_mask else raw)
            if self._obs is None:
                self._obs = np.zeros((len(self.agents), *o.shape), dtype=o.dtype)
                self._mask = np.zeros((len(self.agents), n_act), dtype=bool)
            self._obs[i] = o
            assert self._mask is not None
            self._mask[i] = np.asarray(raw["action_mask"]) == 1 if self._has_mask else True
        assert self._obs is not None and self._mask is not None
        self._mask[self._done] = False
        out: dict[str, Any] = {
            "agent_id": np.arange(len(self.agents), dtype=np.int64),
            "obs": self._obs.copy(),
        }
        if n_act:
            out["mask"] = self._mask.copy()
        return out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset; return every agent's observation and the infos by agent name."""
        super().reset(seed=seed)
        obs, infos = self.env.reset(seed=seed, options=options)
        self._done[:] = False
        return self._update(obs), {"agents": dict(infos)}

    def step(self, action: Any) -> tuple[dict[str, Any], np.ndarray, bool, bool, dict[str, Any]]:
        """Act for every live agent; return the stacked view, rewards and per-agent flags."""
        act = np.asarray(action)
        n = len(self.agents)
        if act.shape[:1] != (n,):
            raise ValueError(
                f"action: expected one action per agent, shape ({n}, ...), got {act.shape}"
            )
        discrete = isinstance(self.action_space, gym.spaces.Discrete)
        actions = {
            a: int(act[self.agent_idx[a]]) if discrete else act[self.agent_idx[a]]
            for a in self.env.agents
        }
        obs, rew, term, trunc, infos = self.env.step(actions)
        rewards = np.zeros(n, dtype=np.float32)
        terminated = self._done.copy()
        truncated = np.zeros(n, dtype=bool)
        for agent in rew:
            rewards[self.agent_idx[agent]] = rew[agent]
        for agent in term:
            terminated[self.agent_idx[agent]] |= bool(term[agent])
            truncated[self.agent_idx[agent]] = bool(trunc[agent])
        self._done |= terminated | truncated
        view = self._update(obs)
        ended = bool(self._done.all()) or not self.env.agents
        info = {"agents": dict(infos), "terminated": terminated, "truncated": truncated}
        return view, rewards, ended and bool(terminated.any()), ended and not terminated.any(), info

    def render(self) -> Any:
        """The wrapped env's ``render()``."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()
