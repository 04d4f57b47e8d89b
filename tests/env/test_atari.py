"""Atari on the real ALE: the DeepMind wrappers, the Nature CNN heads, the presets, a Pong run.

The wrappers and networks are checked against Tianshou 2.0.1's (``tianshou.env.atari``):
same observations, rewards, flags and infos step by step on the same seed and actions, and
the same network outputs from the same weights.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from tdrl import registry
from tdrl.env import DummyVectorEnv
from tdrl.env.atari import (
    AtariFrames,
    EpisodicLife,
    FireReset,
    atari_env_id,
    wrap_deepmind,
)
from tdrl.utils import net_atari

PONG = "PongNoFrameskip-v4"
BREAKOUT = "BreakoutNoFrameskip-v4"
ALGOS = ("dqn", "c51", "qrdqn", "iqn", "fqf", "rainbow")


def _chain(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


class _Passthrough(gym.Wrapper):
    """A wrapper the fast path must not step around."""


# ----------------------------------------------------------------------------- wrappers
def test_wrap_deepmind_spaces_and_chain() -> None:
    env = wrap_deepmind(gym.make(BREAKOUT))
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)
    assert _chain(env)[:4] == ["FrameStackObservation", "ClipReward", "FireReset", "EpisodicLife"]
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and info == {}
    # the reset frame pads the stack
    assert all((obs[i] == obs[-1]).all() for i in range(3))
    test_env = wrap_deepmind(gym.make(BREAKOUT), training=False)
    assert "EpisodicLife" not in _chain(test_env) and "ClipReward" not in _chain(test_env)
    flat = wrap_deepmind(gym.make(PONG), frame_stack=1)
    assert flat.reset(seed=0)[0].shape == (84, 84)
    assert "FireReset" in _chain(flat)  # Pong has FIRE
    assert atari_env_id("Pong") == PONG


def test_frame_stack_from_preset() -> None:
    p = registry.preset("dqn", PONG, frames_stack=2)
    assert wrap_deepmind(gym.make(PONG), p).observation_space.shape == (2, 84, 84)


def test_episodic_life_plays_on_after_a_lost_life() -> None:
    env = wrap_deepmind(gym.make(BREAKOUT), frame_stack=0)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(400):
        _, rew, terminated, truncated, info = env.step(int(rng.integers(4)))
        assert rew in (0.0, 1.0)
        if terminated:
            break
    assert terminated and not truncated and info["lives"] == 4  # a life, not the game
    frame = info["episode_frame_number"]
    env.reset()
    life = next(w for w in _iter_wrappers(env) if isinstance(w, EpisodicLife))
    ale: Any = env.unwrapped.ale  # type: ignore[attr-defined]
    assert life.lives == 4 and ale.getEpisodeFrameNumber() > frame
    env.reset(seed=3)  # a seed starts a new game (Tianshou's wrapper would play on)
    assert life.lives == 5 and ale.getEpisodeFrameNumber() <= 30 + 4


def _iter_wrappers(env: gym.Env) -> Any:
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env


def test_noop_reset_is_seeded() -> None:
    a, b = AtariFrames(gym.make(PONG)), AtariFrames(gym.make(PONG))
    assert (a.reset(seed=7)[0] == b.reset(seed=7)[0]).all()
    frames = [a.reset(seed=s)[1]["episode_frame_number"] for s in range(3)]
    assert all(1 <= f <= 30 for f in frames) and len(set(frames)) > 1
    assert AtariFrames(gym.make(PONG), noop_max=0).reset(seed=0)[1]["episode_frame_number"] == 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AtariFrames(gym.make("ALE/Pong-v5")), "frameskip=1.*got frameskip=4"),
        (lambda: AtariFrames(gym.make("CartPole-v1")), "expected an ale-py Atari env.*CartPole"),
        (lambda: AtariFrames(gym.make(PONG), noop_max=-1), "noop_max: expected an int >= 0"),
        (lambda: AtariFrames(gym.make(PONG), frame_skip=0), "frame_skip: expected an int >= 1"),
        (lambda: AtariFrames(gym.make(PONG), screen_size=0), "screen_size: expected an int >= 1"),
        (
            lambda: FireReset(gym.make("FreewayNoFrameskip-v4")),
            r"action 1 to be FIRE.*got \['NOOP', 'UP', 'DOWN'\]",
        ),
        (lambda: wrap_deepmind(gym.make(PONG), frame_stack=-1), "frame_stack: .*got -1"),
    ],
)
def test_bad_arguments_name_what_was_expected(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


@pytest.fixture
def tianshou_wrap(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Tianshou 2.0.1's ``wrap_deepmind`` (its ``get_space_dtype`` gives ``np.integer``, which
    numpy >= 2.3 no longer accepts as a dtype: the space's own dtype is used instead)."""
    pytest.importorskip("tianshou")
    from tianshou.env.atari import atari_wrapper

    monkeypatch.setattr(atari_wrapper, "get_space_dtype", lambda space: space.dtype)
    return atari_wrapper.wrap_deepmind


@pytest.mark.parametrize(
    ("task", "kwargs", "training", "steps", "inner"),
    [
        # lives, FIRE, game over, clipped rewards
        (BREAKOUT, {}, True, 300, None),
        # truncation inside a frame skip (the noops shift the frame count), no FIRE-less reset
        (PONG, {"max_num_frames_per_episode": 203}, False, 250, None),
        # a wrapper between: every frame through env.step
        (BREAKOUT, {"max_num_frames_per_episode": 201}, True, 250, _Passthrough),
    ],
)
def test_wrappers_match_tianshou(
    tianshou_wrap: Any,
    task: str,
    kwargs: dict[str, Any],
    training: bool,
    steps: int,
    inner: type[gym.Wrapper] | None,
) -> None:
    def make() -> gym.Env:
        env = gym.make(task, **kwargs)
        return inner(env) if inner is not None else env

    mine = wrap_deepmind(make(), training=training)
    theirs = tianshou_wrap(make(), episode_life=training, clip_rewards=training)
    frames = next(w for w in _iter_wrappers(mine) if isinstance(w, AtariFrames))
    assert frames._direct is (inner is None)
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    terminated = truncated = False
    for k in range(steps):
        if k == 0 or terminated or truncated:
            seed = 11 if k == 0 else None
            (o1, i1), (o2, i2) = mine.reset(seed=seed), theirs.reset(seed=seed)
            assert np.array_equal(o1, o2) and i1 == i2, f"reset before step {k}"
        a = int(rng.integers(mine.action_space.n))  # type: ignore[attr-defined]
        o1, r1, terminated, truncated, i1 = mine.step(a)
        o2, r2, t2, tr2, i2 = theirs.step(a)
        assert o1.dtype == o2.dtype and np.array_equal(o1, o2), f"obs at step {k}"
        assert (r1, terminated, truncated, i1) == (r2, t2, tr2, i2), f"step {k}"
        ends["terminated"] += int(terminated)
        ends["truncated"] += int(truncated)
    assert sum(ends.values()) >= 3, ends


# ----------------------------------------------------------------------------- networks
def _load_by_position(src: torch.nn.Module, dst: torch.nn.Module) -> None:
    theirs, mine = list(src.state_dict().values()), dst.state_dict()
    assert [v.shape for v in theirs] == [v.shape for v in mine.values()]
    dst.load_state_dict(dict(zip(mine, theirs)))


def test_networks_match_tianshou() -> None:
    pytest.importorskip("tianshou")
    from tianshou.env.atari.atari_network import C51Net, DQNet, QRDQNet, RainbowNet
    from tianshou.utils.net.discrete import (
        FractionProposalNetwork,
        FullQuantileFunction,
        ImplicitQuantileNetwork,
    )

    torch.manual_seed(0)
    shape, n = (4, 84, 84), 6
    obs = torch.randint(0, 256, (5, *shape), dtype=torch.uint8)
    kw: dict[str, Any] = {"c": 4, "h": 84, "w": 84, "action_shape": n}
    pairs = [
        (DQNet(**kw), net_atari.dqn_net(shape, n)),
        (C51Net(**kw, num_atoms=51), net_atari.c51_net(shape, n, 51)),
        (QRDQNet(**kw, num_quantiles=200), net_atari.qrdqn_net(shape, n, 200)),
        (RainbowNet(**kw, noisy_std=0.1), net_atari.rainbow_net(shape, n, noisy_std=0.1)),
    ]
    for theirs, mine in pairs:
        _load_by_position(theirs, mine)
        theirs.eval(), mine.eval()  # Rainbow: the mean weights
        with torch.no_grad():
            assert torch.equal(theirs(obs.numpy())[0], mine(obs)), type(theirs).__name__

    taus = torch.rand(5, 8)
    iqn_t = ImplicitQuantileNetwork(
        preprocess_net=DQNet(**kw, features_only=True), action_shape=n, hidden_sizes=[512]
    )
    iqn = net_atari.iqn_net(shape, n)
    _load_by_position(iqn_t, iqn)
    with torch.no_grad():
        (z_t, _), _ = iqn_t(obs.numpy(), sample_size=8)
    # Tianshou samples its own fractions; compare at fixed ones through its submodules
    with torch.no_grad():
        feats = iqn_t.preprocess(obs.numpy())[0]
        emb = feats.unsqueeze(1) * iqn_t.embed_model(taus)
        want = iqn_t.last(emb.view(5 * 8, -1)).view(5, 8, -1).transpose(1, 2)
        assert torch.allclose(iqn(obs, taus), want, atol=1e-6)
    assert z_t.shape == (5, n, 8)

    fqf_t = FullQuantileFunction(
        preprocess_net=DQNet(**kw, features_only=True), action_shape=n, hidden_sizes=[512]
    )
    frac_t = FractionProposalNetwork(32, fqf_t.input_dim)
    fqf, frac = net_atari.fqf_net(shape, n)
    _load_by_position(fqf_t, fqf)
    _load_by_position(frac_t, frac)
    with torch.no_grad():
        (quantiles_t, fractions_t, _), _ = fqf_t(obs.numpy(), propose_model=frac_t)
        feats = fqf.features(obs)
        fr = frac(feats)
        assert torch.allclose(fr.taus, fractions_t.taus, atol=1e-6)
        # (the cosines of 64 i pi tau amplify the last-bit differences of the two softmaxes)
        assert torch.allclose(fqf.quantiles(feats, fractions_t.tau_hats), quantiles_t, atol=1e-5)


def test_nature_cnn_input_handling() -> None:
    cnn = net_atari.NatureCNN((4, 84, 84), scale=255.0)
    frames = np.full((2, 4, 84, 84), 255, dtype=np.uint8)
    raw = net_atari.NatureCNN((4, 84, 84))
    raw.load_state_dict(cnn.state_dict())
    ones = torch.ones(2, 4, 84, 84)
    assert torch.allclose(cnn(frames), raw(ones))  # uint8 numpy in, scaled on the way
    assert cnn.double()(frames).dtype == torch.float64
    with pytest.raises(ValueError, match=r"obs_shape: expected \(channels, height, width\)"):
        net_atari.NatureCNN((84, 84))
    with pytest.raises(ValueError, match="scale: expected a float > 0 or None, got 0"):
        net_atari.NatureCNN((4, 84, 84), scale=0)


# ------------------------------------------------------------------------------ presets
def test_atari_presets_are_registered_with_the_wrapper() -> None:
    for algo in ALGOS:
        e = registry.entry(algo, PONG)
        assert e.family == "atari" and e.env_wrapper == "tdrl.env.atari:wrap_deepmind"
        p: Any = registry.preset(algo, BREAKOUT)
        assert (p.task, p.gamma, p.n_step, p.target_update_freq) == (BREAKOUT, 0.99, 3, 500)
        assert (p.eps_train, p.eps_train_final, p.eps_decay_steps) == (1.0, 0.05, 1_000_000)
        assert (p.buffer_size, p.batch_size, p.frames_stack) == (100_000, 32, 4)
        assert p.lr == {"fqf": 5e-5, "rainbow": 6.25e-5}.get(algo, 1e-4)


@pytest.mark.parametrize("algo", ALGOS)
def test_make_algorithm_builds_each_atari_preset(algo: str) -> None:
    from tdrl.algorithm.presets import make_algorithm

    alg: Any = make_algorithm(algo, PONG)  # spaces from the wrapped env
    obs = torch.zeros(3, 4, 84, 84, dtype=torch.uint8)
    from tdrl.algorithm.base import make_batch

    act = alg.policy(make_batch({"obs": obs}, 3))["act"]
    assert act.shape == (3,) and int(act.max()) < 6
    assert math.isclose(alg.policy.eps_training, 0.05)


def test_bad_observation_space_is_a_preset_error() -> None:
    from tdrl.presets.atari import AtariDQNPreset, build_dqn

    with pytest.raises(registry.PresetError, match=r"stacked frames .*got shape \(4,\)"):
        build_dqn(AtariDQNPreset(), gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))


# ----------------------------------------------------------------------------- pipeline
def test_compact_frame_stack_in_the_buffer() -> None:
    """One frame per step in the buffer; sampled stacks equal the env's stacked frames,
    across episode ends (lost lives)."""
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.presets.atari import AtariDQNPreset, build_dqn

    envs = DummyVectorEnv([lambda: wrap_deepmind(gym.make(BREAKOUT))] * 2)
    torch.manual_seed(0)
    alg = build_dqn(AtariDQNPreset(), envs.observation_space[0], envs.action_space[0])
    compact = VectorReplayBuffer(400, 2, stack_num=4, save_only_last_obs=True, ignore_obs_next=True)
    full = VectorReplayBuffer(400, 2)
    for buf in (compact, full):
        c = Collector(alg.policy, envs, buf)  # greedy: the same actions both times
        c.reset(seed=5)
        c.collect(n_step=300)
    assert compact.obs.shape[1:] == (84, 84) and full.obs.shape[1:] == (4, 84, 84)
    idx = full.sample_indices(0)
    assert torch.equal(compact[idx]["obs"], full[idx]["obs"])
    done = full.done[idx].numpy()
    assert done.sum() >= 2  # lost lives inside the sample
    # with ignore_obs_next, obs_next is the next step's obs: not at an episode's last step
    live = np.setdiff1d(idx[~done], full.unfinished_index())
    assert torch.equal(compact[live]["obs_next"], full[live]["obs_next"])


@pytest.mark.slow
def test_tdrl_train_dqn_on_pong(tmp_path: Any) -> None:
    """``tdrl train dqn PongNoFrameskip-v4`` for a few thousand env steps: the real ALE, the
    wrappers, the CNN and the trainer work together (no score asserted; Pong takes ~1M)."""
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="dqn",
        task=PONG,
        seed=0,
        epochs=1,
        step_per_epoch=2000,
        training_num=5,  # 10 steps per collect: one gradient step each
        test_num=1,
        stop_reward=20.0,  # Tianshou's Atari examples stop Pong at 20
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        overrides={"buffer_size": 4000},
    )
    result, _ = run_experiment(cfg)
    assert result.env_step >= 2000 and result.gradient_step >= 190
    assert -21 <= result.best_reward <= 21  # one game's score
