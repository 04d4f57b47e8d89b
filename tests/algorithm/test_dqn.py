"""DQN: n-step targets over episode boundaries, double-Q, hard target updates, PER."""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.utils.net import QNet
from tests.algorithm.fakebuf import FakePrioBuffer, FakeVectorBuffer


def _add(buf: FakeVectorBuffer, obs, act, rew, term, trunc, obs_next) -> None:
    buf.add(
        {
            "obs": np.asarray(obs, np.float32),
            "act": np.asarray(act),
            "rew": np.asarray(rew, np.float32),
            "terminated": np.asarray(term),
            "truncated": np.asarray(trunc),
            "obs_next": np.asarray(obs_next, np.float32),
        }
    )


def _episode_buffer() -> FakeVectorBuffer:
    """Steps 0-2 terminate at 2, steps 3-4 are truncated at 4, steps 5-6 are unfinished."""
    buf = FakeVectorBuffer(10, 1)
    term = [0, 0, 1, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 1, 0, 0]
    for t in range(7):
        _add(
            buf, [[float(t)]], [0], [t + 1.0], [bool(term[t])], [bool(trunc[t])], [[10.0 * (t + 1)]]
        )
    return buf


def _linear_q(weight: list[float], bias: list[float]) -> torch.nn.Linear:
    lin = torch.nn.Linear(1, len(bias))
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(weight).reshape(-1, 1))
        lin.bias.copy_(torch.tensor(bias))
    return lin


def test_nstep_target_follows_episode_rules() -> None:
    # Q(s') = [obs_next, -100]: the bootstrap value is obs_next of the chain's last step
    policy = DQNPolicy(
        model=_linear_q([1.0, 0.0], [0.0, -100.0]), action_space=gym.spaces.Discrete(2)
    )
    alg = DQN(policy=policy, gamma=0.5, n_step=3, target_update_freq=0)
    buf = _episode_buffer()
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    g = 0.5
    expected = [
        1 + g * 2 + g**2 * 3,  # terminated at 2: no bootstrap
        2 + g * 3,
        3.0,
        4 + g * 5 + g**2 * 50,  # truncated at 4: bootstrap from obs_next[4] = 50
        5 + g * 50,
        6 + g * 7 + g**2 * 70,  # unfinished at 6: bootstrap from obs_next[6] = 70
        7 + g * 70,
    ]
    torch.testing.assert_close(batch["returns"].reshape(-1), torch.tensor(expected))


def test_double_and_nature_targets() -> None:
    buf = _episode_buffer()
    idx = np.array([5])
    for is_double, expected in ((True, 3.0), (False, 5.0)):
        policy = DQNPolicy(
            model=_linear_q([0.0, 0.0], [1.0, 2.0]), action_space=gym.spaces.Discrete(2)
        )
        alg = DQN(policy=policy, target_update_freq=5, is_double=is_double)
        with torch.no_grad():  # target net rates [5, 3]; the online net picks action 1
            alg.target_model_params["bias"].copy_(torch.tensor([5.0, 3.0]))
        assert alg._target_q(buf, idx).item() == pytest.approx(expected)
    # without a target network both use the online maximum
    alg = DQN(
        policy=DQNPolicy(
            model=_linear_q([0.0, 0.0], [1.0, 2.0]), action_space=gym.spaces.Discrete(2)
        )
    )
    assert alg.model_old is None and alg._target_q(buf, idx).item() == pytest.approx(2.0)


def test_loss_keys_finite_and_gradients_only_to_online_model() -> None:
    torch.manual_seed(0)
    policy = DQNPolicy(model=QNet(1, 2, (8,), dueling=True), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=policy, n_step=2, target_update_freq=10)
    buf = _episode_buffer()
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    out = alg(batch)
    assert set(out.keys()) == {"loss_qvalue"} and torch.isfinite(out["loss_qvalue"])
    assert "td_error" in batch and not batch["td_error"].requires_grad
    out["loss_qvalue"].backward()
    assert all(p.grad is not None for p in policy.model.parameters())
    assert all(not t.requires_grad for t in alg.target_model_params.values(True, True))
    assert all(p.grad is None for p in alg.model_old.parameters())


def test_dqn_loss_matches_torchrl_dqnloss() -> None:
    from torchrl.modules import QValueActor
    from torchrl.objectives import DQNLoss

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    alg = DQN(policy=DQNPolicy(model=net, action_space=gym.spaces.Discrete(2)), gamma=0.9)
    buf = _episode_buffer()
    idx = np.arange(7)
    ours = alg(alg.preprocess(buf[idx], buf, idx))["loss_qvalue"]
    b = buf[idx]
    td = TensorDict(
        {
            "observation": b["obs"],
            "action": b["act"],
            "next": {
                "observation": b["obs_next"],
                "reward": b["rew"][:, None],
                "done": b["done"][:, None],
                "terminated": b["terminated"][:, None],
            },
        },
        [7],
    )
    ref = DQNLoss(
        QValueActor(net, in_keys=["observation"], action_space="categorical"),
        loss_function="l2",
        delay_value=False,
        action_space="categorical",
    )
    ref.make_value_estimator(gamma=0.9)
    torch.testing.assert_close(ours, ref(td)["loss"])


def test_hard_target_update_every_freq_gradient_steps() -> None:
    torch.manual_seed(0)
    policy = DQNPolicy(model=QNet(1, 2, (8,)), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=policy, optim=0.05, target_update_freq=3)
    buf = _episode_buffer()

    def params() -> list[torch.Tensor]:
        return [p.detach().clone() for p in policy.model.parameters()]

    history = [params()]  # history[k + 1]: online weights after update k
    for k in range(8):
        alg.update(buf, 4)
        history.append(params())
        synced = history[3 * (k // 3)]  # synced before updates 0, 3, 6
        for t, s in zip(alg.model_old.parameters(), synced):
            torch.testing.assert_close(t, s)


def test_prioritized_weights_used_and_td_error_written_back() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(10, 1)
    for t in range(7):
        _add(buf, [[float(t)]], [t % 2], [1.0], [t == 6], [False], [[float(t + 1)]])
    policy = DQNPolicy(model=QNet(1, 2, (8,)), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=policy, gamma=0.9)
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    assert "weight" in batch
    weighted = alg(batch)["loss_qvalue"]
    td = batch["td_error"]
    torch.testing.assert_close(weighted, (batch["weight"].reshape(-1) * td.pow(2)).mean())
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and written.shape == (5,)
    assert bool((written >= 0).all())


def test_huber_loss() -> None:
    policy = DQNPolicy(model=_linear_q([0.0, 0.0], [0.0, 0.0]), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=policy, huber_loss_delta=1.0)
    batch = make_batch(
        {
            "obs": torch.zeros(2, 1),
            "act": torch.tensor([0, 1]),
            "returns": torch.tensor([[3.0], [0.5]]),
        },
        2,
    )
    # huber(3) = 1 * (3 - 0.5) = 2.5; huber(0.5) = 0.5 * 0.25 = 0.125
    assert alg(batch)["loss_qvalue"].item() == pytest.approx((2.5 + 0.125) / 2)


def test_epsilon_greedy_exploration() -> None:
    np.random.seed(0)
    policy = DQNPolicy(
        model=QNet(2, 4, (4,)),
        action_space=gym.spaces.Discrete(4),
        eps_training=1.0,
        eps_inference=0.0,
    )
    act = np.zeros(4000, dtype=np.int64)
    batch = make_batch({"obs": torch.zeros(4000, 2)}, 4000)
    assert policy.exploration_noise(act, batch) is act  # eps_inference = 0: unchanged
    with within_training_step(policy):
        noisy = policy.exploration_noise(act, batch)
        counts = np.bincount(noisy, minlength=4) / len(noisy)
        np.testing.assert_allclose(counts, 0.25, atol=0.03)
        policy.set_eps(0.2)
        noisy_t = policy.exploration_noise(torch.zeros(4000, dtype=torch.long), batch)
        assert isinstance(noisy_t, torch.Tensor)
        # a changed action happens with probability eps * 3/4
        assert float((noisy_t != 0).float().mean()) == pytest.approx(0.15, abs=0.03)
        # an action mask restricts random actions
        mask = torch.tensor([[False, True, False, True]]).expand(4000, 4)
        obs = TensorDict({"obs": torch.zeros(4000, 2), "mask": mask}, [4000])
        policy.set_eps_training(1.0)
        masked = policy.exploration_noise(act, make_batch({"obs": obs}, 4000))
        assert set(np.unique(masked)) == {1, 3}
    policy.set_eps_inference(1.0)
    assert len(np.unique(policy.exploration_noise(act, batch))) == 4


def test_action_mask_in_forward() -> None:
    policy = DQNPolicy(
        model=_linear_q([0.0, 0.0, 0.0], [3.0, 2.0, 1.0]), action_space=gym.spaces.Discrete(3)
    )
    obs = TensorDict(
        {"obs": torch.zeros(2, 1), "mask": torch.tensor([[True, True, True], [False, True, True]])},
        [2],
    )
    assert policy(make_batch({"obs": obs}, 2))["act"].tolist() == [0, 1]


def test_state_dict_round_trip_with_optimizer() -> None:
    torch.manual_seed(0)
    buf = _episode_buffer()

    def make() -> DQN:
        return DQN(
            policy=DQNPolicy(model=QNet(1, 2, (8,)), action_space=gym.spaces.Discrete(2)),
            target_update_freq=2,
            n_step=2,
        )

    a = make()
    for _ in range(3):
        a.update(buf, 4)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    sd = torch.load(f, weights_only=False)
    assert "_optimizers" in sd and sd["_optimizers"][0]["state"]
    b = make()
    b.load_state_dict(sd)
    obs = torch.randn(5, 1)
    torch.testing.assert_close(b.policy.q_values(obs), a.policy.q_values(obs))
    torch.testing.assert_close(b.model_old(obs), a.model_old(obs))
    assert b._updaters[0].counter == a._updaters[0].counter
    sa, sb = a.optim.optim.state_dict()["state"], b.optim.optim.state_dict()["state"]
    for k in sa:
        torch.testing.assert_close(sa[k]["exp_avg"], sb[k]["exp_avg"])
    # both continue identically
    idx = np.array([0, 3, 5, 6])
    la = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    lb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    assert la == pytest.approx(lb)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()):
        torch.testing.assert_close(pa, pb)


def test_argument_errors() -> None:
    policy = DQNPolicy(model=QNet(1, 2, (4,)), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 1\.5"):
        DQN(policy=policy, gamma=1.5)
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        DQN(policy=policy, n_step=0)
    with pytest.raises(
        ValueError, match="action_space: DQNPolicy needs a Discrete action space, got Box"
    ):
        DQNPolicy(model=QNet(1, 2, (4,)), action_space=gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(ValueError, match="batch_size: expected an int"):
        DQN(policy=policy).update(_episode_buffer(), None)


class _SharedQ(torch.nn.Module):
    """A Q-net both libraries accept: ``model(obs, state=None, info=None) -> (q, None)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = QNet(4, 2, (16, 16))

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


def test_update_matches_tianshou_exactly() -> None:
    pytest.importorskip("tianshou")
    import copy

    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    torch.manual_seed(0)
    model = _SharedQ()
    space = gym.spaces.Discrete(2)
    ours = DQN(
        policy=DQNPolicy(model=copy.deepcopy(model), action_space=space),
        gamma=0.9,
        n_step=3,
        target_update_freq=2,
    )
    peer = TDQN(
        policy=DiscreteQLearningPolicy(model=copy.deepcopy(model), action_space=space),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, 2, 3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(5):
        idx = rng.integers(0, 45, 16)
        idx = idx[np.isin(idx, b_ours.sample_indices(0))]
        with within_training_step(ours.policy):
            got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


def test_huber_loss_with_priorities_deliberately_differs_from_tianshou() -> None:
    """Deliberate difference (docs/differences.md): tdrl weights the per-sample Huber loss
    by the prioritized-replay importance weights; Tianshou's Huber path drops the weights.
    With unit weights the two agree."""
    pytest.importorskip("tianshou")
    import copy

    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.data.batch import Batch

    torch.manual_seed(0)
    model = _SharedQ()
    space = gym.spaces.Discrete(2)
    ours = DQN(
        policy=DQNPolicy(model=copy.deepcopy(model), action_space=space), huber_loss_delta=1.0
    )
    peer = TDQN(
        policy=DiscreteQLearningPolicy(model=copy.deepcopy(model), action_space=space),
        optim=AdamOptimizerFactory(lr=1e-3),
        huber_loss_delta=1.0,
    )
    obs = torch.randn(8, 4)
    act = torch.randint(0, 2, (8,))
    returns = torch.randn(8) * 3
    for weight, same in ((torch.ones(8), True), (torch.linspace(0.1, 2.0, 8), False)):
        batch = Batch(obs=obs, act=act, returns=returns, weight=weight)
        got = ours(batch)["loss_qvalue"].item()
        tb = TBatch(obs=obs.numpy(), act=act.numpy(), returns=returns, weight=weight, info={})
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            expected = peer._update_with_batch(tb).loss
        assert (got == pytest.approx(expected, rel=1e-5)) is same
