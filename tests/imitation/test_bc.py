"""Behaviour cloning: discrete and continuous losses, TorchRL layout, Tianshou oracle,
offline and off-policy training, presets and convergence from gathered datasets."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.imitation.bc import BC, ImitationPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import MLP, DeterministicActor

BOX = gym.spaces.Box(-2.0, 2.0, (2,))
DISCRETE = gym.spaces.Discrete(3)


def _continuous(**kw: Any) -> BC:
    torch.manual_seed(0)
    policy = ImitationPolicy(
        actor=DeterministicActor(4, 2, (16,)), action_space=BOX, action_scaling=True
    )
    return BC(policy=policy, optim=1e-2, **kw)


def _discrete(output: str = "logits") -> BC:
    torch.manual_seed(0)
    net: torch.nn.Module = MLP(4, 3, (16,))
    if output == "probs":
        net = torch.nn.Sequential(net, torch.nn.Softmax(-1))
    policy = ImitationPolicy(actor=net, action_space=DISCRETE, output=output)  # type: ignore[arg-type]
    return BC(policy=policy, optim=1e-2)


def _buffer(discrete: bool, n: int = 40, envs: int = 2) -> VectorReplayBuffer:
    rng = np.random.default_rng(0)
    buf = VectorReplayBuffer(n, envs)
    for t in range(n // envs):
        act = (
            rng.integers(0, 3, size=envs)
            if discrete
            else rng.uniform(-1, 1, size=(envs, 2)).astype(np.float32)
        )
        buf.add(
            Batch(
                obs=rng.normal(size=(envs, 4)).astype(np.float32),
                act=act,
                rew=rng.normal(size=envs),
                terminated=np.array([t % 7 == 6] * envs),
                truncated=np.zeros(envs, bool),
                obs_next=rng.normal(size=(envs, 4)).astype(np.float32),
            )
        )
    return buf


# ------------------------------------------------------------------------------ semantics
def test_discrete_loss_is_cross_entropy_of_the_logits() -> None:
    alg = _discrete()
    obs, act = torch.randn(8, 4), torch.randint(0, 3, (8,))
    out = alg(make_batch({"obs": obs, "act": act}, 8))
    logits = alg.policy.actor(obs)
    torch.testing.assert_close(out["loss_bc"], F.cross_entropy(logits, act))
    greedy = alg.policy(make_batch({"obs": obs}, 8))["act"]
    torch.testing.assert_close(greedy, logits.argmax(-1))


def test_discrete_probability_output_takes_the_log() -> None:
    alg = _discrete("probs")
    obs, act = torch.randn(8, 4), torch.randint(0, 3, (8,))
    probs = alg.policy.actor(obs)
    expected = -probs.log()[torch.arange(8), act].mean()
    torch.testing.assert_close(alg(make_batch({"obs": obs, "act": act}, 8))["loss_bc"], expected)


def test_continuous_loss_is_mse_to_the_raw_actions() -> None:
    alg = _continuous()
    obs, act = torch.randn(8, 4), torch.rand(8, 2) * 2 - 1
    out = alg(make_batch({"obs": obs, "act": act}, 8))
    torch.testing.assert_close(out["loss_bc"], F.mse_loss(alg.policy.actor(obs), act))
    # the policy acts with the raw action, scaled to the Box by map_action
    raw = alg.policy(make_batch({"obs": obs}, 8))["act"]
    env_act = alg.policy.map_action(raw)
    np.testing.assert_allclose(env_act, 2.0 * raw.detach().numpy(), atol=1e-6)


def test_offline_update_fits_the_dataset() -> None:
    for alg, discrete in ((_discrete(), True), (_continuous(), False)):
        buf = _buffer(discrete)
        first = alg.update(buf, 40)["loss_bc"]
        for _ in range(300):
            last = alg.update(buf, 40)["loss_bc"]
        assert last < 0.6 * first, (discrete, first, last)


def test_off_policy_training_from_a_collectors_buffer() -> None:
    """Off-policy BC (Tianshou's OffPolicyImitationLearning): the same update on a replay
    buffer a collector fills, under the off-policy trainer."""
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv
    from tdrl.trainer import OffPolicyTrainer

    torch.manual_seed(0)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    policy = ImitationPolicy(actor=MLP(4, 2, (16,)), action_space=gym.spaces.Discrete(2))
    alg = BC(policy=policy)
    buf = VectorReplayBuffer(1000, 2)
    collector = Collector(policy, envs, buf)
    collector.reset(seed=0)
    result = OffPolicyTrainer(
        alg,
        collector,
        test_collector=Collector(policy, test_envs),
        max_epochs=1,
        step_per_epoch=100,
        step_per_collect=10,
        update_per_step=0.5,
        batch_size=16,
        episode_per_test=2,
        show_progress=False,
    ).run()
    assert result.gradient_step == 50 and len(buf) >= 100


def test_torchrl_layout_and_gradients_reach_the_actor_only() -> None:
    alg = _continuous()
    alg.set_keys(observation="observation", action="action")
    act = torch.rand(8, 2) * 4 - 2  # env-range actions, as a TorchRL env takes them
    td = TensorDict(
        {
            "observation": torch.randn(8, 4),
            "action": act,
            "next": {
                "observation": torch.randn(8, 4),
                "reward": torch.randn(8, 1),
                "done": torch.zeros(8, 1, dtype=torch.bool),
                "terminated": torch.zeros(8, 1, dtype=torch.bool),
            },
        },
        [8],
    )
    out = alg(td)
    expected = F.mse_loss(alg.policy.actor(td["observation"]), act / 2.0)  # raw actions
    torch.testing.assert_close(out["loss_bc"], expected)
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_bc"], list(params.values()), allow_unused=True)
    reached = {n for (n, _), g in zip(params.items(), grads, strict=True) if g is not None}
    assert reached and all(n.startswith("policy.actor.") for n in reached)
    # a TorchRL policy call writes an env-range action
    with torch.no_grad():
        acted = alg.policy(TensorDict({"observation": torch.randn(5, 4)}, [5]))
    assert acted["action"].abs().max() <= 2.0


def test_torchrl_one_hot_discrete_actions() -> None:
    alg = _discrete()
    alg.set_keys(observation="observation", action="action")
    obs, act = torch.randn(6, 4), torch.randint(0, 3, (6,))
    td = TensorDict({"observation": obs, "action": F.one_hot(act, 3).float()}, [6])
    torch.testing.assert_close(alg(td)["loss_bc"], F.cross_entropy(alg.policy.actor(obs), act))


def test_bad_arguments_name_what_was_expected() -> None:
    with pytest.raises(ValueError, match="policy: expected an ImitationPolicy, got Linear"):
        BC(policy=torch.nn.Linear(2, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_grad_norm: expected a value > 0 or None, got 0"):
        _continuous(max_grad_norm=0)
    with pytest.raises(ValueError, match="output: expected 'logits' or 'probs', got 'raw'"):
        ImitationPolicy(actor=MLP(4, 3), action_space=DISCRETE, output="raw")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="action_space: expected Discrete or Box, got MultiBin"):
        ImitationPolicy(actor=MLP(4, 3), action_space=gym.spaces.MultiBinary(3))
    with pytest.raises(KeyError, match="the action key 'act' is missing"):
        _continuous()(make_batch({"obs": torch.zeros(2, 4)}, 2))


# ------------------------------------------------------------------------------ the oracle
class _SharedNet(torch.nn.Module):
    """A model both libraries accept: ``forward(obs, state, info) -> (out, state)``."""

    def __init__(self, out: int, bounded: bool) -> None:
        super().__init__()
        self.net = MLP(4, out, (16,))
        self.bounded = bounded

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        out = self.net(torch.as_tensor(obs, dtype=torch.float32))
        return (torch.tanh(out) if self.bounded else out), state


def _twin(discrete: bool) -> tuple[VectorReplayBuffer, Any]:
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB

    ours = _buffer(discrete)
    peer = TVRB(40, 2)
    for i in range(20):
        idx = np.array([i, 20 + i])
        b = ours[idx]
        peer.add(
            TBatch(
                obs=np.asarray(b.obs),
                act=np.asarray(b.act),
                rew=np.asarray(b.rew),
                terminated=np.asarray(b.terminated),
                truncated=np.asarray(b.truncated),
                obs_next=np.asarray(b.obs_next),
                info={},
            )
        )
    return ours, peer


@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("kind", ["offline", "offpolicy"])
def test_update_matches_tianshou_exactly(discrete: bool, kind: str) -> None:
    """Same weights and batches: the loss of every update and the actor after 5 updates
    agree with Tianshou 2.0.1's OfflineImitationLearning / OffPolicyImitationLearning
    (cross-entropy on the logits; MSE on the raw continuous action)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.imitation.imitation_base import (
        ImitationPolicy as TPolicy,
    )
    from tianshou.algorithm.imitation.imitation_base import (
        OfflineImitationLearning,
        OffPolicyImitationLearning,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    net = _SharedNet(3 if discrete else 2, bounded=not discrete)
    space = DISCRETE if discrete else BOX
    ours = BC(
        policy=ImitationPolicy(
            actor=copy.deepcopy(net), action_space=space, action_scaling=not discrete
        ),
        optim=1e-2,
    )
    cls = OfflineImitationLearning if kind == "offline" else OffPolicyImitationLearning
    peer = cls(
        policy=TPolicy(actor=copy.deepcopy(net), action_space=space, action_scaling=not discrete),
        optim=AdamOptimizerFactory(lr=1e-2),
    )
    b_ours, b_peer = _twin(discrete)
    rng = np.random.default_rng(1)
    for step in range(5):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            expected = peer._update_with_batch(peer._preprocess_batch(b_peer[idx], b_peer, idx))
        assert got["loss_bc"] == pytest.approx(expected.loss, rel=1e-5, abs=1e-7), step
    for p_ours, p_peer in zip(
        ours.policy.actor.parameters(), peer.policy.actor.parameters(), strict=True
    ):
        torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)
    obs = torch.randn(7, 4)
    with torch.no_grad():
        a = ours.policy(make_batch({"obs": obs}, 7))["act"]
        b = peer.policy(Batch(obs=obs, info={}))["act"]  # type: ignore[arg-type]
    torch.testing.assert_close(torch.as_tensor(a), torch.as_tensor(b))


# ------------------------------------------------------------------------------ presets
def test_preset_builds_both_action_kinds_and_checks_the_dataset() -> None:
    from tdrl import registry
    from tdrl.data.datasets import DatasetError
    from tdrl.presets.bc import build

    pend: Any = registry.preset("bc", "Pendulum-v1")
    cart: Any = registry.preset("bc", "CartPole-v1")
    assert registry.entry("bc", "Pendulum-v1").trainer == "offline"
    assert registry.entry("bc", "CartPole-v1").needs_dataset
    assert pend.hidden_sizes == cart.hidden_sizes == (128, 128)
    alg = build(pend, gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,)))
    assert alg.policy.action_type == "continuous" and alg.policy.action_scaling
    with pytest.raises(DatasetError, match="observations of shape \\(4,\\) do not fit"):
        build(pend, gym.spaces.Box(-1, 1, (3,)), BOX, dataset=_buffer(False))
    with pytest.raises(DatasetError, match="expected integer actions for a Discrete"):
        build(cart, gym.spaces.Box(-1, 1, (4,)), DISCRETE, dataset=_buffer(False))


def test_train_without_a_dataset_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tdrl.cli import main

    assert main(["train", "bc", "Pendulum-v1", "--logger", "none", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "bc learns from a dataset: expected --dataset" in err and err.count("\n") == 1


def _run(algo: str, task: str, dataset: str, threshold: float, tmp_path: Path) -> Any:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo=algo,
        task=task,
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=dataset,
        stop_reward=threshold,
    )
    result, _ = run_experiment(cfg)
    return result


@pytest.mark.slow
def test_preset_reaches_pendulum_threshold(pendulum_dataset: str, tmp_path: Path) -> None:
    result = _run("bc", "Pendulum-v1", pendulum_dataset, -400.0, tmp_path)
    assert result.best_reward >= -400.0


@pytest.mark.slow
def test_preset_reaches_cartpole_threshold(cartpole_dataset: str, tmp_path: Path) -> None:
    result = _run("bc", "CartPole-v1", cartpole_dataset, 185.0, tmp_path)
    assert result.best_reward >= 185.0
