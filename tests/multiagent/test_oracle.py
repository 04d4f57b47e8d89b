"""Oracle: tdrl's multi-agent learners against Tianshou 2.0.1's MultiAgentOffPolicyAlgorithm.

Both get identical DQN weights and the same joint batch (rows of two agents with
``obs = {agent_id, obs, mask}`` and one reward column per agent). Compared: the routed
greedy actions, the routed epsilon-greedy actions (same numpy seed), each agent's loss on
three successive gradient steps (one-step targets; to 1e-5) and every parameter afterwards
(to 1e-5).

Deliberate difference (docs/multiagent.md): tdrl's collector stores each agent's own
transitions (its next observation is its own next turn, its reward sums the steps until
then) in per-agent buffers, so n-step returns run along one agent's moves. Tianshou keeps
one joint buffer whose ``obs_next`` is the *next agent's* view and whose n-step chain runs
through the other agents' rows. The per-batch update compared here is the same in both.

Deliberate difference of the Q-learning base (``mask_q``): tdrl rates a next state with
no legal action by its masked values ``Q + (min Q - max Q - 1)``; Tianshou 2.0.1 masks only
the argmax and bootstraps from the raw Q there. Such a state is terminal in a game (its
bootstrap is multiplied by 0), so the batches here give terminal rows the empty masks;
``test_all_illegal_next_state_deliberately_differs`` shows the non-terminal case.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.multiagent import MultiAgentOffPolicyAlgorithm
from tdrl.data.batch import Batch
from tdrl.utils.net import QNet

AGENTS = ["player_1", "player_2"]
N_ACT = 5


class _SharedQ(torch.nn.Module):
    """A Q-net both libraries accept: ``model(obs, state=None, info=None) -> (q, None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = QNet(6, N_ACT, (16, 16))

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _Env:
    """What Tianshou's dispatcher reads from its PettingZooEnv."""

    agents = AGENTS
    agent_idx = {a: i for i, a in enumerate(AGENTS)}  # noqa: RUF012


def _joint_rows(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    ids = rng.integers(0, 2, n)
    mask = rng.random((n, N_ACT)) < 0.7
    mask[np.arange(n), rng.integers(0, N_ACT, n)] = True
    mask_next = rng.random((n, N_ACT)) < 0.7
    mask_next[:3] = False  # terminal views without a legal move (see the difference test)
    terminated = rng.random(n) < 0.2
    terminated[:3] = True
    act = np.array([rng.choice(np.nonzero(m)[0]) for m in mask])
    return {
        "ids": ids,
        "ids_next": 1 - ids,
        "obs": rng.normal(size=(n, 6)).astype(np.float32),
        "mask": mask,
        "obs_next": rng.normal(size=(n, 6)).astype(np.float32),
        "mask_next": mask_next,
        "act": act,
        "rew": rng.normal(size=(n, 2)).astype(np.float32),
        "terminated": terminated,
        "truncated": np.zeros(n, dtype=bool),
    }


def _ours_batch(d: dict[str, np.ndarray], idx: np.ndarray) -> Batch:
    n = len(idx)

    def view(ids: np.ndarray, obs: np.ndarray, mask: np.ndarray) -> TensorDict:
        fields = {"agent_id": ids[idx], "obs": obs[idx], "mask": mask[idx]}
        return TensorDict({k: torch.as_tensor(v) for k, v in fields.items()}, [n])

    return make_batch(
        {
            "obs": view(d["ids"], d["obs"], d["mask"]),
            "obs_next": view(d["ids_next"], d["obs_next"], d["mask_next"]),
            "act": torch.as_tensor(d["act"][idx]),
            "rew": torch.as_tensor(d["rew"][idx]),
            "terminated": torch.as_tensor(d["terminated"][idx]),
            "truncated": torch.as_tensor(d["truncated"][idx]),
        },
        n,
    )


def test_routed_update_matches_tianshou_exactly() -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm import MultiAgentOffPolicyAlgorithm as TMA
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import ReplayBuffer as TRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    space = gym.spaces.Discrete(N_ACT)
    models = [_SharedQ(), _SharedQ()]
    ours_algs = {
        a: DQN(
            policy=DQNPolicy(model=copy.deepcopy(m), action_space=space),
            gamma=0.9,
            target_update_freq=2,
        )
        for a, m in zip(AGENTS, models)
    }
    peer_algs = [
        TDQN(
            policy=DiscreteQLearningPolicy(model=copy.deepcopy(m), action_space=space),
            optim=AdamOptimizerFactory(lr=1e-3),
            gamma=0.9,
            n_step_return_horizon=1,
            target_update_freq=2,
        )
        for m in models
    ]
    ours = MultiAgentOffPolicyAlgorithm(ours_algs, AGENTS)
    peer = TMA(algorithms=peer_algs, env=_Env())  # type: ignore[arg-type]

    rng = np.random.default_rng(0)
    n = 40
    d = _joint_rows(rng, n)
    names = np.array(AGENTS)
    buf = TRB(n)
    for i in range(n):
        buf.add(
            TBatch(
                obs=TBatch(agent_id=names[d["ids"][i]], obs=d["obs"][i], mask=d["mask"][i]),
                act=d["act"][i],
                rew=d["rew"][i],
                terminated=d["terminated"][i],
                truncated=d["truncated"][i],
                obs_next=TBatch(
                    agent_id=names[d["ids_next"][i]], obs=d["obs_next"][i], mask=d["mask_next"][i]
                ),
                info={},
            )
        )

    # routed greedy actions
    all_idx = np.arange(n)
    with torch.no_grad():
        got_act = ours.policy(_ours_batch(d, all_idx))["act"]
        expected_act = peer.policy(TBatch(obs=buf[all_idx].obs, info={})).act
    assert got_act.tolist() == np.asarray(expected_act).tolist()
    # routed exploration noise: the same numpy draws, agent by agent, legal actions only
    policies: list[Any] = [a.policy for a in ours_algs.values()] + [a.policy for a in peer_algs]
    for pol in policies:
        pol.eps_training = 0.5
        pol.is_within_training_step = True
    ours.policy.is_within_training_step = True
    np.random.seed(3)
    noisy = ours.policy.exploration_noise(got_act.clone(), _ours_batch(d, all_idx))
    np.random.seed(3)
    peer_noisy = peer.policy.add_exploration_noise(
        np.asarray(expected_act).copy(), TBatch(obs=buf[all_idx].obs, info={})
    )
    assert noisy.tolist() == peer_noisy.tolist() and noisy.tolist() != got_act.tolist()
    assert d["mask"][all_idx, noisy.numpy()].all()
    for pol in policies:
        pol.eps_training = 0.0
        pol.is_within_training_step = False
    ours.policy.is_within_training_step = False

    for step in range(3):
        idx = np.sort(rng.choice(n, 24, replace=False))
        batch = _ours_batch(d, idx)
        terms = ours(batch.clone())  # TorchRL-style forward at the current parameters
        got = ours.learn(batch)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(buf[idx], buf, idx)
            expected = peer._update_with_batch(tb).get_loss_stats_dict()
        for agent in AGENTS:
            assert got[f"loss_qvalue/{agent}"] == pytest.approx(
                expected[f"{agent}/loss"], rel=1e-5, abs=1e-7
            ), (step, agent)
            assert float(terms[f"loss_qvalue/{agent}"].detach()) == pytest.approx(
                expected[f"{agent}/loss"], rel=1e-5, abs=1e-7
            ), (step, agent)
    for agent, peer_alg in zip(AGENTS, peer_algs):
        for p_ours, p_peer in zip(
            ours_algs[agent].policy.model.parameters(), peer_alg.policy.model.parameters()
        ):
            torch.testing.assert_close(p_ours, p_peer, rtol=1e-5, atol=1e-6)


def test_all_illegal_next_state_deliberately_differs() -> None:
    """tdrl bootstraps a non-terminal next state without a legal action from its masked
    values (finite, below every raw value); Tianshou 2.0.1 from the raw Q at the argmax."""
    torch.manual_seed(0)
    space = gym.spaces.Discrete(N_ACT)
    alg = DQN(policy=DQNPolicy(model=_SharedQ(), action_space=space), gamma=0.9)
    obs = torch.randn(4, 6)
    none_legal = TensorDict({"obs": obs, "mask": torch.zeros(4, N_ACT, dtype=torch.bool)}, [4])
    raw = alg.policy.model(obs)[0]
    masked = alg.next_value(none_legal)
    assert (masked < raw.min()).all()
    all_legal = TensorDict({"obs": obs, "mask": torch.ones(4, N_ACT, dtype=torch.bool)}, [4])
    torch.testing.assert_close(alg.next_value(all_legal), raw.max(dim=1).values)
