"""Collect multi-agent episodes and store each agent's own transitions.

:class:`MultiAgentCollector` steps a list of :mod:`tdrl.env.pettingzoo` environments
(turn-based or parallel) in process, asks the policy manager for the actions of every
agent that is to act in every env with one batched call, and builds per-agent
transitions::

    agent a acts at o_a with act_a          -> a's transition is opened: (o_a, act_a, r=0)
    every env step                          -> r += rewards[a]   (a's reward on that step)
    a is to act again, at o'_a              -> stored: (o_a, act_a, r, o'_a, not done)
    the game ends (terminated / truncated)  -> stored: (o_a, act_a, r, a's final view, flags)

(in a parallel env every agent acts at every step, so each step stores one transition
per live agent, with its own reward and next observation).

so that a turn-based agent's reward includes the opponent's reply (a loss on the
opponent's move reaches the move that allowed it) and its next observation is its own.
Transitions go to :class:`~tdrl.algorithm.multiagent.marl.MultiAgentBuffer`: one buffer per
learning algorithm and one sub-buffer per (env, agent), so episodes and n-step returns stay
within one agent. ``collect`` counts env steps (one move of a turn-based game is one step)
and returns :class:`MultiAgentCollectStats` with every agent's episode returns.

The collector has the interface tdrl's trainers use (``collect``, ``reset``,
``reset_env``, ``reset_buffer``, ``buffer``), so ``OffPolicyTrainer`` trains a
:class:`~tdrl.algorithm.multiagent.marl.MultiAgentOffPolicyAlgorithm` with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from tdrl.algorithm.multiagent.manager import MultiAgentPolicyManager
from tdrl.algorithm.multiagent.marl import MultiAgentBuffer, MultiAgentOffPolicyAlgorithm
from tdrl.algorithm.policy import make_batch
from tdrl.data.stats import CollectStats

__all__ = ["MultiAgentCollectStats", "MultiAgentCollector"]


@dataclass
class MultiAgentCollectStats(CollectStats):
    """:class:`~tdrl.data.CollectStats` plus ``agent_returns [episodes, n_agents]``.

    ``returns`` is the collector's ``return_reduction`` of ``agent_returns`` (by default
    the mean over agents).

    >>> MultiAgentCollectStats(agent_returns=np.array([[1.0, -1.0]])).agent_returns.shape
    (1, 2)
    """

    agent_returns: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


@dataclass
class _Open:
    """An agent's transition waiting for its next observation."""

    obs: Any
    mask: np.ndarray | None
    act: Any
    rew: float = 0.0


class MultiAgentCollector:
    """Run a multi-agent policy in PettingZoo envs; store per-agent transitions.

    :param policy: a :class:`MultiAgentOffPolicyAlgorithm` (its policy acts, its learners'
        transitions are stored) or a :class:`MultiAgentPolicyManager` (nothing is stored).
    :param envs: :class:`~tdrl.env.pettingzoo.PettingZooEnv` /
        :class:`~tdrl.env.pettingzoo.PettingZooParallelEnv` instances or factories.
    :param buffer: a :class:`MultiAgentBuffer`, or an int: the size of each learner's
        buffer (default 10,000 per env).
    :param exploration_noise: apply the policies' exploration noise.
    :param return_reduction: ``agent_returns [E, n_agents] -> returns [E]`` for the
        trainer's score; an int ``i`` keeps agent ``i``'s return; default: the mean.
    :param seed: reset env ``i`` with ``seed + i`` the first time (``None``: unseeded).

    >>> from pettingzoo.classic import tictactoe_v3
    >>> from tdrl.algorithm.multiagent import RandomPolicy
    >>> from tdrl.env.pettingzoo import PettingZooEnv
    >>> make = lambda: PettingZooEnv(tictactoe_v3.env())
    >>> players = dict.fromkeys(["player_1", "player_2"], RandomPolicy(make().action_space))
    >>> manager = MultiAgentPolicyManager(players, agents=["player_1", "player_2"])
    >>> stats = MultiAgentCollector(manager, [make, make], seed=0).collect(n_episode=4)
    >>> stats.n_collected_episodes, stats.agent_returns.shape, stats.agent_returns.sum(axis=1)
    (4, (4, 2), array([0., 0., 0., 0.]))
    """

    def __init__(
        self,
        policy: MultiAgentOffPolicyAlgorithm | MultiAgentPolicyManager,
        envs: Sequence[Any],
        buffer: MultiAgentBuffer | int | None = None,
        exploration_noise: bool = False,
        return_reduction: Callable[[np.ndarray], np.ndarray] | int | None = None,
        seed: int | None = None,
    ) -> None:
        self.envs = [e() if callable(e) and not hasattr(e, "step") else e for e in envs]
        if not self.envs:
            raise ValueError("envs: expected at least one env, got none")
        if isinstance(policy, MultiAgentOffPolicyAlgorithm):
            self.algorithm: MultiAgentOffPolicyAlgorithm | None = policy
            self.policy: MultiAgentPolicyManager = policy.policy
            if not isinstance(buffer, MultiAgentBuffer):
                size = buffer if buffer is not None else 10_000 * len(self.envs)
                buffer = policy.make_buffer(len(self.envs), int(size))
        elif isinstance(policy, MultiAgentPolicyManager):
            self.algorithm = None
            self.policy = policy
            if buffer is not None:
                raise ValueError(
                    "buffer: a policy manager alone has no learners to store for; pass the "
                    "MultiAgentOffPolicyAlgorithm"
                )
        else:
            raise TypeError(
                f"policy: expected a MultiAgentOffPolicyAlgorithm or MultiAgentPolicyManager, "
                f"got {type(policy).__name__}"
            )
        agents = list(self.envs[0].agents)
        if agents != self.policy.agents:
            raise ValueError(
                f"envs: the env's agents {agents} differ from the policy's {self.policy.agents}"
            )
        self.buffer: MultiAgentBuffer | None = (
            buffer if isinstance(buffer, MultiAgentBuffer) else None
        )
        self.n_agents = len(agents)
        self.exploration_noise = exploration_noise
        if isinstance(return_reduction, int):
            col = return_reduction
            self.return_reduction: Callable[[np.ndarray], np.ndarray] = lambda r: r[:, col]
        else:
            self.return_reduction = return_reduction or (lambda r: r.mean(axis=1))
        self._seed = seed
        self._learner = {}  # agent index -> learner k
        if self.algorithm is not None:
            for k, idx in enumerate(self.algorithm.learner_agents):
                for a in idx:
                    self._learner[a] = k
        self._obs: list[dict[str, Any] | None] = [None] * len(self.envs)
        self._open: list[dict[int, _Open]] = [{} for _ in self.envs]
        self._ret = np.zeros((len(self.envs), self.n_agents))
        self._len = np.zeros(len(self.envs), dtype=np.int64)
        self.reset_env()

    # -- trainer interface --------------------------------------------------------------
    def reset(self, reset_buffer: bool = True, **kwargs: Any) -> None:
        """Reset the envs (and the buffer)."""
        self.reset_env()
        if reset_buffer:
            self.reset_buffer()

    def reset_buffer(self, keep_statistics: bool = False) -> None:
        """Empty the buffers."""
        if self.buffer is not None:
            self.buffer.reset(keep_statistics=keep_statistics)

    def reset_env(self) -> None:
        """Reset every env. A game cut short ends each agent's open transition as
        *truncated* at the agent's current view, so no episode in the buffer runs on into
        the next game."""
        cut: list[tuple[int, int, _Open, Any, Any, bool, bool]] = []
        for e, open_ in enumerate(self._open):
            view = self._obs[e]
            if view is None:
                continue
            for a, op in open_.items():
                cut.append((e, a, op, *self._final_view(self.envs[e], view, a), False, True))
        self._store(cut)
        for e in range(len(self.envs)):
            self._reset_one(e, None if self._seed is None else self._seed + e)
        self._seed = None  # seeded once; later resets continue the envs' own RNGs

    def _reset_one(self, e: int, seed: int | None = None) -> None:
        obs, _ = self.envs[e].reset(seed=seed)
        self._obs[e] = obs
        self._open[e] = {}
        self._ret[e] = 0.0
        self._len[e] = 0

    # -- collection ---------------------------------------------------------------------
    def collect(
        self, n_step: int | None = None, n_episode: int | None = None, **kwargs: Any
    ) -> MultiAgentCollectStats:
        """Collect at least ``n_step`` env steps (carrying open episodes over) or exactly
        ``n_episode`` episodes (spread evenly over the envs; the envs are reset after)."""
        if (n_step is None) == (n_episode is None):
            raise ValueError(
                f"exactly one of n_step and n_episode must be given, got {n_step} and {n_episode}"
            )
        start = time.perf_counter()
        n_envs = len(self.envs)
        if n_episode is not None:
            if n_episode < 1:
                raise ValueError(f"n_episode: expected an int >= 1, got {n_episode}")
            quota = np.full(n_envs, n_episode // n_envs)
            quota[: n_episode % n_envs] += 1
        else:
            if n_step < 1:  # type: ignore[operator]
                raise ValueError(f"n_step: expected an int >= 1, got {n_step}")
            quota = None
        returns: list[np.ndarray] = []
        lens: list[int] = []
        steps = 0
        while True:
            if quota is not None:
                active = [e for e in range(n_envs) if quota[e] > 0]
                if not active:
                    break
            else:
                if steps >= n_step:  # type: ignore[operator]
                    break
                active = list(range(n_envs))
            steps += len(active)
            for e, ret, length in self._vector_step(active):
                returns.append(ret)
                lens.append(length)
                if quota is not None:
                    quota[e] -= 1
        if quota is not None:
            self.reset_env()
        agent_returns = np.asarray(returns, dtype=np.float64).reshape(-1, self.n_agents)
        base = CollectStats.from_episodes(
            self.return_reduction(agent_returns) if len(returns) else np.zeros(0),
            np.asarray(lens),
            steps,
            time.perf_counter() - start,
        )
        return MultiAgentCollectStats(**vars(base), agent_returns=agent_returns)

    def _vector_step(self, active: list[int]) -> list[tuple[int, np.ndarray, int]]:
        """Act in every active env once; return ``(env, agent returns, length)`` of the
        episodes that ended."""
        views = [self._obs[e] for e in active]
        scalar = [np.ndim(v["agent_id"]) == 0 for v in views]  # type: ignore[index]
        counts = [np.size(v["agent_id"]) for v in views]  # type: ignore[index]
        ids = np.concatenate([np.reshape(v["agent_id"], -1) for v in views])  # type: ignore[index]
        obs = np.concatenate([_rows(v["obs"], s) for v, s in zip(views, scalar)])  # type: ignore[index]
        has_mask = "mask" in views[0]  # type: ignore[operator]
        mask = (
            np.concatenate([_rows(v["mask"], s) for v, s in zip(views, scalar)])  # type: ignore[index]
            if has_mask
            else None
        )
        # the acting agents' previous transitions end here, with their own next observation
        flush: list[tuple[int, int, _Open, Any, Any, bool, bool]] = []
        row = 0
        for e, c in zip(active, counts):
            for r in range(row, row + c):
                a = int(ids[r])
                if a in self._open[e]:
                    flush.append((e, a, self._open[e].pop(a), obs[r], _at(mask, r), False, False))
            row += c
        self._store(flush)
        act = self._act(ids, obs, mask)
        ended: list[tuple[int, np.ndarray, int]] = []
        flush = []
        row = 0
        for e, c, sc in zip(active, counts, scalar):
            env = self.envs[e]
            for r in range(row, row + c):
                if mask is None or mask[r].any():  # a done parallel agent acts no more
                    self._open[e][int(ids[r])] = _Open(obs[r], _at(mask, r), act[r])
            a_env = act[row] if sc else act[row : row + c]
            row += c
            nxt, rew, term, trunc, info = env.step(a_env)
            rew = np.asarray(rew, dtype=np.float64).reshape(-1)
            self._ret[e] += rew
            self._len[e] += 1
            for a, op in self._open[e].items():
                op.rew += float(rew[a])
            done_agents = _done_agents(info, term or trunc, self.n_agents)
            for a in list(self._open[e]):
                if done_agents[a]:
                    op = self._open[e].pop(a)
                    o_next, m_next = self._final_view(env, nxt, a)
                    t_a = bool(info["terminated"][a]) if "terminated" in info else bool(term)
                    flush.append((e, a, op, o_next, m_next, t_a, not t_a))
            if not sc:  # parallel: every agent's next observation is already here
                for a in list(self._open[e]):
                    op = self._open[e].pop(a)
                    flush.append((e, a, op, *self._final_view(env, nxt, a), False, False))
            if term or trunc:
                ended.append((e, self._ret[e].copy(), int(self._len[e])))
                self._reset_one(e)
            else:
                self._obs[e] = nxt
        self._store(flush)
        return ended

    def _act(self, ids: np.ndarray, obs: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        fields: dict[str, torch.Tensor] = {
            "agent_id": torch.from_numpy(ids.astype(np.int64)),
            "obs": torch.from_numpy(np.ascontiguousarray(obs)),
        }
        if mask is not None:
            fields["mask"] = torch.from_numpy(mask)
        n = len(ids)
        batch = make_batch({"obs": TensorDict(fields, [n])}, n)
        with torch.inference_mode():
            act = self.policy(batch)["act"]
            if self.exploration_noise:
                act = self.policy.exploration_noise(act, batch)
        return np.asarray(torch.as_tensor(act).cpu().numpy())

    def _final_view(self, env: Any, nxt: dict[str, Any], a: int) -> tuple[Any, Any]:
        """Agent ``a``'s observation at the end of its episode."""
        sc = np.ndim(nxt["agent_id"]) == 0
        hit = np.nonzero(np.reshape(nxt["agent_id"], -1) == a)[0]
        if len(hit):
            r = int(hit[0])
            mask = _rows(nxt["mask"], sc)[r] if "mask" in nxt else None
            return _rows(nxt["obs"], sc)[r], mask
        view = env.observe(a)
        return view["obs"], view.get("mask")

    def _store(self, items: list[tuple[int, int, _Open, Any, Any, bool, bool]]) -> None:
        """Add finished transitions to their learners' buffers (one add per learner)."""
        if self.buffer is None or not items:
            return
        by_k: dict[int, list[tuple[int, int, _Open, Any, Any, bool, bool]]] = {}
        for it in items:
            k = self._learner.get(it[1])
            if k is not None:
                by_k.setdefault(k, []).append(it)
        for k, its in by_k.items():
            rings = np.array([self.buffer.ring(k, e, a) for e, a, *_ in its], dtype=np.int64)
            ops = [it[2] for it in its]
            batch = {
                "obs": _stack_view([op.obs for op in ops], [op.mask for op in ops]),
                "act": np.asarray([op.act for op in ops]),
                "rew": np.asarray([op.rew for op in ops], dtype=np.float32),
                "terminated": np.asarray([it[5] for it in its], dtype=bool),
                "truncated": np.asarray([it[6] for it in its], dtype=bool),
                "obs_next": _stack_view([it[3] for it in its], [it[4] for it in its]),
            }
            self.buffer[k].add(batch, buffer_ids=rings)


def _stack_view(obs: list[Any], masks: list[Any]) -> Any:
    """Rows of single-agent views stacked: ``{"obs", "mask"}``, or ``obs`` without masks."""
    arr = np.stack([np.asarray(o) for o in obs])
    if masks[0] is None:
        return arr
    return {"obs": arr, "mask": np.stack(masks).astype(bool)}


def _rows(x: Any, scalar: bool) -> np.ndarray:
    """``x`` with a leading row axis (a turn-based env's single row gets one)."""
    arr = np.asarray(x)
    return arr[None] if scalar else arr


def _at(mask: np.ndarray | None, r: int) -> np.ndarray | None:
    return None if mask is None else mask[r]


def _done_agents(info: dict[str, Any], done: bool, n: int) -> np.ndarray:
    """Per agent: is its episode over after this step?"""
    flags = np.full(n, bool(done))
    if "terminated" in info and np.ndim(info["terminated"]) == 1:
        flags |= np.asarray(info["terminated"], dtype=bool) | np.asarray(
            info["truncated"], dtype=bool
        )
    return flags
