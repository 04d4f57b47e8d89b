"""Tianshou 2.0's multi-agent forms on tdrl: ``MultiAgentOffPolicyAlgorithm(algorithms=[...],
env=env)`` trained by the plain ``Collector`` on a joint replay buffer, the random masked
opponent as an algorithm, and the PettingZoo wrapper's Tianshou-style observation space."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")  # tdrl[multiagent]

from pettingzoo.classic import tictactoe_v3
from tensordict import TensorDict
from torch import nn

import tdrl.algorithm as A
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.reinforce import Reinforce
from tdrl.algorithm.multiagent import (
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentCollector,
    MultiAgentOffPolicyAlgorithm,
    MultiAgentOnPolicyAlgorithm,
    RandomPolicy,
)
from tdrl.algorithm.policy import make_batch
from tdrl.algorithm.policy_gradient import ActorPolicy
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.env.pettingzoo import PettingZooEnv, PettingZooObservationSpace
from tdrl.trainer import OffPolicyTrainerParams

# PettingZoo >= 1.27 prefers pettingzoo.make("aec", ...); the module API still works (>= 1.24)
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API")

AGENTS = ["player_1", "player_2"]


def _env() -> PettingZooEnv:
    return PettingZooEnv(tictactoe_v3.env())


class _Flat(nn.Module):
    """``[B, 3, 3, 2]`` board -> 9 Q-values."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(18, 32), nn.ReLU(), nn.Linear(32, 9))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(torch.as_tensor(obs).float())


class _Zero(nn.Module):
    """Q = 0 for every action, whatever the board (one parameter, so it can be trained)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(()))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.zeros(obs.shape[0], 9) * self.w


def _dqn(model: nn.Module | None = None, **kwargs: float) -> DQN:
    space = _env().action_space
    policy = DQNPolicy(model=model or _Flat(), action_space=space, eps_training=0.1)
    return DQN(policy=policy, optim=1e-3, **kwargs)  # type: ignore[arg-type]


# -- the env ----------------------------------------------------------------------------
def test_observation_space_answers_pettingzoo_keys_and_describes_the_emitted_ones() -> None:
    env = _env()
    raw = tictactoe_v3.env().observation_space("player_1")
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict) and isinstance(space, PettingZooObservationSpace)
    # Tianshou's reading (PettingZoo's own per-agent space)
    assert space.spaces["observation"] == raw["observation"]
    assert space["observation"].shape == (3, 3, 2)
    assert space.spaces["action_mask"] == raw["action_mask"]
    assert space.pettingzoo_space == raw
    # tdrl's: exactly the emitted keys, and the observations belong to the space
    assert sorted(space.spaces) == ["agent_id", "mask", "obs"] and len(space.spaces) == 3
    obs, _ = env.reset(seed=0)
    assert space.contains(obs) and set(space.sample()) == set(obs)
    with pytest.raises(KeyError):
        space["nothing"]
    # survives pickling (vector env workers) with the lookup intact
    again = pickle.loads(pickle.dumps(space))
    assert again == space and again.spaces["observation"] == raw["observation"]
    # Tianshou's env.agents: PettingZoo's possible agents
    assert env.agents == list(tictactoe_v3.env().possible_agents) == AGENTS


def test_observation_space_of_a_game_without_mask() -> None:
    box = gym.spaces.Box(0.0, 1.0, (4,))
    space = PettingZooObservationSpace(box, gym.spaces.Discrete(2), n_agents=3)
    assert space["observation"] is box and space["obs"] is box
    assert int(space["agent_id"].n) == 3  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        space.spaces["action_mask"]


# -- DQN on a multi-agent observation ---------------------------------------------------
def test_dqn_policy_reads_obs_and_mask_of_an_agent_observation() -> None:
    model = nn.Linear(18, 9)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.copy_(torch.arange(9.0))  # the best action is 8, then 7, ...
    policy = DQNPolicy(
        model=nn.Sequential(nn.Flatten(), model), action_space=gym.spaces.Discrete(9)
    )
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[0, 8] = False
    mask[1, 5:] = False
    obs = TensorDict(
        {"agent_id": torch.tensor([0, 1, 0]), "obs": torch.zeros(3, 3, 3, 2), "mask": mask}, [3]
    )
    assert policy(make_batch({"obs": obs}, 3))["act"].tolist() == [7, 4, 8]
    policy.set_eps_inference(1.0)
    np.random.seed(0)
    for _ in range(20):
        act = policy.exploration_noise(torch.tensor([7, 4, 8]), make_batch({"obs": obs}, 3))
        assert bool(mask[torch.arange(3), act].all())


# -- the random opponent ----------------------------------------------------------------
def test_random_masked_algorithm_plays_legal_moves_uniformly_and_never_learns() -> None:
    assert (
        A.MARLRandomDiscreteMaskedOffPolicyAlgorithm is MARLRandomDiscreteMaskedOffPolicyAlgorithm
    )
    alg = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=gym.spaces.Discrete(4))
    assert isinstance(alg, A.Algorithm) and not alg.on_policy
    assert isinstance(alg.policy, RandomPolicy) and alg.Policy is RandomPolicy
    assert list(alg.parameters()) == []
    n = 4000
    mask = torch.tensor([[True, False, True, True]]).expand(n, 4)
    obs = TensorDict({"agent_id": torch.zeros(n), "obs": torch.zeros(n, 2), "mask": mask}, [n])
    torch.manual_seed(0)
    act = alg.policy(make_batch({"obs": obs}, n))["act"]
    counts = torch.bincount(act, minlength=4).tolist()
    assert counts[1] == 0 and all(abs(c - n / 3) < 150 for c in (counts[0], counts[2], counts[3]))
    buf = VectorReplayBuffer(10, 1)
    assert dict(alg.update(buf, 8)) == {}


# -- MultiAgentOffPolicyAlgorithm(algorithms=[...], env=env) -----------------------------
def test_list_of_algorithms_named_by_the_env() -> None:
    env = _env()
    learner = _dqn()
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner], env=env)
    assert ma.agents == AGENTS
    assert ma.get_algorithm("player_2") is learner and ma.get_algorithm(1) is learner
    assert ma.get_algorithm("player_1") is opponent
    assert ma.learner_names == ["player_2"] and ma.learner_of("player_2") is learner
    assert ma.policy.policies["player_1"] is opponent.policy
    # the same through the dict form, and the agents may be given with the env
    same = MultiAgentOffPolicyAlgorithm({"player_1": opponent, "player_2": learner}, AGENTS)
    assert same.learner_agents == ma.learner_agents == [[1]]
    with pytest.raises(KeyError, match="unknown agent 'player_9'"):
        ma.get_algorithm("player_9")
    with pytest.raises(ValueError, match=r"algorithms: expected one per agent \(2"):
        MultiAgentOffPolicyAlgorithm(algorithms=[learner], env=env)
    with pytest.raises(TypeError, match="agents: pass the agent names"):
        MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner])
    with pytest.raises(ValueError, match=r"differ from env.agents"):
        MultiAgentOffPolicyAlgorithm([opponent, learner], ["a", "b"], env=env)
    # the tdrl collector skips the opponent too: one buffer, for the learner
    col = MultiAgentCollector(ma, [_env], buffer=50, seed=0)
    assert col.buffer is not None and len(col.buffer.buffers) == 1


def test_on_policy_members_need_the_on_policy_manager() -> None:
    env = _env()
    actor = nn.Sequential(nn.Flatten(), nn.Linear(18, 9))
    pg = Reinforce(policy=ActorPolicy(actor=actor, action_space=env.action_space))
    with pytest.raises(ValueError, match="expected an off-policy algorithm, got the on-policy"):
        MultiAgentOffPolicyAlgorithm(algorithms=[pg, pg], env=env)
    with pytest.raises(ValueError, match="expected an on-policy algorithm, got the off-policy"):
        MultiAgentOnPolicyAlgorithm(algorithms=[_dqn(), pg], env=env)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOnPolicyAlgorithm(algorithms=[pg, opponent], env=env)  # the opponent: fixed
    assert ma.on_policy and ma.learner_names == ["player_1"]


# -- the plain Collector and a joint buffer ---------------------------------------------
def _joint_collect(ma: MultiAgentOffPolicyAlgorithm, n_step: int) -> Collector:
    envs = DummyVectorEnv([_env for _ in range(2)])
    envs.seed(3)
    col = Collector(ma, envs, VectorReplayBuffer(1000, 2), exploration_noise=True)
    col.reset()
    col.collect(n_step=n_step)
    return col


def test_plain_collector_stores_joint_transitions_with_every_agents_reward() -> None:
    env = _env()
    torch.manual_seed(0)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOffPolicyAlgorithm(algorithms=[opponent, _dqn()], env=env)
    col = _joint_collect(ma, 100)
    buf = col.buffer
    data = buf[buf.sample_indices(0)]
    ids = data["obs"]["agent_id"]
    assert data["rew"].shape == (len(buf), 2) and set(ids.tolist()) == {0, 1}
    # every stored move is legal for its mover, and the next row's mover is the other agent
    legal = data["obs"]["mask"][torch.arange(len(buf)), data["act"].long()]
    assert bool(legal.all())
    live = ~data["done"]
    assert bool((data["obs_next"]["agent_id"][live] == 1 - ids[live]).all())
    # a finished game gives +1 / -1 (or 0 / 0) on its last row
    ends = data["rew"][data["done"]]
    assert len(ends) and bool((ends.sum(dim=1) == 0).all())


def test_joint_update_gives_each_learner_its_rows_and_its_reward_column() -> None:
    """n-step returns with a zero bootstrap are the agent's own discounted rewards along
    the joint buffer (Tianshou's meaning), the rows are its own, the opponent is skipped."""
    env = _env()
    torch.manual_seed(1)
    np.random.seed(1)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    learner = _dqn(_Zero(), gamma=0.5, n_step=3)
    ma = MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner], env=env)
    col = _joint_collect(ma, 200)
    buf = col.buffer
    seen: list[tuple[TensorDict, np.ndarray]] = []
    post = learner.postprocess

    def record(batch, buffer, indices):  # type: ignore[no-untyped-def]
        seen.append((batch, np.asarray(indices)))
        return post(batch, buffer, indices)

    learner.postprocess = record  # type: ignore[method-assign]
    stats = ma.update(buf, 64)
    assert set(stats) == {"loss_qvalue/player_2", "loss/player_2", "loss"}
    assert learner.n_updates == 1 and ma.n_updates == 1
    ((batch, at),) = seen
    assert len(at) > 0 and bool((buf[at]["obs"]["agent_id"] == 1).all())
    assert set(batch["obs"].keys()) == {"obs", "mask"}  # a single-agent observation
    rew = np.asarray(buf.rew)[:, 1]
    assert np.allclose(batch["rew"].numpy(), rew[at])
    done = np.asarray(buf.done)
    unfinished = set(np.asarray(buf.unfinished_index()).tolist())
    expected = []
    for i in at:
        g, k, j = 0.0, 0, int(i)
        while True:
            g += 0.5**k * rew[j]
            if done[j] or j in unfinished or k == 2:
                break
            j, k = int(buf.next(np.array([j]))[0]), k + 1
        expected.append(g)
    assert np.allclose(batch["returns"].reshape(-1).numpy(), expected)


def test_tianshou_script_shape_trains_the_learner_only() -> None:
    """Collector(algorithm, ...), run_training(OffPolicyTrainerParams(...,
    multi_agent_return_reduction=...)) as Tianshou's tic-tac-toe script does."""
    env = _env()
    torch.manual_seed(0)
    np.random.seed(0)
    learner = _dqn(n_step=3, gamma=0.9, target_update_freq=20)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner], env=env)
    train_envs = DummyVectorEnv([_env for _ in range(2)])
    test_envs = DummyVectorEnv([_env for _ in range(2)])
    train_envs.seed(0)
    test_envs.seed(1)
    train = Collector(ma, train_envs, VectorReplayBuffer(2000, 2), exploration_noise=True)
    test = Collector(ma, test_envs, exploration_noise=True)
    train.reset()
    train.collect(n_step=64)
    before = [p.detach().clone() for p in learner.parameters()]
    seen: list[np.ndarray] = []

    def second_player(rews: np.ndarray) -> np.ndarray:
        seen.append(np.asarray(rews))
        return rews[:, 1]

    result = ma.run_training(
        OffPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=1,
            epoch_num_steps=100,
            collection_step_num_env_steps=10,
            test_step_num_episodes=4,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            multi_agent_return_reduction=second_player,
        )
    )
    assert result.gradient_step == 10 and learner.n_updates == 10
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.parameters(), strict=True))
    assert seen and all(r.ndim == 2 and r.shape[1] == 2 for r in seen)
    assert -1.0 <= result.best_reward <= 1.0
    state = ma.get_algorithm("player_2").state_dict()  # what the script saves
    assert any(k.startswith("policy.model") for k in state)


def test_on_policy_learner_on_a_joint_buffer() -> None:
    env = _env()
    torch.manual_seed(0)

    class _Masked(nn.Module):
        """Logits over the legal moves of a ``{"obs", "mask"}`` observation."""

        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(18, 9)

        def forward(self, obs: TensorDict) -> torch.Tensor:
            logits = self.lin(obs["obs"].flatten(1).float())
            return logits.masked_fill(~obs["mask"].bool(), -1e9)

    pg = Reinforce(policy=ActorPolicy(actor=_Masked(), action_space=env.action_space), gamma=0.9)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOnPolicyAlgorithm(algorithms=[pg, opponent], env=env)
    col = _joint_collect(ma, 60)
    before = [p.detach().clone() for p in pg.parameters()]
    stats = ma.update(col.buffer, 16, repeat=2)
    assert "loss_actor/player_1" in stats and pg.n_updates == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, pg.parameters(), strict=True))
