"""DRQN: the recurrent Q-network, the hidden state through the collector, frame stacks from
the buffer, the TorchRL layout, the preset, and the update against Tianshou 2.0.1."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.drqn import DRQN, DRQNPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net_recurrent import RecurrentQNet

SPACE = gym.spaces.Discrete(2)


def _drqn(hidden: int = 16, layers: int = 2, **kw: Any) -> DRQN:
    torch.manual_seed(0)
    policy = DRQNPolicy(
        model=RecurrentQNet(4, 2, hidden_size=hidden, num_layers=layers), action_space=SPACE
    )
    return DRQN(policy=policy, **kw)


def _random_steps(rng: np.random.Generator, n_envs: int) -> dict[str, Any]:
    return dict(
        obs=rng.normal(size=(n_envs, 4)).astype(np.float32),
        act=rng.integers(0, 2, n_envs),
        rew=rng.normal(size=n_envs).astype(np.float32),
        terminated=rng.random(n_envs) < 0.15,
        truncated=rng.random(n_envs) < 0.1,
    )


# -- the network ------------------------------------------------------------------------
def test_sequence_equals_stepping_with_the_carried_state() -> None:
    torch.manual_seed(0)
    net = RecurrentQNet(4, 3, hidden_size=8, num_layers=2)
    seq = torch.randn(5, 6, 4)
    q_seq, st_seq = net(seq)
    state: Any = None
    for t in range(6):
        q, state = net(seq[:, t], state=state)
    torch.testing.assert_close(q, q_seq)
    torch.testing.assert_close(state, st_seq)
    assert state.shape == (5, 2, 2, 8) and not state.requires_grad
    # a Tianshou-style {"hidden", "cell"} state is the same state
    as_dict = {"hidden": state[:, 0], "cell": state[:, 1]}
    torch.testing.assert_close(net(seq[:, 0], state=as_dict)[0], net(seq[:, 0], state=state)[0])


def test_concatenated_frames_read_as_a_sequence() -> None:
    torch.manual_seed(0)
    net = RecurrentQNet(4, 2, hidden_size=8)
    seq = torch.randn(3, 5, 4)
    torch.testing.assert_close(net(seq.reshape(3, 20))[0], net(seq)[0])


def test_zero_state_is_no_state() -> None:
    torch.manual_seed(0)
    net = RecurrentQNet(4, 2, hidden_size=8)
    x = torch.randn(3, 4)
    zero = {"hidden": torch.zeros(3, 1, 8), "cell": torch.zeros(3, 1, 8)}
    torch.testing.assert_close(net(x, state=zero)[0], net(x)[0])


def test_network_argument_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match=r"hidden_size: expected an int >= 1, got 0"):
        RecurrentQNet(4, 2, hidden_size=0)
    with pytest.raises(ValueError, match=r"num_layers: expected an int >= 1, got 0"):
        RecurrentQNet(4, 2, num_layers=0)
    net = RecurrentQNet(4, 2, hidden_size=8)
    with pytest.raises(ValueError, match=r"obs: expected \[B, 4\] or \[B, T, 4\].*got \(2, 5\)"):
        net(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"state: expected .* a mapping with 'hidden' and 'cell'"):
        net(torch.zeros(2, 4), state={"cell": torch.zeros(2, 1, 8)})


def test_policy_and_algorithm_need_a_recurrent_model() -> None:
    with pytest.raises(ValueError, match=r"model: DRQN expected a recurrent model.*got Linear"):
        DRQNPolicy(model=torch.nn.Linear(4, 2), action_space=SPACE)
    from tdrl.algorithm.modelfree.dqn import DQNPolicy

    with pytest.raises(ValueError, match=r"model: DRQN expected a recurrent model.*got Linear"):
        DRQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=SPACE))
    with pytest.raises(ValueError, match="action_space"):
        DRQNPolicy(model=RecurrentQNet(4, 2), action_space=gym.spaces.Box(-1, 1, (2,)))


# -- acting: the hidden state through the policy and the collector ------------------------
def test_policy_returns_and_uses_the_hidden_state() -> None:
    alg = _drqn()
    obs = torch.randn(3, 4)
    first = alg.policy(make_batch({"obs": obs}, 3))
    second = alg.policy(make_batch({"obs": obs}, 3), first["state"])
    q_seq, _ = alg.policy.model(torch.stack([obs, obs], dim=1))
    torch.testing.assert_close(second["logits"], q_seq)


class _RecordingNet(RecurrentQNet):
    """Records the hidden state each call receives and returns."""

    def __init__(self) -> None:
        super().__init__(4, 2, hidden_size=8)
        self.calls: list[tuple[Any, torch.Tensor]] = []

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> Any:
        q, new = super().forward(obs, state, info)
        self.calls.append((None if state is None else state.clone(), new))
        return q, new


def test_collector_carries_the_state_and_zeroes_it_on_reset() -> None:
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv

    torch.manual_seed(0)
    net = _RecordingNet()
    policy = DRQNPolicy(model=net, action_space=SPACE)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    buf = VectorReplayBuffer(400, 2, stack_num=4)
    col = Collector(policy, envs, buf)
    col.reset(seed=0)
    col.collect(n_step=60)  # 30 steps per env: several episodes end and reset
    done = buf[np.arange(30)]["done"].numpy()  # env 0's steps, in order
    assert done.any()
    for t, (state_in, _) in enumerate(net.calls):
        if t == 0:
            assert state_in is None
            continue
        expected = torch.zeros(2, 1, 8) if done[t - 1] else net.calls[t - 1][1][0]
        torch.testing.assert_close(state_in[0], expected)
    col.reset(seed=1)
    assert col._state is None


# -- learning: frame stacks from the buffer ---------------------------------------------
def test_update_trains_on_frame_stacks() -> None:
    alg = _drqn(gamma=0.9, n_step=2, target_update_freq=4)
    buf = VectorReplayBuffer(60, 3, stack_num=4, ignore_obs_next=True)
    rng = np.random.default_rng(0)
    for _ in range(15):
        buf.add(Batch(**_random_steps(rng, 3)))
    batch, _ = buf.sample(16)
    assert batch["obs"].shape == (16, 4, 4) and batch["obs_next"].shape == (16, 4, 4)
    before = [p.detach().clone() for p in alg.policy.model.parameters()]
    stats = alg.update(buf, batch_size=16, repeat=2)
    assert np.isfinite(stats["loss_qvalue"])
    after = list(alg.policy.model.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, after))


def test_returns_bootstrap_from_the_stack_ending_at_the_nth_next_step() -> None:
    alg = _drqn(gamma=0.5, n_step=2, target_update_freq=0)
    buf = VectorReplayBuffer(20, 1, stack_num=3, ignore_obs_next=True)
    rng = np.random.default_rng(1)
    for t in range(6):
        d = _random_steps(rng, 1)
        d["terminated"][:] = False
        d["truncated"][:] = t == 5
        buf.add(Batch(**d))
    idx = np.array([1])
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        v = alg.policy.q_values(buf[np.array([3])]["obs"]).max(dim=1).values
    rew = buf[np.array([1, 2])]["rew"]
    expected = rew[0] + 0.5 * rew[1] + 0.25 * v[0]
    torch.testing.assert_close(batch["returns"].reshape(-1)[0], expected.float())


# -- TorchRL layout ---------------------------------------------------------------------
def test_torchrl_layout_with_frame_stacks() -> None:
    alg = _drqn(target_update_freq=5)
    alg.set_keys(observation="observation", action="action")
    n = 8
    td = TensorDict(
        {
            "observation": torch.randn(n, 4, 4),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 4, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue"}
    v = alg.next_value(td["next", "observation"])
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1) + alg.gamma * v)
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {k for (k, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
    assert reached == {k for k in params if "target" not in k}
    assert any(k.startswith("policy.model.lstm") for k in reached)
    act = alg.policy(TensorDict({"observation": torch.randn(n, 4)}, [n]))
    assert act["action"].shape == (n,)


# -- preset -----------------------------------------------------------------------------
def test_preset_builds_and_launcher_uses_stack_num() -> None:
    import tdrl
    from tdrl.presets.drqn import DRQNPreset

    alg = tdrl.make_algorithm("drqn", "CartPole-v1")
    assert type(alg).__name__ == "DRQN" and alg.policy.model.num_layers == 2
    assert alg.model_old is not None and alg.gamma == 0.95
    p = DRQNPreset()
    assert (p.stack_num, p.n_step, p.batch_size) == (4, 3, 128)
    import inspect

    import tdrl.experiment.build

    assert 'getattr(preset, "stack_num", 1)' in inspect.getsource(tdrl.experiment.build)


# -- the Tianshou oracle ----------------------------------------------------------------
def test_update_matches_tianshou_exactly() -> None:
    """Tianshou's DRQN (its DQN with ``Recurrent``) and tdrl's on the same stacked buffer
    (``stack_num=4``, ``ignore_obs_next``), identical weights and sampled indices: the same
    stacks, n-step returns, losses (1e-5) and parameters after every update; then the same
    Q-values and hidden states when acting step by step."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.net.common import Recurrent
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    net = Recurrent(layer_num=2, state_shape=(4,), action_shape=2, hidden_layer_size=16)
    ours_net = RecurrentQNet(4, 2, hidden_size=16, num_layers=2)
    names = {"fc1": "embed", "nn": "lstm", "fc2": "head"}
    ours_net.load_state_dict(
        {
            names[k.split(".", 1)[0]] + "." + k.split(".", 1)[1]: v
            for k, v in net.state_dict().items()
        }
    )
    ours = DRQN(
        policy=DRQNPolicy(model=ours_net, action_space=SPACE),
        gamma=0.95,
        n_step=3,
        target_update_freq=2,
    )
    peer = TDQN(
        policy=DiscreteQLearningPolicy(model=copy.deepcopy(net), action_space=SPACE),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.95,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    rng = np.random.default_rng(0)
    b_ours = VectorReplayBuffer(60, 3, stack_num=4, ignore_obs_next=True)
    b_peer = TVRB(60, 3, stack_num=4, ignore_obs_next=True)
    for _ in range(15):
        d = _random_steps(rng, 3)
        d["obs_next"] = rng.normal(size=(3, 4)).astype(np.float32)  # dropped by both
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(5):
        idx = rng.integers(0, 45, 32)
        idx = idx[np.isin(idx, b_ours.sample_indices(0))]
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            stacked = batch["obs"].clone()
            returns = batch["returns"].clone()
            got = ours._update_with_batch(batch, 32, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(stacked, torch.as_tensor(tb.obs))
        torch.testing.assert_close(
            returns.reshape(-1), torch.as_tensor(tb.returns).reshape(-1).float()
        )
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
    for k, v in peer.policy.model.state_dict().items():
        head, rest = k.split(".", 1)
        torch.testing.assert_close(ours.policy.model.state_dict()[names[head] + "." + rest], v)
    # stored obs_next (what the launcher's buffer keeps): the same stacks as Tianshou's too
    b_ours, b_peer = VectorReplayBuffer(30, 2, stack_num=3), TVRB(30, 2, stack_num=3)
    for _ in range(10):
        d = _random_steps(rng, 2)
        d["obs_next"] = rng.normal(size=(2, 4)).astype(np.float32)
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    idx = b_ours.sample_indices(0)
    for key in ("obs", "obs_next"):
        torch.testing.assert_close(b_ours[idx][key], torch.as_tensor(b_peer[idx][key]))
    # acting: the same Q-values and hidden states over a few carried steps
    obs = rng.normal(size=(5, 3, 4)).astype(np.float32)
    s_ours: Any = None
    s_peer: Any = None
    with torch.no_grad():
        for t in range(5):
            o = ours.policy(make_batch({"obs": torch.as_tensor(obs[t])}, 3), s_ours)
            p = peer.policy(TBatch(obs=obs[t], info={}), state=s_peer)
            torch.testing.assert_close(o["logits"], torch.as_tensor(p.logits))
            torch.testing.assert_close(o["state"][:, 0], torch.as_tensor(p.state.hidden))
            torch.testing.assert_close(o["state"][:, 1], torch.as_tensor(p.state.cell))
            s_ours, s_peer = o["state"], p.state


# -- convergence ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)  # seed 0 needs 30+ epochs: about 300 s on a loaded 2-core machine
def test_cartpole_preset_reaches_threshold(tmp_path: Any) -> None:
    from tdrl.experiment import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="drqn",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 195.0
