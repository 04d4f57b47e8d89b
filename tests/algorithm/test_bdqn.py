"""BDQN: branch-mean double-Q target, per-branch TD errors, discretized continuous actions."""

from __future__ import annotations

import copy
import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.bdqn import BDQN, BDQNPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.env.discretize import DiscretizeAction, bin_values
from tdrl.utils.net_rainbow import BranchingQNet
from tests.algorithm.fakebuf import FakePrioBuffer

SPACE = gym.spaces.MultiDiscrete([3, 3])


class _FixedQ(torch.nn.Module):
    """``Q [B, 2, 3]`` = ``obs[:, :1] * slope + bias``: a hand-set branching Q-network."""

    def __init__(self, bias: list[list[float]], slope: float = 0.0) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.tensor(bias))
        self.slope = slope

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, :1, None] * self.slope + self.bias.expand(obs.shape[0], -1, -1)


def _add(buf: VectorReplayBuffer, obs, act, rew, term, trunc, obs_next) -> None:  # type: ignore[no-untyped-def]
    buf.add(
        Batch(
            obs=np.asarray(obs, np.float32),
            act=np.asarray(act),
            rew=np.asarray(rew, np.float32),
            terminated=np.asarray(term),
            truncated=np.asarray(trunc),
            obs_next=np.asarray(obs_next, np.float32),
        )
    )


def _episode_buffer() -> VectorReplayBuffer:
    """Steps 0-2 terminate at 2, steps 3-4 are truncated at 4, steps 5-6 are unfinished."""
    buf = VectorReplayBuffer(10, 1)
    term = [0, 0, 1, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 1, 0, 0]
    for t in range(7):
        _add(
            buf,
            [[float(t)]],
            [[t % 3, 0]],
            [t + 1.0],
            [bool(term[t])],
            [bool(trunc[t])],
            [[10.0 * (t + 1)]],
        )
    return buf


def test_target_is_the_branch_mean_of_double_q_values() -> None:
    online = _FixedQ([[0.0, 2.0, 1.0], [5.0, 0.0, 0.0]])  # picks sub-actions 1 and 0
    alg = BDQN(policy=BDQNPolicy(model=online, action_space=SPACE), target_update_freq=5)
    with torch.no_grad():
        alg.target_model_params["bias"].copy_(torch.tensor([[7.0, 3.0, 9.0], [1.0, 8.0, 2.0]]))
    obs = torch.zeros(2, 1)
    # double: target at the online choice, (3 + 1) / 2; nature: target max, (9 + 8) / 2
    torch.testing.assert_close(alg.next_value(obs), torch.tensor([2.0, 2.0]))
    alg.is_double = False
    torch.testing.assert_close(alg.next_value(obs), torch.tensor([8.5, 8.5]))
    # without a target network: the online max, (2 + 5) / 2
    plain = BDQN(policy=BDQNPolicy(model=online, action_space=SPACE))
    torch.testing.assert_close(plain.next_value(obs), torch.tensor([3.5, 3.5]))


def test_nstep_target_follows_episode_rules() -> None:
    # V'(s') = mean over branches of obs_next (slope 1, zero bias): the chain's last obs_next
    model = _FixedQ([[0.0] * 3, [0.0] * 3], slope=1.0)
    alg = BDQN(policy=BDQNPolicy(model=model, action_space=SPACE), gamma=0.5, n_step=2)
    buf = _episode_buffer()
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    g = 0.5
    expected = [
        1 + g * 2 + g**2 * 20,
        2 + g * 3,  # terminated at 2: no bootstrap
        3.0,
        4 + g * 5 + g**2 * 50,  # truncated at 4: bootstraps (Tianshou's BDQN does not)
        5 + g * 50,
        6 + g * 7 + g**2 * 70,  # unfinished at 6: bootstraps (Tianshou's BDQN does not)
        7 + g * 70,
    ]
    torch.testing.assert_close(batch["returns"].reshape(-1), torch.tensor(expected))


def test_loss_is_the_branch_mean_squared_error_and_priority_the_branch_sum() -> None:
    model = _FixedQ([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    alg = BDQN(policy=BDQNPolicy(model=model, action_space=SPACE))
    batch = make_batch(
        {
            "obs": torch.zeros(2, 1),
            "act": torch.tensor([[0, 2], [1, 1]]),
            "returns": torch.tensor([[4.0], [1.0]]),
        },
        2,
    )
    out = alg(batch)
    # td: [[4 - 0, 4 - 5], [1 - 1, 1 - 4]] = [[4, -1], [0, -3]]
    assert out["loss_qvalue"].item() == pytest.approx(((16 + 1) / 2 + (0 + 9) / 2) / 2)
    torch.testing.assert_close(batch["td_error"], torch.tensor([3.0, -3.0]))
    # with importance weights
    batch["weight"] = torch.tensor([1.0, 0.5])
    assert alg(batch)["loss_qvalue"].item() == pytest.approx((8.5 + 0.5 * 4.5) / 2)
    out["loss_qvalue"].backward()
    assert model.bias.grad is not None


def test_prioritized_update_writes_the_branch_sum_back() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(10, 1)
    for t in range(7):
        _add(buf, [[float(t)]], [[t % 3, 1]], [1.0], [t == 6], [False], [[float(t + 1)]])
    alg = BDQN(
        policy=BDQNPolicy(model=BranchingQNet(1, 2, 3, (8,)), action_space=SPACE),
        target_update_freq=2,
    )
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and written.shape == (5,)


def test_policy_acts_per_branch_and_explores_whole_actions() -> None:
    model = _FixedQ([[0.0, 2.0, 1.0], [5.0, 0.0, 0.0]])
    policy = BDQNPolicy(model=model, action_space=SPACE, eps_training=1.0)
    out = policy(make_batch({"obs": torch.zeros(4, 1)}, 4))
    assert out["act"].tolist() == [[1, 0]] * 4 and out["logits"].shape == (4, 2, 3)
    np.random.seed(0)
    act = np.zeros((3000, 2), dtype=np.int64)
    batch = make_batch({"obs": torch.zeros(3000, 1)}, 3000)
    assert policy.exploration_noise(act, batch) is act  # eps_inference = 0
    with within_training_step(policy):
        noisy = policy.exploration_noise(act, batch)
        for d in range(2):
            np.testing.assert_allclose(np.bincount(noisy[:, d]) / 3000, 1 / 3, atol=0.04)
        policy.set_eps_training(0.5)
        noisy_t = policy.exploration_noise(torch.zeros(3000, 2, dtype=torch.long), batch)
        assert isinstance(noisy_t, torch.Tensor)
        # an explored action differs from [0, 0] with probability 1 - 1/9
        frac = float((noisy_t != 0).any(-1).float().mean())
        assert frac == pytest.approx(0.5 * 8 / 9, abs=0.04)
        # a mask [B, D, K] restricts the random sub-actions
        mask = torch.tensor([[[False, True, False], [True, False, True]]]).expand(3000, 2, 3)
        obs = TensorDict({"obs": torch.zeros(3000, 1), "mask": mask}, [3000])
        policy.set_eps_training(1.0)
        masked = policy.exploration_noise(act, make_batch({"obs": obs}, 3000))
        assert set(np.unique(masked[:, 0])) == {1} and set(np.unique(masked[:, 1])) == {0, 2}


def test_box_action_space_is_discretized_like_the_wrapper() -> None:
    env = DiscretizeAction(gym.make("Pendulum-v1"), 7)
    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    policy = BDQNPolicy(model=BranchingQNet(3, 1, 7), action_space=box, action_bins=7)
    idx = np.arange(7).reshape(-1, 1)
    values = policy.map_action(idx)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values, env.action(idx))
    np.testing.assert_array_equal(policy.map_action_inverse(values), idx)
    t = torch.as_tensor(idx)
    assert torch.equal(policy.map_action_torch(t), torch.from_numpy(values))
    assert torch.equal(policy.map_action_inverse_torch(policy.map_action_torch(t)), t)
    # random continuous warm-up actions map to their nearest bin
    assert policy.map_action_inverse(np.array([[0.3], [-1.9]])).tolist() == [[3], [0]]
    two = gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 4.0]), dtype=np.float64)
    p2 = BDQNPolicy(model=BranchingQNet(3, 2, 3), action_space=two, action_bins=3)
    assert p2.map_action(np.array([[0, 2], [2, 1]])).tolist() == [[-1.0, 4.0], [1.0, 2.0]]


def test_discretize_wrapper() -> None:
    env = DiscretizeAction(gym.make("Pendulum-v1"), [5])
    assert env.action_space == gym.spaces.MultiDiscrete([5])
    env.reset(seed=0)
    obs, *_ = env.step(np.array([4]))
    assert obs.shape == (3,)
    assert env.action(np.array([[0], [1], [4]])).ravel().tolist() == [-2.0, -1.0, 2.0]
    with pytest.raises(ValueError, match=r"act: expected integer bin indices of shape \[..., 1\]"):
        env.action(np.array([0.5]))
    with pytest.raises(ValueError, match=r"act: expected bin indices in \[0, \[5\]\)"):
        env.action(np.array([-1]))
    with pytest.raises(ValueError, match=r"env\.action_space: expected a 1-D Box, got Discrete"):
        DiscretizeAction(gym.make("CartPole-v1"), 3)
    with pytest.raises(ValueError, match=r"bins: expected ints >= 2, got \[1\]"):
        bin_values([-1.0], [1.0], 1)
    with pytest.raises(ValueError, match=r"bins: expected one count per action dimension \(1\)"):
        bin_values([-1.0], [1.0], [3, 3])


def test_wrapped_multidiscrete_env_trains_through_the_python_api() -> None:
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv
    from tdrl.presets.bdqn import BDQNPreset, build

    torch.manual_seed(0)
    envs = DummyVectorEnv([lambda: DiscretizeAction(gym.make("Pendulum-v1"), 5)] * 2)
    alg = build(BDQNPreset(common_hidden_sizes=(16,)), envs.observation_space[0], SPACE)
    assert alg.policy.num_branches == 2  # the builder follows the MultiDiscrete space
    alg = build(
        BDQNPreset(common_hidden_sizes=(16,)),
        envs.observation_space[0],
        envs.action_space[0],
    )
    assert (alg.policy.num_branches, alg.policy.n_actions) == (1, 5)
    buf = VectorReplayBuffer(200, 2)
    coll = Collector(alg.policy, envs, buf, exploration_noise=True)
    coll.reset(seed=0)
    coll.collect(n_step=40, random=True)
    with within_training_step(alg.policy):
        coll.collect(n_step=20)
    assert buf[buf.sample_indices(0)]["act"].shape == (60, 1)
    stats = alg.update(buf, 16, 3)
    assert np.isfinite(stats["loss_qvalue"])
    envs.close()


def test_torchrl_batch_term_reaches_only_the_online_network() -> None:
    torch.manual_seed(0)
    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    policy = BDQNPolicy(model=BranchingQNet(3, 1, 5, (16,)), action_space=box, action_bins=5)
    alg = BDQN(policy=policy, gamma=0.9, target_update_freq=10)
    alg.set_keys(observation="observation", action="action")
    n = 12
    obs = torch.randn(n, 3)
    td = alg.policy(TensorDict({"observation": obs}, [n]))  # writes env values in [-2, 2]
    assert set(td["action"].reshape(-1).tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    td.set(
        "next",
        TensorDict(
            {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.ones(n, 1, dtype=torch.bool),
            },
            [n],
        ),
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue"} and torch.isfinite(out["loss_qvalue"])
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1))  # terminated
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {k for (k, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
    assert reached and all(k.startswith("policy.model.") for k in reached)
    # the loss read the bin index of each stored action: Q of the greedy bins
    q = alg.policy.q_values(obs)
    act = alg.act_of(td)
    torch.testing.assert_close(
        q.gather(-1, act.reshape(n, 1, 1)).reshape(-1), q.max(-1).values.reshape(-1)
    )


def test_state_dict_round_trip() -> None:
    torch.manual_seed(0)
    buf = _episode_buffer()

    def make() -> BDQN:
        model = BranchingQNet(1, 2, 3, (8,))
        return BDQN(policy=BDQNPolicy(model=model, action_space=SPACE), target_update_freq=2)

    a = make()
    for _ in range(3):
        a.update(buf, 4)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = make()
    b.load_state_dict(torch.load(f, weights_only=False))
    x = torch.randn(5, 1)
    torch.testing.assert_close(b.policy.q_values(x), a.policy.q_values(x))
    idx = np.array([0, 3, 5, 6])
    la = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    lb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    assert la == pytest.approx(lb)


def test_argument_errors() -> None:
    net = BranchingQNet(3, 2, 3)
    with pytest.raises(ValueError, match=r"action_space: expected the same number of sub-acti"):
        BDQNPolicy(model=net, action_space=gym.spaces.MultiDiscrete([3, 4]))
    with pytest.raises(ValueError, match="action_bins: expected None for a MultiDiscrete"):
        BDQNPolicy(model=net, action_space=SPACE, action_bins=3)
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    with pytest.raises(ValueError, match="action_bins: expected an int >= 2 for a Box"):
        BDQNPolicy(model=net, action_space=box)
    with pytest.raises(ValueError, match="action_bins: expected an int >= 2, got 1"):
        BDQNPolicy(model=net, action_space=box, action_bins=1)
    with pytest.raises(ValueError, match="action_space: BDQNPolicy needs a MultiDiscrete or"):
        BDQNPolicy(model=net, action_space=gym.spaces.Discrete(3))
    with pytest.raises(TypeError, match="policy: expected a BDQNPolicy, got DQNPolicy"):
        from tdrl.algorithm.modelfree.dqn import DQNPolicy

        dqn_policy = DQNPolicy(model=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2))
        BDQN(policy=dqn_policy)  # type: ignore[arg-type]
    policy = BDQNPolicy(model=net, action_space=SPACE)
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        BDQN(policy=policy, n_step=0)
    with pytest.raises(ValueError, match=r"model output: expected \[B, num_branches=2, action_"):
        BDQN(policy=BDQNPolicy(model=BranchingQNet(3, 2, 4), action_space=SPACE)).next_value(
            torch.zeros(1, 3)
        )
    with pytest.raises(ValueError, match="num_branches: expected an int >= 1, got 0"):
        BranchingQNet(3, 0, 3)
    with pytest.raises(ValueError, match="common_hidden_sizes: expected at least one width"):
        BranchingQNet(3, 1, 3, ())


# --------------------------------------------------------------------------- Tianshou
def _copy_into_tianshou(ours: BranchingQNet, num_branches: int, bins: int) -> torch.nn.Module:
    from tianshou.utils.net.common import BranchingNet

    peer = BranchingNet(
        state_shape=3,
        num_branches=num_branches,
        action_per_branch=bins,
        common_hidden_sizes=[16, 16],
        value_hidden_sizes=[16],
        action_hidden_sizes=[16],
    )
    # the same layers in the same order: common, value, branches
    values = copy.deepcopy(list(ours.state_dict().values()))
    peer.load_state_dict(dict(zip(peer.state_dict(), values, strict=True)))
    return peer


def test_update_matches_tianshou_exactly() -> None:
    """Same weights, buffer and indices: same losses and parameters as Tianshou 2.0.1's
    ``BDQN`` over 6 updates (target syncs at 0, 3). Deliberate differences kept out of the
    comparison: Tianshou bootstraps with gamma 0.99 whatever it is given (so gamma is 0.99
    here) and masks the bootstrap at truncated and unfinished steps too (so the buffer has
    terminations only and no unfinished step is sampled)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import BDQN as TBDQN
    from tianshou.algorithm.modelfree.bdqn import BDQNPolicy as TBDQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import PrioritizedVectorReplayBuffer as TPVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.data.buffer.prio import PrioritizedVectorReplayBuffer

    torch.manual_seed(0)
    space = gym.spaces.MultiDiscrete([4, 4])
    net = BranchingQNet(3, 2, 4, (16, 16), (16,), (16,))
    ours = BDQN(policy=BDQNPolicy(model=net, action_space=space), target_update_freq=3)
    peer = TBDQN(
        policy=TBDQNPolicy(model=_copy_into_tianshou(net, 2, 4), action_space=space),  # type: ignore[arg-type]
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        target_update_freq=3,
    )
    b_ours = PrioritizedVectorReplayBuffer(60, 3, alpha=0.6, beta=0.4, weight_norm=True)
    b_peer = TPVRB(60, 3, alpha=0.6, beta=0.4, weight_norm=True)
    rng = np.random.default_rng(0)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 3)).astype(np.float32),
            act=rng.integers(0, 4, (3, 2)),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.2,
            truncated=np.zeros(3, dtype=bool),
            obs_next=rng.normal(size=(3, 3)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    stored = b_ours.sample_indices(0)
    candidates = stored[~np.isin(stored, b_ours.unfinished_index())]
    for step in range(6):
        idx = rng.choice(candidates, 16)
        with within_training_step(ours.policy):
            bo = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(bo, 16, 1)
            ours.postprocess(bo, b_ours, idx)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            torch.testing.assert_close(
                bo["returns"].reshape(-1), tb.returns[:, 0, 0], rtol=1e-5, atol=1e-6
            )
            expected = peer._update_with_batch(tb)
            peer._postprocess_batch(tb, b_peer, idx)
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
        # the priorities written back: (|sum_d td_d| + eps) ** alpha
        np.testing.assert_allclose(
            b_ours.prio_sampler.tree[stored], b_peer.weight[stored], rtol=1e-5
        )
    for p_ours, p_peer in zip(net.parameters(), peer.policy.model.parameters(), strict=True):
        torch.testing.assert_close(p_ours, p_peer)


def test_tianshou_differences_truncation_unfinished_and_gamma() -> None:
    """The deliberate differences, shown on one buffer: Tianshou's 1-step target drops the
    bootstrap at a truncated and at an unfinished step and uses gamma 0.99 although it was
    given 0.5; tdrl bootstraps at both and uses 0.5."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import BDQN as TBDQN
    from tianshou.algorithm.modelfree.bdqn import BDQNPolicy as TBDQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import ReplayBuffer as TRB

    torch.manual_seed(0)
    space = gym.spaces.MultiDiscrete([3, 3])
    net = BranchingQNet(3, 2, 3, (16, 16), (16,), (16,))
    ours = BDQN(policy=BDQNPolicy(model=net, action_space=space), gamma=0.5)
    peer = TBDQN(
        policy=TBDQNPolicy(model=_copy_into_tianshou(net, 2, 3), action_space=space),  # type: ignore[arg-type]
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.5,
    )
    buf, tbuf = VectorReplayBuffer(10, 1), TRB(10)
    rng = np.random.default_rng(1)
    flags = [(False, False), (False, True), (False, False)]  # ordinary, truncated, unfinished
    for term, trunc in flags:
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(1, 3)).astype(np.float32),
            act=rng.integers(0, 3, (1, 2)),
            rew=np.ones(1, np.float32),
            terminated=np.array([term]),
            truncated=np.array([trunc]),
            obs_next=rng.normal(size=(1, 3)).astype(np.float32),
        )
        buf.add(Batch(**d))
        tbuf.add(TBatch(info={}, **{k: v[0] for k, v in d.items()}))
    idx = np.arange(3)
    v = ours.next_value(buf[idx]["obs_next"])
    ret = ours.preprocess(buf[idx], buf, idx)["returns"].reshape(-1)
    torch.testing.assert_close(ret, 1.0 + 0.5 * v)  # every step bootstraps, with gamma 0.5
    with torch.no_grad():
        peer_ret = peer._preprocess_batch(tbuf[idx], tbuf, idx).returns[:, 0, 0]
    torch.testing.assert_close(peer_ret[0], 1.0 + 0.99 * v[0])  # gamma 0.99
    torch.testing.assert_close(peer_ret[1:], torch.ones(2))  # no bootstrap


def test_exploration_matches_tianshou() -> None:
    """Same numpy draws as Tianshou's BDQN policy: same explored actions."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.modelfree.bdqn import BDQNPolicy as TBDQNPolicy
    from tianshou.data import Batch as TBatch

    net = BranchingQNet(3, 2, 4, (16, 16), (16,), (16,))
    space = gym.spaces.MultiDiscrete([4, 4])
    ours = BDQNPolicy(model=net, action_space=space, eps_training=0.3)
    peer = TBDQNPolicy(model=_copy_into_tianshou(net, 2, 4), action_space=space)  # type: ignore[arg-type]
    peer.set_eps_training(0.3)
    peer.is_within_training_step = True
    act = np.zeros((500, 2), dtype=np.int64)
    np.random.seed(3)
    with within_training_step(ours):
        got = ours.exploration_noise(act.copy(), make_batch({"obs": torch.zeros(500, 3)}, 500))
    np.random.seed(3)
    expected = peer.add_exploration_noise(act.copy(), TBatch(obs=np.zeros((500, 3))))
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_bdqn_pendulum_reaches_threshold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="bdqn",
            task="Pendulum-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= -250
