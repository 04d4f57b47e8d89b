"""Multi-agent semantics: routing, masks, per-agent transitions and rewards, shared vs
separate policies, bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from pettingzoo.classic import tictactoe_v3
from tensordict import TensorDict

from tdrl.algorithm.base import Policy, make_batch
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.multiagent import (
    MultiAgentBuffer,
    MultiAgentCollector,
    MultiAgentOffPolicyAlgorithm,
    MultiAgentPolicyManager,
    RandomPolicy,
)
from tdrl.data.batch import Batch
from tdrl.env.pettingzoo import PettingZooEnv
from tdrl.utils.net import QNet

# PettingZoo >= 1.27 prefers pettingzoo.make("aec", ...); the module API still works (>= 1.24)
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API")


SPACE = gym.spaces.Discrete(9)
AGENTS = ["player_1", "player_2"]


class _Const(Policy):
    """Always plays ``action``; counts its calls and rows."""

    def __init__(self, action: int) -> None:
        super().__init__(SPACE, action_bound_method=None)
        self.action = action
        self.calls: list[int] = []

    def forward(self, batch, state=None, **kwargs):  # type: ignore[no-untyped-def, override]
        n = batch.batch_size[0]
        self.calls.append(n)
        return make_batch({"act": torch.full((n,), self.action)}, n)


def _obs(ids: list[int], mask: np.ndarray | None = None) -> Batch:
    n = len(ids)
    fields = {"agent_id": torch.tensor(ids), "obs": torch.zeros(n, 3, 3, 2)}
    if mask is not None:
        fields["mask"] = torch.as_tensor(mask)
    return make_batch({"obs": TensorDict(fields, [n])}, n)


def _dqn(eps: float = 0.0) -> DQN:
    policy = DQNPolicy(model=QNet(18, 9, (32,)), action_space=SPACE, eps_training=eps)
    return DQN(policy=policy, gamma=0.9, target_update_freq=10)


def _env() -> PettingZooEnv:
    return PettingZooEnv(tictactoe_v3.env())


# -- routing ----------------------------------------------------------------------------
def test_rows_go_to_their_agents_policy() -> None:
    a, b = _Const(3), _Const(7)
    m = MultiAgentPolicyManager({"player_1": a, "player_2": b}, AGENTS)
    out = m(_obs([0, 1, 1, 0, 1]))
    assert out["act"].tolist() == [3, 7, 7, 3, 7]
    assert a.calls == [2] and b.calls == [3]


def test_an_agent_without_rows_is_not_called() -> None:
    a, b = _Const(3), _Const(7)
    m = MultiAgentPolicyManager({"player_1": a, "player_2": b}, AGENTS)
    assert m(_obs([1, 1]))["act"].tolist() == [7, 7]
    assert a.calls == []


def test_shared_policy_gets_all_its_agents_rows_in_one_call() -> None:
    shared = _Const(4)
    m = MultiAgentPolicyManager({"player_1": shared, "player_2": shared}, AGENTS)
    assert m(_obs([0, 1, 0]))["act"].tolist() == [4, 4, 4]
    assert shared.calls == [3]
    assert len(m.members) == 1


def test_shared_vs_separate_learners_and_buffers() -> None:
    shared = _dqn()
    ma = MultiAgentOffPolicyAlgorithm({"player_1": shared, "player_2": shared}, AGENTS)
    assert ma.learner_agents == [[0, 1]] and ma.learner_names == ["player_1+player_2"]
    assert len(list(ma.parameters())) == len(list(shared.policy.model.parameters()))
    buf = ma.make_buffer(n_envs=3, size=60)
    assert len(buf.buffers) == 1 and buf[0].buffer_num == 6
    a, b = _dqn(), _dqn()
    ma2 = MultiAgentOffPolicyAlgorithm({"player_1": a, "player_2": b}, AGENTS)
    assert ma2.learner_agents == [[0], [1]]
    assert ma2.learner_of("player_2") is b and ma2.learner_of(0) is a
    assert [x.buffer_num for x in ma2.make_buffer(n_envs=3, size=60)] == [3, 3]


def test_training_flag_reaches_every_policy() -> None:
    a, b = _Const(0), _Const(1)
    m = MultiAgentPolicyManager({"player_1": a, "player_2": b}, AGENTS)
    m.is_within_training_step = True
    assert a.is_within_training_step and b.is_within_training_step
    m.is_within_training_step = False
    assert not a.is_within_training_step


# -- masks ------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.0, 1.0])
def test_illegal_actions_are_never_chosen(eps: float) -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    dqn = _dqn(eps)
    m = MultiAgentPolicyManager({"player_1": dqn.policy, "player_2": RandomPolicy(SPACE)}, AGENTS)
    rng = np.random.default_rng(0)
    n = 400
    mask = rng.random((n, 9)) < 0.3
    mask[np.arange(n), rng.integers(0, 9, n)] = True
    batch = _obs(rng.integers(0, 2, n).tolist(), mask)
    m.is_within_training_step = True
    with torch.no_grad():
        act = m(batch)["act"]
        act = m.exploration_noise(act, batch)
    assert mask[np.arange(n), act.numpy()].all()


def test_games_with_exploring_learners_make_only_legal_moves() -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    ma = MultiAgentOffPolicyAlgorithm({"player_1": _dqn(0.5), "player_2": _dqn(0.5)}, AGENTS)
    ma.policy.is_within_training_step = True
    col = MultiAgentCollector(ma, [_env, _env], buffer=400, exploration_noise=True, seed=0)
    stats = col.collect(n_episode=20)
    # an illegal move ends a PettingZoo game with -1 for the mover and nothing for the other
    assert set(np.abs(stats.agent_returns.sum(axis=1)).tolist()) == {0.0}
    assert stats.n_collected_episodes == 20


# -- per-agent transitions and rewards --------------------------------------------------
def _data(col: MultiAgentCollector, k: int) -> Batch:
    """Everything in learner ``k``'s buffer, oldest first."""
    assert col.buffer is not None
    return col.buffer[k][col.buffer[k].sample_indices(0)]


def _board(o: np.ndarray) -> tuple[int, int]:
    o = np.asarray(o).reshape(3, 3, 2)
    return int(o[..., 0].sum()), int(o[..., 1].sum())


def test_each_agent_stores_its_own_transitions_and_rewards() -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    a, b = _dqn(1.0), _dqn(1.0)
    ma = MultiAgentOffPolicyAlgorithm({"player_1": a, "player_2": b}, AGENTS)
    ma.policy.is_within_training_step = True
    col = MultiAgentCollector(ma, [_env, _env, _env], buffer=3000, exploration_noise=True, seed=1)
    stats = col.collect(n_episode=30)
    # X moves first: X has one more move than O or as many
    for k, first in ((0, True), (1, False)):
        data = _data(col, k)
        own, opp = np.array([_board(o) for o in data["obs"]["obs"].numpy()]).T
        own_n, opp_n = np.array([_board(o) for o in data["obs_next"]["obs"].numpy()]).T
        # the observation is the mover's own view before its move
        assert (opp - own == (0 if first else 1)).all()
        done = data["done"].numpy()
        # the next observation is its own next turn: its move and the reply were added
        assert (own_n[~done] == own[~done] + 1).all() and (opp_n[~done] == opp[~done] + 1).all()
        rew = data["rew"].numpy()
        assert (rew[~done] == 0).all() and set(rew[done].tolist()) <= {-1.0, 0.0, 1.0}
        assert data["terminated"].numpy()[done].all()
        assert data["obs"]["mask"].numpy()[np.arange(len(rew)), data["act"].numpy()].all()
    # every game ended once per agent, and its rewards are zero-sum
    ends = [_data(col, k)["done"].numpy().sum() for k in (0, 1)]
    assert ends == [30, 30]
    assert (stats.agent_returns.sum(axis=1) == 0).all()
    x_rewards = _data(col, 0)["rew"].numpy()
    assert x_rewards.sum() == stats.agent_returns[:, 0].sum()


def test_loss_reaches_the_move_before_the_opponent_wins() -> None:
    """O wins on its move: X's last transition (the move that allowed it) gets -1."""
    ma = MultiAgentOffPolicyAlgorithm({"player_1": _dqn(), "player_2": RandomPolicy(SPACE)}, AGENTS)
    col = MultiAgentCollector(ma, [_env], buffer=100)
    env = col.envs[0]
    moves = iter([0, 3, 1, 4, 8, 5])  # X: 0 1 8; O: 3 4 5 -> O completes 3-4-5
    col._act = lambda ids, obs, mask: np.array([next(moves)])  # type: ignore[method-assign]
    stats = col.collect(n_episode=1)
    assert stats.agent_returns.tolist() == [[-1.0, 1.0]]
    x = _data(col, 0)
    assert x["act"].tolist() == [0, 1, 8] and x["rew"].tolist() == [0.0, 0.0, -1.0]
    assert x["terminated"].tolist() == [False, False, True]
    assert env is col.envs[0]


def test_update_trains_each_learner_on_its_own_buffer() -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    a = _dqn(1.0)
    ma = MultiAgentOffPolicyAlgorithm({"player_1": a, "player_2": RandomPolicy(SPACE)}, AGENTS)
    ma.policy.is_within_training_step = True
    col = MultiAgentCollector(ma, [_env, _env], buffer=400, exploration_noise=True)
    assert ma.update(col.buffer, 16) == {}  # nothing collected yet
    col.collect(n_step=40)
    before = [p.clone() for p in a.policy.model.parameters()]
    stats = ma.update(col.buffer, 16)
    assert set(stats) == {"loss_qvalue/player_1", "loss/player_1", "loss"}
    assert any((p != q).any() for p, q in zip(a.policy.model.parameters(), before))


def test_collect_counts_steps_and_exact_episodes() -> None:
    ma = MultiAgentOffPolicyAlgorithm(
        {"player_1": RandomPolicy(SPACE), "player_2": RandomPolicy(SPACE)}, AGENTS
    )
    col = MultiAgentCollector(ma.policy, [_env, _env, _env], return_reduction=0, seed=0)
    s = col.collect(n_step=10)
    assert s.n_collected_steps == 12  # ceil(10 / 3) * 3
    s = col.collect(n_episode=7)
    assert s.n_collected_episodes == 7 and s.returns.tolist() == s.agent_returns[:, 0].tolist()
    assert s.lens.min() >= 5 and s.lens.max() <= 9


def test_state_dict_round_trip() -> None:
    a = _dqn()
    ma = MultiAgentOffPolicyAlgorithm({"player_1": a, "player_2": RandomPolicy(SPACE)}, AGENTS)
    sd = ma.state_dict()
    b = _dqn()
    ma2 = MultiAgentOffPolicyAlgorithm({"player_1": b, "player_2": RandomPolicy(SPACE)}, AGENTS)
    ma2.load_state_dict(sd)
    for p, q in zip(a.policy.model.parameters(), b.policy.model.parameters()):
        torch.testing.assert_close(p, q)


# -- bad input --------------------------------------------------------------------------
def test_unknown_agent_id_in_observation_names_it() -> None:
    m = MultiAgentPolicyManager({"player_1": _Const(0), "player_2": _Const(1)}, AGENTS)
    with pytest.raises(KeyError, match=r"unknown agent id 5.*player_1"):
        m(_obs([0, 5]))


def test_unknown_or_missing_agent_name_is_named() -> None:
    with pytest.raises(KeyError, match="unknown agent 'player_3'"):
        MultiAgentPolicyManager({"player_1": _Const(0), "player_3": _Const(1)}, AGENTS)
    with pytest.raises(KeyError, match="no policy for agent 'player_2'"):
        MultiAgentPolicyManager({"player_1": _Const(0)}, AGENTS)
    ma = MultiAgentOffPolicyAlgorithm({"player_1": _dqn(), "player_2": _Const(1)}, AGENTS)
    with pytest.raises(KeyError, match="no learning algorithm for 'player_2'"):
        ma.learner_of("player_2")


def test_observation_without_agent_id_is_rejected() -> None:
    m = MultiAgentPolicyManager({"player_1": _Const(0), "player_2": _Const(1)}, AGENTS)
    with pytest.raises(KeyError, match="'agent_id'"):
        m(make_batch({"obs": torch.zeros(2, 18)}, 2))


def test_bad_members_buffers_and_envs_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"algorithms\['player_2'\]: expected an Algorithm"):
        MultiAgentOffPolicyAlgorithm({"player_1": _dqn(), "player_2": "random"}, AGENTS)  # type: ignore[dict-item]
    ma = MultiAgentOffPolicyAlgorithm({"player_1": _dqn(), "player_2": _Const(1)}, AGENTS)
    with pytest.raises(TypeError, match="buffer: expected a MultiAgentBuffer"):
        ma.update(object(), 8)
    with pytest.raises(ValueError, match="expected 1 buffers"):
        ma.update(MultiAgentBuffer.create([[0], [1]], 1, 10), 8)
    other = MultiAgentPolicyManager({"a": _Const(0), "b": _Const(1)}, ["a", "b"])
    with pytest.raises(ValueError, match=r"env's agents \['player_1', 'player_2'\] differ"):
        MultiAgentCollector(other, [_env])
    with pytest.raises(ValueError, match="exactly one of n_step and n_episode"):
        MultiAgentCollector(ma, [_env]).collect()


# -- TorchRL layout ---------------------------------------------------------------------
def test_torchrl_layout_joint_batch_gives_the_same_terms_each_reaching_its_learner() -> None:
    torch.manual_seed(0)
    a, b = _dqn(), _dqn()
    ma = MultiAgentOffPolicyAlgorithm({"player_1": a, "player_2": b}, AGENTS)
    n = 12
    ids = torch.tensor([0, 1] * 6)

    def view() -> TensorDict:
        mask = torch.rand(n, 9) < 0.6
        mask[:, 0] = True
        return TensorDict({"agent_id": ids, "obs": torch.randn(n, 18), "mask": mask}, [n])

    obs, obs_next = view(), view()
    act = torch.zeros(n, dtype=torch.long)
    rew, term = torch.randn(n, 2), torch.rand(n) < 0.3
    ts = make_batch(
        {"obs": obs, "obs_next": obs_next, "act": act, "rew": rew, "terminated": term}, n
    )
    expected = ma(ts)
    ma.set_keys(observation="observation", action="action")
    assert a.policy.in_keys == ["observation"] and ma.policy.out_keys == ["action"]
    td = TensorDict(
        {
            "observation": obs,
            "action": act,
            "next": {
                "observation": obs_next,
                "reward": rew,
                "terminated": term[:, None],
                "done": term[:, None],
            },
        },
        [n],
    )
    got = ma(td)
    assert (
        set(got.keys()) == set(expected.keys()) == {"loss_qvalue/player_1", "loss_qvalue/player_2"}
    )
    for key in sorted(got.keys()):
        torch.testing.assert_close(got[key], expected[key])
    pa, pb = list(a.policy.model.parameters()), list(b.policy.model.parameters())
    grads = torch.autograd.grad(got["loss_qvalue/player_1"], pa + pb, allow_unused=True)
    assert all(g is not None for g in grads[: len(pa)])
    assert all(g is None for g in grads[len(pa) :])
    with torch.no_grad():
        acted = ma.policy(td.select("observation"))
    assert acted["action"].shape == (n,)
    assert obs["mask"][torch.arange(n), acted["action"]].all()


def test_a_game_cut_by_reset_ends_each_agents_chain_as_truncated() -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    ma = MultiAgentOffPolicyAlgorithm({"player_1": _dqn(1.0), "player_2": _dqn(1.0)}, AGENTS)
    ma.policy.is_within_training_step = True
    col = MultiAgentCollector(ma, [_env, _env], buffer=200, exploration_noise=True, seed=0)
    col.collect(n_step=6)  # three moves per game: X, O, X; open: X's last, O's first
    assert [len(b) for b in col.buffer or []] == [2, 0]
    col.reset_env()
    x, o = _data(col, 0), _data(col, 1)
    assert len(x) == 4 and len(o) == 2
    assert x["truncated"].tolist() == [False, True, False, True]  # env 0, then env 1
    assert o["truncated"].tolist() == [True, True] and not o["terminated"].any()
    # O's cut transition bootstraps from its view now (X has answered: one more X mark)
    own, opp = np.array([_board(v) for v in o["obs_next"]["obs"].numpy()]).T
    assert own.tolist() == [1, 1] and opp.tolist() == [2, 2]
