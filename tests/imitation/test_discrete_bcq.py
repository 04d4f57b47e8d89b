"""Discrete BCQ: the likely-action constraint (acting and bootstrap), the losses, target
syncs, TorchRL layout, argument checks, the Tianshou 2.0.1 oracle and the CartPole preset."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, make_batch, within_training_step
from tdrl.algorithm.imitation.discrete_bcq import DiscreteBCQ, DiscreteBCQPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer


class Head(torch.nn.Module):
    """``trunk -> linear`` with Tianshou's ``(obs, state, info) -> (out, state)`` signature,
    so that both libraries accept it; heads may share one trunk."""

    def __init__(self, trunk: torch.nn.Module, n_out: int) -> None:
        super().__init__()
        self.trunk = trunk
        self.last = torch.nn.Linear(16, n_out)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.last(self.trunk(torch.as_tensor(obs, dtype=torch.float32))), state


def _nets(n_actions: int = 3, seed: int = 0) -> tuple[Head, Head]:
    """A Q network and an imitator sharing one trunk (as Tianshou's test builds them)."""
    torch.manual_seed(seed)
    trunk = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU())
    return Head(trunk, n_actions), Head(trunk, n_actions)


def _fixed(values: list[list[float]]) -> torch.nn.Module:
    """A 'network' returning ``values`` rows indexed by ``obs[:, 0]``."""
    table = torch.tensor(values)

    class Table(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.nn.Parameter(table.clone())

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return self.table[obs[:, 0].long()]

    return Table()


def _alg(tau: float = 0.3, n_actions: int = 3, **kw: Any) -> DiscreteBCQ:
    model, imitator = _nets(n_actions)
    policy = DiscreteBCQPolicy(
        model=model,
        imitator=imitator,
        action_space=gym.spaces.Discrete(n_actions),
        unlikely_action_threshold=tau,
    )
    return DiscreteBCQ(policy=policy, **kw)


# ------------------------------------------------------------------------------ semantics
def test_acting_skips_unlikely_actions() -> None:
    # Q prefers action 2, but the imitator gives it 0.1 / 0.6 < 0.3 of the best probability
    q = _fixed([[1.0, 2.0, 5.0]])
    g = _fixed([torch.log(torch.tensor([0.6, 0.3, 0.1])).tolist()])
    space = gym.spaces.Discrete(3)
    obs = make_batch({"obs": torch.zeros(1, 1)}, 1)
    for tau, act in ((0.3, 1), (0.6, 0), (0.1, 2), (0.0, 2)):
        p = DiscreteBCQPolicy(
            model=q, imitator=g, action_space=space, unlikely_action_threshold=tau
        )
        assert p(obs)["act"].item() == act, tau
    # an action mask removes legal-but-likely actions and never picks an illegal one
    p = DiscreteBCQPolicy(model=q, imitator=g, action_space=space, unlikely_action_threshold=0.3)
    masked = TensorDict(
        {"obs": torch.zeros(1, 1), "mask": torch.tensor([[False, True, True]])}, [1]
    )
    # the best legal action (1, p = 0.3) sets the bar: 0.1 / 0.3 >= 0.3, so action 2 is allowed
    assert p(make_batch({"obs": masked}, 1))["act"].item() == 2
    masked["mask"] = torch.tensor([[True, False, False]])
    assert p(make_batch({"obs": masked}, 1))["act"].item() == 0


def test_bootstrap_uses_the_constrained_online_action_and_the_target_q() -> None:
    q = _fixed([[1.0, 2.0, 5.0]])
    g = _fixed([torch.log(torch.tensor([0.6, 0.3, 0.1])).tolist()])
    p = DiscreteBCQPolicy(
        model=q, imitator=g, action_space=gym.spaces.Discrete(3), unlikely_action_threshold=0.3
    )
    alg = DiscreteBCQ(policy=p, target_update_freq=5)
    with torch.no_grad():
        alg.target_model_params["table"].copy_(torch.tensor([[10.0, 20.0, 30.0]]))
    # online Q picks action 1 (action 2 is unlikely); the target rates it 20
    assert alg.next_value(torch.zeros(2, 1)).tolist() == [20.0, 20.0]
    no_target = DiscreteBCQ(policy=p, target_update_freq=0)
    assert no_target.model_old is None and no_target.next_value(torch.zeros(1, 1)).item() == 2.0


def test_nstep_returns_and_losses() -> None:
    alg = _alg(gamma=0.5, n_step=2, target_update_freq=3, imitation_logits_penalty=0.1)
    buf = VectorReplayBuffer(10, 1)
    rng = np.random.default_rng(0)
    for t in range(6):
        buf.add(
            Batch(
                obs=rng.normal(size=(1, 4)).astype(np.float32),
                act=np.array([t % 3]),
                rew=np.array([1.0 + t], np.float32),
                terminated=np.array([t == 2]),
                truncated=np.array([False]),
                obs_next=rng.normal(size=(1, 4)).astype(np.float32),
            )
        )
    idx = np.arange(6)
    batch = alg.preprocess(buf[idx], buf, idx)
    v = alg.next_value(buf[idx]["obs_next"])
    # 0 -> 1 (bootstrap at 1), 1 -> 2 terminated, 2 terminated, 3 -> 4, 4 -> 5, 5 unfinished
    expected = torch.tensor(
        [
            1 + 0.5 * 2 + 0.25 * v[1],
            2 + 0.5 * 3,
            3.0,
            4 + 0.5 * 5 + 0.25 * v[4],
            5 + 0.5 * 6 + 0.25 * v[5],
            6 + 0.5 * v[5],
        ]
    )
    torch.testing.assert_close(batch["returns"].reshape(-1), expected)
    out = alg(batch)
    q = alg.policy.model(batch["obs"])[0]
    logits = alg.policy.imitator(batch["obs"])[0]
    act = batch["act"].long()
    q_a = q[torch.arange(6), act]
    torch.testing.assert_close(
        out["loss_qvalue"], F.smooth_l1_loss(q_a, batch["returns"].reshape(-1))
    )
    torch.testing.assert_close(out["loss_imitation"], F.cross_entropy(logits, act))
    torch.testing.assert_close(out["loss_logits_penalty"], 0.1 * logits.pow(2).mean())
    torch.testing.assert_close(batch["td_error"], (batch["returns"].reshape(-1) - q_a).detach())


def test_one_optimizer_trains_q_imitator_and_shared_trunk() -> None:
    alg = _alg(target_update_freq=2)
    names = {n for n, _ in alg.policy.named_parameters()}
    optimized = {id(p) for p in alg.optim.params}
    assert optimized == {id(p) for p in alg.policy.parameters()}
    assert len(alg.optim.params) == len(names) == 6  # the shared trunk counted once
    # targets: synced before the first step, then every 2 steps (Tianshou's iteration rule)
    buf = VectorReplayBuffer(10, 1)
    for t in range(8):
        buf.add(
            Batch(
                obs=np.full((1, 4), t, np.float32),
                act=np.array([t % 3]),
                rew=np.ones(1, np.float32),
                terminated=np.array([False]),
                truncated=np.array([False]),
                obs_next=np.full((1, 4), t + 1, np.float32),
            )
        )
    synced = []
    for _ in range(5):
        before = alg.policy.model.last.weight.detach().clone()
        alg.update(buf, 4)
        synced.append(bool(torch.equal(alg.target_model_params["last", "weight"], before)))
    assert synced == [True, False, True, False, True]


def test_torchrl_layout_one_step_target_and_gradients() -> None:
    alg = _alg(gamma=0.9, target_update_freq=10)
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(3, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True], [False]] * 3),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue", "loss_imitation", "loss_logits_penalty"}
    v = alg.next_value(td["next", "observation"])
    keep = 1.0 - td["next", "terminated"].float().reshape(-1)
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1) + 0.9 * keep * v)
    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(term, list(params.values()), allow_unused=True)
        return {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}

    q_keys, i_keys = reached(out["loss_qvalue"]), reached(out["loss_imitation"])
    assert {k.split(".")[-2] for k in q_keys} == {"last", "0"}
    assert all(k.startswith(("policy.model.", "model_params.")) for k in q_keys)
    assert all(k.startswith("policy.imitator.") or ".trunk." in k for k in i_keys)
    assert not any("imitator.last" in k for k in q_keys)
    assert not any("model.last" in k for k in i_keys)
    # the policy acts on a TorchRL TensorDict
    act_td = TensorDict({"observation": torch.randn(5, 4)}, [5])
    alg.policy(act_td)
    assert act_td["action"].shape == (5,) and act_td["imitation_logits"].shape == (5, 3)


def test_argument_errors() -> None:
    model, imitator = _nets()
    space = gym.spaces.Discrete(3)
    with pytest.raises(
        ValueError, match=r"unlikely_action_threshold: expected a value in \[0, 1\), got 1.0"
    ):
        DiscreteBCQPolicy(
            model=model, imitator=imitator, action_space=space, unlikely_action_threshold=1.0
        )
    with pytest.raises(ValueError, match="action_space: DiscreteBCQPolicy needs a Discrete"):
        DiscreteBCQPolicy(model=model, imitator=imitator, action_space=gym.spaces.Box(-1, 1, (1,)))
    policy = DiscreteBCQPolicy(model=model, imitator=imitator, action_space=space)
    with pytest.raises(ValueError, match="imitation_logits_penalty: expected a value >= 0, got -1"):
        DiscreteBCQ(policy=policy, imitation_logits_penalty=-1)
    with pytest.raises(ValueError, match="target_update_freq: expected an int >= 0, got -1"):
        DiscreteBCQ(policy=policy, target_update_freq=-1)
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        DiscreteBCQ(policy=policy, n_step=0)
    from tdrl.algorithm.modelfree.dqn import DQNPolicy

    with pytest.raises(TypeError, match="policy: expected a DiscreteBCQPolicy, got DQNPolicy"):
        DiscreteBCQ(policy=DQNPolicy(model=model, action_space=space))  # type: ignore[arg-type]
    alg = DiscreteBCQ(policy=policy)
    with pytest.raises(KeyError, match="the action key 'act' is missing"):
        alg(Batch(obs=torch.zeros(2, 4), returns=torch.zeros(2)))


# ------------------------------------------------------------------ Tianshou 2.0.1 oracle
def _pair(sgd: bool, tau: float = 0.3, n_step: int = 3, freq: int = 2) -> tuple[DiscreteBCQ, Any]:
    from tianshou.algorithm import DiscreteBCQ as TBCQ
    from tianshou.algorithm.imitation.discrete_bcq import DiscreteBCQPolicy as TBCQPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory

    model, imitator = _nets()
    nets = copy.deepcopy(torch.nn.ModuleList([model, imitator]))  # keeps the shared trunk
    space = gym.spaces.Discrete(3)
    ours = DiscreteBCQ(
        policy=DiscreteBCQPolicy(
            model=model, imitator=imitator, action_space=space, unlikely_action_threshold=tau
        ),
        optim=OptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else 1e-3,
        gamma=0.9,
        n_step=n_step,
        target_update_freq=freq,
        imitation_logits_penalty=0.05,
    )
    peer = TBCQ(
        policy=TBCQPolicy(
            model=nets[0],
            imitator=nets[1],
            action_space=space,
            unlikely_action_threshold=tau,
            target_update_freq=freq,
        ),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else AdamOptimizerFactory(),
        gamma=0.9,
        n_step_return_horizon=n_step,
        target_update_freq=freq,
        imitation_logits_penalty=0.05,
    )
    return ours, peer


def _peer_step(peer: Any, buf: Any, idx: np.ndarray) -> tuple[Any, Any]:
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        tb = peer._preprocess_batch(buf[idx], buf, idx)
        returns = tb.returns.clone()
        stats = peer._update_with_batch(tb)
    return stats, returns


@pytest.mark.parametrize("tau", [0.3, 0.0])
def test_update_matches_tianshou_exactly(tau: float) -> None:
    """n-step (3) targets with the constrained bootstrap action, the three losses over 6
    updates (target syncs every 2) and every parameter after them, against Tianshou
    2.0.1's DiscreteBCQ (SGD keeps a multi-step comparison exact). No deliberate difference
    without prioritized replay."""
    pytest.importorskip("tianshou")
    from tests.algorithm.test_c51 import paired_buffers, sample_indices

    ours, peer = _pair(sgd=True, tau=tau)
    b_ours, b_peer = paired_buffers(3)
    rng = np.random.default_rng(0)
    for step in range(6):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        stats, returns = _peer_step(peer, b_peer, idx)
        torch.testing.assert_close(batch["returns"], returns)
        assert got["loss_qvalue"] == pytest.approx(stats.q_loss, rel=1e-5), step
        assert got["loss_imitation"] == pytest.approx(stats.i_loss, rel=1e-5), step
        assert got["loss_logits_penalty"] == pytest.approx(0.05 * stats.reg_loss, rel=1e-5)
        assert got["loss"] == pytest.approx(stats.loss, rel=1e-5), step
    for p_ours, p_peer in zip(ours.policy.parameters(), peer.policy.parameters(), strict=True):
        torch.testing.assert_close(p_ours, p_peer)
    # acting: the same constrained greedy actions
    obs = torch.randn(32, 4)
    from tianshou.data import Batch as TBatch

    ours_act = ours.policy(make_batch({"obs": obs}, 32))["act"]
    peer_act = peer.policy(TBatch(obs=obs, info={})).act
    assert torch.equal(ours_act, peer_act)


def test_adam_update_matches_tianshou() -> None:
    """One update with Adam (the preset's optimizer): the losses and every parameter."""
    pytest.importorskip("tianshou")
    from tests.algorithm.test_c51 import paired_buffers, sample_indices

    ours, peer = _pair(sgd=False)
    b_ours, b_peer = paired_buffers(3)
    idx = sample_indices(b_ours, np.random.default_rng(1))
    with within_training_step(ours.policy):
        got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
    stats, _ = _peer_step(peer, b_peer, idx)
    assert got["loss"] == pytest.approx(stats.loss, rel=1e-5)
    for p_ours, p_peer in zip(ours.policy.parameters(), peer.policy.parameters(), strict=True):
        torch.testing.assert_close(p_ours, p_peer)


# ---------------------------------------------------------------------------- the preset
def test_preset_builds_and_checks_the_dataset() -> None:
    import tdrl
    from tdrl import registry
    from tdrl.data.buffer import ReplayBuffer
    from tdrl.data.datasets import DatasetError

    p: Any = registry.entry("discrete_bcq", "CartPole-v1").preset
    assert (
        p.threshold == 185.0 and registry.entry("discrete_bcq", "CartPole-v1").trainer == "offline"
    )
    with pytest.raises(registry.PresetError, match="discrete_bcq learns from a dataset"):
        tdrl.make_algorithm("discrete_bcq", "CartPole-v1")
    z = np.zeros(3, dtype=bool)
    good = ReplayBuffer.from_data(
        np.zeros((3, 4), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 4), np.float32),
    )  # fmt: skip
    alg = tdrl.make_algorithm("discrete_bcq", "CartPole-v1", dataset=good)
    assert type(alg).__name__ == "DiscreteBCQ"
    bad = ReplayBuffer.from_data(
        np.zeros((3, 3), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 3), np.float32),
    )  # fmt: skip
    with pytest.raises(DatasetError, match="observations of shape"):
        tdrl.make_algorithm("discrete_bcq", "CartPole-v1", dataset=bad)


@pytest.mark.slow
def test_cartpole_preset_reaches_threshold(tmp_path: Any, cartpole_dataset: str) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="discrete_bcq",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=cartpole_dataset,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 185.0


def test_trains_in_a_plain_torchrl_loop() -> None:
    """One Adam over ``loss.parameters()`` on the sum of the terms: on a fixed TorchRL batch
    the imitator learns the data's actions and the Q loss falls."""
    alg = _alg(gamma=0.9, target_update_freq=1000)
    alg.set_keys(observation="observation", action="action")
    g = torch.Generator().manual_seed(1)
    n = 64
    obs = torch.randn(n, 4, generator=g)
    td = TensorDict(
        {
            "observation": obs,
            "action": (obs[:, 0] > 0).long() * 2,  # actions 0 and 2 only
            "next": {
                "observation": torch.randn(n, 4, generator=g),
                "reward": torch.randn(n, 1, generator=g),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.ones(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    optim = torch.optim.Adam(alg.parameters(), lr=1e-2)
    for _ in range(100):
        out = alg(td.clone())
        total = sum(v for k, v in out.items() if k.startswith("loss_"))
        optim.zero_grad()
        total.backward()
        optim.step()
    assert out["loss_imitation"].item() < 0.2 and out["loss_qvalue"].item() < 0.2
    # action 1 never appears in the data: the constrained policy never takes it
    act_td = TensorDict({"observation": torch.randn(256, 4, generator=g)}, [256])
    alg.policy(act_td)
    assert not bool((act_td["action"] == 1).any())
