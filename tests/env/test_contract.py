"""The vector-env contract, run against every vector env class."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from tdrl.env.testing import GoalWalkEnv, MoveToRightEnv


def _fns(sizes: list[int], **kw: object) -> list:
    return [lambda s=s, i=i: MoveToRightEnv(s, ident=i, **kw) for i, s in enumerate(sizes)]


def test_reset_step_contract(make_venv) -> None:
    venv = make_venv(_fns([2, 3, 4]))
    assert len(venv) == venv.env_num == 3
    assert not venv.is_async
    assert len(venv.action_space) == 3 and venv.action_space[0] == spaces.Discrete(2)
    assert venv.observation_space[2] == spaces.Discrete(5)
    obs, info = venv.reset()
    assert obs.tolist() == [0, 0, 0]
    assert info.dtype == object and [d["env_id"] for d in info] == [0, 1, 2]
    assert [d["ident"] for d in info] == [0, 1, 2]
    obs, rew, term, trunc, info = venv.step(np.ones(3, dtype=np.int64))
    assert obs.tolist() == [1, 1, 1]
    assert rew.dtype == np.float64 and term.dtype == bool and trunc.dtype == bool
    obs, rew, term, trunc, info = venv.step(torch.ones(3, dtype=torch.long))
    assert obs.tolist() == [2, 2, 2]
    assert rew.tolist() == [1.0, 0.0, 0.0]
    assert term.tolist() == [True, False, False]
    assert trunc.tolist() == [False, False, False]
    assert [d["step"] for d in info] == [2, 2, 2]
    # no autoreset: the caller resets the finished env
    obs, info = venv.reset(env_id=[0])
    assert obs.tolist() == [0] and info[0]["env_id"] == 0


def test_subset_stepping_keeps_order(make_venv) -> None:
    venv = make_venv(_fns([5, 5, 5, 5]))
    venv.reset()
    obs, _, _, _, info = venv.step([1, 1], env_id=[3, 1])
    assert obs.tolist() == [1, 1] and [d["env_id"] for d in info] == [3, 1]
    obs, _, _, _, info = venv.step([1, 0, 1], env_id=np.array([1, 0, 3]))
    assert obs.tolist() == [2, 0, 2] and [d["env_id"] for d in info] == [1, 0, 3]
    obs, _, _, _, info = venv.step([1], env_id=2)
    assert obs.tolist() == [1] and info[0]["env_id"] == 2


def test_truncation(make_venv) -> None:
    venv = make_venv(_fns([10, 10], max_steps=3))
    venv.reset()
    for _ in range(2):
        _, _, term, trunc, _ = venv.step([1, 0])
        assert not term.any() and not trunc.any()
    _, _, term, trunc, _ = venv.step([1, 0])
    assert term.tolist() == [False, False] and trunc.tolist() == [True, True]


def test_dict_obs(make_venv) -> None:
    venv = make_venv(_fns([3, 3], dict_state=True))
    obs, _ = venv.reset()
    assert set(obs) == {"index", "step"}
    assert obs["index"].shape == (2, 1) and obs["index"].dtype == np.int64
    obs, *_ = venv.step([1, 0])
    assert obs["index"][:, 0].tolist() == [1, 0]
    assert obs["step"].dtype == np.float32 and obs["step"][:, 0].tolist() == [1.0, 1.0]


def test_goal_env_dict_obs(make_venv) -> None:
    venv = make_venv([lambda: GoalWalkEnv(6) for _ in range(2)])
    obs, _ = venv.reset(seed=3)
    assert obs["desired_goal"].shape == (2, 1)
    assert (obs["observation"] != obs["desired_goal"]).all()


class _ActEnv(gym.Env):
    """Echoes the action it receives as its observation."""

    def __init__(self, action_space: spaces.Space) -> None:
        self.action_space = action_space
        self.observation_space = spaces.Box(-10, 10, shape=(3,), dtype=np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3), {}

    def step(self, action):
        assert self.action_space.contains(action), (action, self.action_space)
        obs = np.zeros(3)
        flat = np.asarray(action, dtype=np.float64).reshape(-1)
        obs[: flat.size] = flat
        return obs, 0.0, False, False, {}


@pytest.mark.parametrize(
    ("space", "action"),
    [
        (spaces.Discrete(3), np.array([2, 1])),
        (spaces.MultiDiscrete([3, 4]), np.array([[2, 3], [1, 0]])),
        (spaces.Box(-1, 1, shape=(2,), dtype=np.float32), np.array([[0.5, -0.5], [0.25, 1.0]])),
    ],
    ids=["discrete", "multidiscrete", "box"],
)
def test_action_space_kinds(make_venv, space: spaces.Space, action: np.ndarray) -> None:
    venv = make_venv([lambda: _ActEnv(space) for _ in range(2)])
    venv.reset()
    if isinstance(space, spaces.Box):
        action = action.astype(np.float32)
    obs, *_ = venv.step(action)
    np.testing.assert_allclose(obs[:, : action.reshape(2, -1).shape[1]], action.reshape(2, -1))


def test_seeding_same_seed_same_trajectory(make_venv) -> None:
    def run(seed: int) -> list:
        venv = make_venv([lambda: gym.make("CartPole-v1") for _ in range(3)])
        venv.seed(seed)
        out = [venv.reset()[0]]
        rng = np.random.default_rng(0)
        for _ in range(5):
            out.append(venv.step(rng.integers(0, 2, size=3))[0])
        samples = [sp.sample() for sp in venv.action_space]
        venv.close()
        return [np.stack(out), samples]

    a, b, c = run(7), run(7), run(8)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    assert not np.array_equal(a[0], c[0])
    # env i is seeded with seed + i: env 1 under seed 7 == env 0 under seed 8
    np.testing.assert_array_equal(a[0][:, 1], c[0][:, 0])


def test_reset_with_seed_matches_gymnasium(make_venv) -> None:
    venv = make_venv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    obs, _ = venv.reset(seed=11)
    ref = gym.make("CartPole-v1")
    np.testing.assert_array_equal(obs[1], ref.reset(seed=12)[0])
    obs1, _ = venv.reset(env_id=[1], seed=[12])
    np.testing.assert_array_equal(obs1[0], obs[1])


def test_bad_input_errors(make_venv) -> None:
    venv = make_venv(_fns([3, 3]))
    venv.reset()
    with pytest.raises(ValueError, match="action: expected leading dim 2"):
        venv.step([1, 1, 1])
    with pytest.raises(ValueError, match="action: expected leading dim 2"):
        venv.step(np.array([1, 1, 1]))  # a numpy action: the same check
    with pytest.raises(IndexError, match="env_id must be in"):
        venv.step([1], env_id=[5])
    with pytest.raises(IndexError, match=r"env_id must be in \[0, 2\), got \[-1\]"):
        venv.reset(env_id=np.array([-1]))
    with pytest.raises(ValueError, match="step\\(None\\)"):
        venv.step(None)
    with pytest.raises(ValueError, match="expected 2 seeds"):
        venv.reset(seed=[1, 2, 3])
    venv.close()
    venv.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        venv.reset()


def test_get_set_attr(make_venv) -> None:
    venv = make_venv(_fns([3, 4]))
    assert venv.get_env_attr("size") == [3, 4]
    venv.set_env_attr("size", 9, id=1)
    assert venv.get_env_attr("size", 1) == [9]


def test_async_wait_num(make_venv) -> None:
    sleeps = [0.0, 0.0, 0.3]
    fns = [lambda s=s: MoveToRightEnv(10, sleep=s) for s in sleeps]
    venv = make_venv(fns, wait_num=2, timeout=None)
    assert venv.is_async
    venv.reset()
    obs, _, _, _, info = venv.step([1, 1, 1])
    ids = sorted(d["env_id"] for d in info)
    assert len(ids) >= 2 and obs.shape == (len(ids),)
    if len(ids) == 2:  # subprocess envs: the slow one is still stepping
        assert ids == [0, 1] and venv.waiting_id == [2]
        with pytest.raises(RuntimeError, match="still stepping"):
            venv.step([1], env_id=[2])
        obs, _, _, _, info = venv.step(None)
        assert [d["env_id"] for d in info] == [2]
    assert venv.waiting_id == [] and venv.ready_id == [0, 1, 2]


def test_empty_env_id(make_venv) -> None:
    venv = make_venv(_fns([3, 3], dict_state=True))
    venv.reset()
    obs, info = venv.reset(env_id=[])
    assert obs["index"].shape == (0, 1) and info.shape == (0,)
    obs, rew, term, trunc, info = venv.step(np.zeros(0, dtype=np.int64), env_id=[])
    assert obs["step"].shape == (0, 1) and rew.shape == term.shape == trunc.shape == (0,)
