"""PSRL and the NChain MDP: dynamics, posterior, Tianshou oracle, TorchRL layout, baselines."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

import tdrl.env  # noqa: F401  (registers tdrl/NChain-v0)
from tdrl.algorithm.base import make_batch
from tdrl.algorithm.modelbased.psrl import PSRL, PSRLPolicy, value_iteration
from tdrl.data import Batch, VectorReplayBuffer
from tdrl.env.nchain import NCHAIN_ID, NCHAIN_THRESHOLD, NChainEnv, expected_return

S, A = 5, 2


def _policy(**kw: object) -> PSRLPolicy:
    args: dict = dict(
        trans_count_prior=np.ones((S, A, S)),
        rew_mean_prior=np.zeros((S, A)),
        rew_std_prior=np.ones((S, A)),
        action_space=gym.spaces.Discrete(A),
        discount_factor=0.99,
        epsilon=0.01,
    )
    args.update(kw)
    return PSRLPolicy(**args)


def _transitions(n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` NChain transitions under a uniform-random policy (with a few done flags)."""
    env = NChainEnv()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    obs, act, nxt, rew = [], [], [], []
    s = 0
    for _ in range(n):
        a = int(rng.integers(A))
        s2, r, *_ = env.step(a)
        obs.append(s), act.append(a), nxt.append(s2), rew.append(r)
        s = s2
    done = np.zeros(n, dtype=bool)
    done[[n // 3, n - 1]] = True
    return {
        "obs": np.array(obs),
        "act": np.array(act),
        "obs_next": np.array(nxt),
        "rew": np.array(rew),
        "terminated": np.zeros(n, dtype=bool),
        "truncated": done,
    }


# -- the environment ---------------------------------------------------------------------
def test_nchain_dynamics_and_registration() -> None:
    env = NChainEnv(slip=0.0)
    env.reset(seed=0)
    assert [env.step(0)[:2] for _ in range(5)] == [
        (1, 0.0),
        (2, 0.0),
        (3, 0.0),
        (4, 0.0),
        (4, 10.0),
    ]
    assert env.step(1)[:2] == (0, 2.0)
    slip = NChainEnv(slip=1.0)  # always the other action
    slip.reset(seed=0)
    assert slip.step(1)[:2] == (1, 0.0) and slip.step(0)[:2] == (0, 2.0)
    made = gym.make(NCHAIN_ID)
    assert made.spec is not None and made.spec.max_episode_steps == 1000
    assert made.spec.reward_threshold == NCHAIN_THRESHOLD
    made.reset(seed=1)
    steps = 0
    while True:
        steps += 1
        *_, term, trunc, _ = made.step(made.action_space.sample())
        if term or trunc:
            break
    assert steps == 1000 and trunc and not term


def test_nchain_slip_frequency() -> None:
    env = NChainEnv()
    env.reset(seed=0)
    backs = sum(env.step(0)[1] == 2.0 for _ in range(20_000))  # forward slips back: reward 2
    assert abs(backs / 20_000 - 0.2) < 0.01


def test_nchain_bad_input() -> None:
    with pytest.raises(ValueError, match=r"slip: expected a value in \[0, 1\], got -0.1"):
        NChainEnv(slip=-0.1)
    with pytest.raises(ValueError, match=r"n: expected an int >= 2, got 1"):
        NChainEnv(n=1)
    env = NChainEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action: expected 0 \(forward\) or 1 \(back\), got 2"):
        env.step(2)


def test_expected_return_of_the_reference_policies() -> None:
    assert round(expected_return(np.zeros(S, dtype=int))) == 3664  # always forward: optimal
    assert round(expected_return(np.ones(S, dtype=int))) == 1603  # always back
    # every deterministic policy but always-forward stays below the threshold (the next
    # best, back at the end of the chain only, earns ~3040)
    others = [np.array([(k >> i) & 1 for i in range(S)]) for k in range(1, 2**S)]
    assert max(expected_return(p) for p in others) < NCHAIN_THRESHOLD - 300


# -- value iteration and the posterior -----------------------------------------------------
def test_value_iteration_solves_the_true_chain() -> None:
    p = np.zeros((S, A, S))
    r = np.zeros((S, A))
    for s in range(S):
        p[s, 0, min(s + 1, S - 1)] += 0.8
        p[s, 0, 0] += 0.2
        p[s, 1, 0] += 0.8
        p[s, 1, min(s + 1, S - 1)] += 0.2
        r[s, 0] = 0.2 * 2 + (0.8 * 10 if s == S - 1 else 0.0)
        r[s, 1] = 0.8 * 2 + (0.2 * 10 if s == S - 1 else 0.0)
    np.random.seed(0)
    pi, v = value_iteration(p, r, 0.99, 1e-8, np.zeros(S))
    assert pi.tolist() == [0] * S
    q = r + 0.99 * p.dot(v)
    np.testing.assert_allclose(q.max(1), v, rtol=1e-6)


def test_posterior_update_by_hand() -> None:
    alg = PSRL(policy=_policy())
    td = TensorDict(
        {
            "obs": torch.tensor([0, 0, 3]),
            "act": torch.tensor([1, 1, 0]),
            "obs_next": torch.tensor([0, 1, 4]),
            "rew": torch.tensor([2.0, 0.0, 0.0]),
            "done": torch.tensor([False, False, True]),
        },
        [3],
    )
    out = alg(td)
    m = alg.model
    assert m.trans_count[0, 1].tolist() == [2.0, 2.0, 1.0, 1.0, 1.0]
    assert m.trans_count[3, 0, 4].item() == 2.0
    n = 2.0 + 0.01
    assert m.rew_mean[0, 1].item() == pytest.approx(2.0 / n)
    var = 4.0 / n - (2.0 / n) ** 2
    eps32 = float(np.finfo(np.float32).eps)
    assert m.rew_std[0, 1].item() == pytest.approx((1 / (n / (var + eps32) + 1.0)) ** 0.5)
    assert m.rew_count[0, 1].item() == pytest.approx(n)
    assert set(out.keys()) == {"psrl_rew_mean", "psrl_rew_std"}
    assert not bool(m.solved)


def test_nonzero_prior_mean_keeps_the_std_finite() -> None:
    """Deliberate difference: the empirical reward variance is clamped at 0. With a
    nonzero prior mean, ``E[r^2] - mu^2`` goes negative for pairs whose rewards are all 0
    and Tianshou's standard deviation becomes NaN."""
    alg = PSRL(policy=_policy(rew_mean_prior=np.full((S, A), 0.5)))
    n = 6
    alg(
        TensorDict(
            {
                "obs": torch.zeros(n, dtype=torch.long),
                "act": torch.zeros(n, dtype=torch.long),
                "obs_next": torch.ones(n, dtype=torch.long),
                "rew": torch.zeros(n),
                "done": torch.zeros(n, dtype=torch.bool),
            },
            [n],
        )
    )
    assert bool(torch.isfinite(alg.model.rew_std).all())
    assert 0.0 < alg.model.rew_std[0, 0].item() < 1e-3


def test_add_done_loop_adds_a_self_loop_per_action() -> None:
    alg = PSRL(policy=_policy(), add_done_loop=True)
    td = TensorDict(
        {
            "obs": torch.tensor([3]),
            "act": torch.tensor([0]),
            "obs_next": torch.tensor([4]),
            "rew": torch.tensor([0.0]),
            "done": torch.tensor([True]),
        },
        [1],
    )
    alg(td)
    m = alg.model
    assert m.trans_count[4, :, 4].tolist() == [2.0, 2.0]
    assert m.rew_count[4].tolist() == pytest.approx([1.01, 1.01])


def test_policy_solves_lazily_and_resamples_after_an_update() -> None:
    alg = PSRL(policy=_policy())
    obs = make_batch({"obs": torch.arange(S)}, S)
    torch.manual_seed(0)
    np.random.seed(0)
    act = alg.policy(obs)["act"]
    assert act.dtype == torch.long and act.shape == (S,) and bool(alg.model.solved)
    table = alg.model.act_table.clone()
    assert torch.equal(alg.policy(obs)["act"], table)  # no new sample without an update
    alg(
        TensorDict({k: torch.as_tensor(v) for k, v in _transitions(50, 0).items()}, [50]).set(
            "done", torch.zeros(50, dtype=torch.bool)
        )
    )
    assert not bool(alg.model.solved)
    alg.policy(obs)
    assert bool(alg.model.solved)


def test_one_hot_observations_and_actions() -> None:
    pol = _policy()
    torch.manual_seed(0)
    np.random.seed(0)
    by_index = pol(make_batch({"obs": torch.arange(S)}, S))["act"]
    one_hot = pol(make_batch({"obs": torch.eye(S)}, S))["act"]
    assert torch.equal(by_index, one_hot)


def test_update_through_the_buffer_equals_forward() -> None:
    rows = _transitions(200, 1)
    buf = VectorReplayBuffer(400, 1)
    for i in range(200):
        buf.add(Batch({k: v[i : i + 1] for k, v in rows.items()}), buffer_ids=[0])
    a, b = PSRL(policy=_policy()), PSRL(policy=_policy())
    stats = a.update(buf, batch_size=None)
    b(buf[buf.sample_indices(0)])
    for name, t in a.model.state_dict().items():
        assert torch.equal(t, b.model.state_dict()[name]), name
    assert set(stats) >= {"psrl_rew_mean", "psrl_rew_std"}


def test_torchrl_layout() -> None:
    """A TorchRL batch (one-hot actions, reward/done ``[B, 1]`` under "next") updates the
    posterior as the same transitions in tdrl's layout do."""
    rows = _transitions(100, 2)
    n = len(rows["obs"])
    done = torch.as_tensor(rows["truncated"]).reshape(n, 1)
    td = TensorDict(
        {
            "observation": torch.as_tensor(rows["obs"]),
            "action": torch.nn.functional.one_hot(torch.as_tensor(rows["act"]), A),
            "next": {
                "observation": torch.as_tensor(rows["obs_next"]),
                "reward": torch.as_tensor(rows["rew"]).reshape(n, 1),
                "done": done,
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    ours, ref = (
        PSRL(policy=_policy(), add_done_loop=True),
        PSRL(policy=_policy(), add_done_loop=True),
    )
    ours.set_keys(observation="observation", action="action")
    assert ours.policy.in_keys == ["observation"]
    out = ours(td)
    assert not [k for k in out.keys() if k.startswith("loss_")]  # noqa: SIM118  (no gradient)
    ref(
        TensorDict(
            {
                "obs": torch.as_tensor(rows["obs"]),
                "act": torch.as_tensor(rows["act"]),
                "obs_next": torch.as_tensor(rows["obs_next"]),
                "rew": torch.as_tensor(rows["rew"]),
                "done": done.reshape(-1),
            },
            [n],
        )
    )
    for name, t in ours.model.state_dict().items():
        assert torch.equal(t, ref.model.state_dict()[name]), name
    # the policy acts on a TorchRL TensorDict in place
    step = TensorDict({"observation": torch.tensor([0, 4])}, [2])
    ours.policy(step)
    assert step["action"].shape == (2,)


def test_state_dict_round_trip() -> None:
    a = PSRL(policy=_policy())
    a(
        TensorDict({k: torch.as_tensor(v) for k, v in _transitions(80, 3).items()}, [80]).set(
            "done", torch.zeros(80, dtype=torch.bool)
        )
    )
    a.policy(make_batch({"obs": torch.arange(S)}, S))
    b = PSRL(policy=_policy())
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for name, t in a.model.state_dict().items():
        assert torch.equal(t, b.model.state_dict()[name]), name
    assert torch.equal(b.policy(make_batch({"obs": torch.arange(S)}, S))["act"], a.model.act_table)


def test_bad_input() -> None:
    with pytest.raises(
        ValueError, match=r"trans_count_prior: expected shape \(5, 2, 5\), got \(5, 2\)"
    ):
        _policy(trans_count_prior=np.ones((S, A)))
    with pytest.raises(ValueError, match=r"trans_count_prior: expected values > 0, got min 0.0"):
        _policy(trans_count_prior=np.zeros((S, A, S)))
    with pytest.raises(ValueError, match=r"rew_std_prior: expected values > 0, got min 0.0"):
        _policy(rew_std_prior=np.zeros((S, A)))
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 1.5"):
        _policy(discount_factor=1.5)
    with pytest.raises(ValueError, match=r"epsilon: expected a value > 0, got 0.0"):
        _policy(epsilon=0.0)
    with pytest.raises(ValueError, match=r"action_space: PSRL needs a Discrete action space"):
        _policy(action_space=gym.spaces.Box(-1.0, 1.0, (1,)))
    with pytest.raises(ValueError, match=r"rew_mean_prior: expected 3 actions .*, got 2"):
        _policy(action_space=gym.spaces.Discrete(3))
    with pytest.raises(ValueError, match=r"observation_space: PSRL needs a Discrete observation"):
        _policy(observation_space=gym.spaces.Box(-1.0, 1.0, (2,)))
    with pytest.raises(TypeError, match=r"policy: expected a PSRLPolicy, got Linear"):
        PSRL(policy=torch.nn.Linear(1, 1))  # type: ignore[arg-type]


def test_preset_rejects_a_continuous_observation_space() -> None:
    from tdrl import registry
    from tdrl.presets.psrl import build

    p = registry.preset("psrl")
    with pytest.raises(registry.PresetError, match=r"psrl needs a Discrete observation space"):
        build(p, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2))  # type: ignore[arg-type]
    alg = build(p, gym.spaces.Discrete(S), gym.spaces.Discrete(A))  # type: ignore[arg-type]
    assert isinstance(alg, PSRL) and alg.model.n_state == S


# -- the oracle ---------------------------------------------------------------------------
@pytest.mark.parametrize("add_done_loop", [False, True])
def test_update_matches_tianshou_exactly(add_done_loop: bool) -> None:
    """Identical counts -> identical posterior (transition counts, reward means, standard
    deviations, counts, squared sums) after each of three updates; then, with torch and
    NumPy seeded alike, the same sampled MDP: same greedy actions and values."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.modelbased.psrl import PSRL as TPSRL
    from tianshou.algorithm.modelbased.psrl import PSRLPolicy as TPSRLPolicy
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step

    prior = dict(
        trans_count_prior=np.ones((S, A, S)),
        rew_mean_prior=np.zeros((S, A)),  # Tianshou's std is NaN for some others
        rew_std_prior=np.full((S, A), 2.0),
        action_space=gym.spaces.Discrete(A),
        discount_factor=0.95,
        epsilon=0.01,
    )
    ours = PSRL(policy=PSRLPolicy(**copy.deepcopy(prior)), add_done_loop=add_done_loop)
    peer = TPSRL(policy=TPSRLPolicy(**copy.deepcopy(prior)), add_done_loop=add_done_loop)
    for rollout in range(3):
        rows = _transitions(150, 10 + rollout)
        b_ours, b_peer = VectorReplayBuffer(300, 1), TVRB(300, 1)
        for i in range(150):
            row = {k: v[i : i + 1] for k, v in rows.items()}
            b_ours.add(Batch(row), buffer_ids=[0])
            b_peer.add(TBatch(info={}, **row), buffer_ids=[0])
        stats = ours.update(b_ours, batch_size=None)
        with policy_within_training_step(peer.policy):
            expected = peer.update(buffer=b_peer, batch_size=None, repeat=1)
        m, tm = ours.model, peer.policy.model
        np.testing.assert_array_equal(m.trans_count.numpy(), tm.trans_count)
        for name in ("rew_mean", "rew_std", "rew_count", "rew_square_sum"):
            np.testing.assert_allclose(getattr(m, name).numpy(), getattr(tm, name), rtol=1e-12)
        assert stats["psrl_rew_mean"] == pytest.approx(expected.psrl_rew_mean, rel=1e-6)
        assert stats["psrl_rew_std"] == pytest.approx(expected.psrl_rew_std, rel=1e-6)
        # the sampled MDP and its solution under the same RNG state
        torch.manual_seed(rollout)
        np.random.seed(rollout)
        act = ours.policy(make_batch({"obs": torch.arange(S)}, S))["act"]
        torch.manual_seed(rollout)
        np.random.seed(rollout)
        t_act = peer.policy(TBatch(obs=np.arange(S), info={}))["act"]
        np.testing.assert_array_equal(act.numpy(), t_act)
        np.testing.assert_allclose(m.value.numpy(), tm.value, rtol=1e-12)


# -- the threshold: two baselines miss it -------------------------------------------------
BUDGET = 6_000  # PSRL's preset: 1000 random warm-up steps, then 5 epochs of 1000


def _q_learning_best_return(seed: int, eps: float, alpha: float, gamma: float = 0.99) -> float:
    """Tabular epsilon-greedy Q-learning (random tie-breaking, Q = 0 at the start) for
    :data:`BUDGET` steps on tdrl/NChain-v0; the best exact expected return of its greedy
    policy, evaluated after every 1000 steps as PSRL is tested after every epoch."""
    rng = np.random.default_rng(seed)
    env = gym.make(NCHAIN_ID)
    s, _ = env.reset(seed=seed)
    q = np.zeros((S, A))
    best = -np.inf
    for t in range(1, BUDGET + 1):
        if rng.random() < eps:
            a = int(rng.integers(A))
        else:
            a = int(rng.choice(np.flatnonzero(q[s] == q[s].max())))
        s2, r, term, trunc, _ = env.step(a)
        q[s, a] += alpha * (r + gamma * (0.0 if term else q[s2].max()) - q[s, a])
        s = s2
        if term or trunc:
            s, _ = env.reset()
        if t % 1000 == 0:
            best = max(best, expected_return(q.argmax(1)))
    return float(best)


def _random_policy_returns(seed: int, episodes: int = 10) -> float:
    env = gym.make(NCHAIN_ID)
    env.action_space.seed(seed)
    total = 0.0
    for e in range(episodes):
        env.reset(seed=seed * 100 + e)
        done = False
        while not done:
            _, r, term, trunc, _ = env.step(env.action_space.sample())
            total += float(r)
            done = term or trunc
    return total / episodes


@pytest.mark.parametrize("seed", range(5))
def test_baselines_miss_the_threshold(seed: int) -> None:
    """With PSRL's budget, a uniform-random policy (~1000 per episode) and an
    epsilon-greedy tabular Q-learner (epsilon 0.1, step size 0.1, gamma 0.99: it settles
    on moving back, ~1600) both stay below the threshold on seeds 0-4."""
    assert _random_policy_returns(seed) < 0.5 * NCHAIN_THRESHOLD
    assert _q_learning_best_return(seed, eps=0.1, alpha=0.1) < NCHAIN_THRESHOLD


@pytest.mark.slow
def test_psrl_reaches_the_threshold(tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="psrl",
            task=NCHAIN_ID,
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= NCHAIN_THRESHOLD
    assert result.env_step <= BUDGET - 1000  # env_step does not count the warm-up


@pytest.mark.parametrize(
    "code",
    [
        "import tdrl, gymnasium",  # tdrl first: registered when gymnasium loads
        "import gymnasium, tdrl",  # gymnasium first: registered at once
        "import tdrl, importlib.util; importlib.util.find_spec('gymnasium'); import gymnasium",
    ],
)
def test_gymnasium_make_works_after_import_tdrl(code: str) -> None:
    import json
    import subprocess
    import sys

    script = (
        f"{code}\nimport sys, json\nenv = gymnasium.make('tdrl/NChain-v0')\n"
        "print(json.dumps([env.spec.id, env.spec.max_episode_steps, "
        "'torch' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["tdrl/NChain-v0", 1000, False]


def test_preset_threshold_is_the_registered_ids() -> None:
    from tdrl import registry

    assert registry.preset("psrl").threshold == NCHAIN_THRESHOLD
    assert registry.stop_threshold(NCHAIN_ID) == NCHAIN_THRESHOLD
