"""The gymnasium vector-env adapter: autoreset modes, final observations, no lost steps."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from tdrl.env import DummyVectorEnv, GymVectorEnvAdapter, make_vector_env


class RandomLengthEnv(gym.Env):
    """obs = [episode, t, length, kind]; episodes of random length end by termination
    (kind 0) or truncation (kind 1); reward = t."""

    observation_space = spaces.Box(0, 10**9, shape=(4,), dtype=np.int64)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.ep = -1

    def _obs(self) -> np.ndarray:
        return np.array([self.ep, self.t, self.length, self.kind], dtype=np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.ep += 1
        self.t = 0
        self.length = int(self.np_random.integers(1, 12))
        self.kind = int(self.np_random.integers(0, 2))
        return self._obs(), {"phase": "reset", "ep": self.ep}

    def step(self, action):
        self.t += 1
        end = self.t == self.length
        info = {"phase": "step", "ep": self.ep}
        return self._obs(), float(self.t), end and not self.kind, end and bool(self.kind), info


def _check_stream(venv, steps: int) -> int:
    """Run the contract loop, then check every transition; return the number of episodes."""
    n = len(venv)
    obs, info = venv.reset(seed=0)
    assert all(d["phase"] == "reset" for d in info)
    rng = np.random.default_rng(0)
    prevs, nexts, rews, terms, truncs, resets = [], [], [], [], [], []
    for _ in range(steps):
        prevs.append(obs)
        obs, rew, term, trunc, info = venv.step(rng.integers(0, 2, size=n))
        assert info[0]["phase"] == "step"
        nexts.append(obs), rews.append(rew), terms.append(term), truncs.append(trunc)
        done = np.flatnonzero(term | trunc)
        if len(done):
            robs, rinfo = venv.reset(done)
            assert [d["env_id"] for d in rinfo] == done.tolist()
            assert rinfo[0]["phase"] == "reset"
            resets.append((obs[done], robs))
            obs = obs.copy()
            obs[done] = robs
    prev, nxt = np.stack(prevs), np.stack(nexts)
    rew, term, trunc = np.stack(rews), np.stack(terms), np.stack(truncs)
    assert (prev[0, :, 1] == 0).all()
    # same episode, one step further: nothing lost, nothing duplicated
    np.testing.assert_array_equal(nxt[..., 0], prev[..., 0])
    np.testing.assert_array_equal(nxt[..., 1], prev[..., 1] + 1)
    np.testing.assert_array_equal(rew, nxt[..., 1].astype(float))
    # the true final observation is returned at the done step, with the right flag
    end = nxt[..., 1] == nxt[..., 2]
    np.testing.assert_array_equal(term, end & (nxt[..., 3] == 0))
    np.testing.assert_array_equal(trunc, end & (nxt[..., 3] == 1))
    # each reset starts the next episode at t = 0
    final, first = np.concatenate([r[0] for r in resets]), np.concatenate([r[1] for r in resets])
    np.testing.assert_array_equal(first[:, 0], final[:, 0] + 1)
    assert (first[:, 1] == 0).all()
    return int((term | trunc).sum())


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_sync_vector_env_10k_steps(mode: AutoresetMode) -> None:
    venv = gym.vector.SyncVectorEnv([RandomLengthEnv] * 2, autoreset_mode=mode)
    env = GymVectorEnvAdapter(venv)
    assert _check_stream(env, 5_000) > 1000  # 2 envs: 10k env steps
    env.close()


def test_async_vector_env() -> None:
    venv = gym.vector.AsyncVectorEnv(
        [RandomLengthEnv] * 2, autoreset_mode=AutoresetMode.SAME_STEP, context="fork"
    )
    env = make_vector_env(venv)
    assert isinstance(env, GymVectorEnvAdapter)
    assert _check_stream(env, 1000) > 100
    env.close()


def test_next_step_mode_rejected() -> None:
    venv = gym.vector.SyncVectorEnv([RandomLengthEnv] * 2)
    with pytest.raises(ValueError, match="expected SAME_STEP or DISABLED, got NEXT_STEP"):
        GymVectorEnvAdapter(venv)
    venv.close()


def test_subset_step_rejected_permutation_ok() -> None:
    venv = gym.vector.SyncVectorEnv([RandomLengthEnv] * 3, autoreset_mode=AutoresetMode.DISABLED)
    env = GymVectorEnvAdapter(venv)
    obs, _ = env.reset(seed=1)
    with pytest.raises(NotImplementedError, match="steps all its 3 envs"):
        env.step([1], env_id=[0])
    out, *_, info = env.step([0, 0, 0], env_id=[2, 0, 1])
    assert [d["env_id"] for d in info] == [2, 0, 1]
    np.testing.assert_array_equal(out[:, 0], obs[[2, 0, 1], 0])
    env.close()


def test_dict_obs_same_step_final_obs() -> None:
    from tdrl.env.testing import MoveToRightEnv

    fns = [lambda: MoveToRightEnv(2, dict_state=True) for i in range(2)]
    venv = gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    env = GymVectorEnvAdapter(venv)
    env.reset()
    env.step([1, 0])
    obs, _, term, _, info = env.step([1, 1])
    assert term.tolist() == [True, False]
    assert obs["index"][:, 0].tolist() == [2, 1]  # the true final obs of env 0
    assert info[0]["step"] == 2
    robs, _ = env.reset([0])
    assert robs["index"][:, 0].tolist() == [0]
    env.close()


def test_make_vector_env_unwraps_sync_vector_env() -> None:
    venv = gym.vector.SyncVectorEnv([RandomLengthEnv] * 2)  # NEXT_STEP is fine: unwrapped
    env = make_vector_env(venv)
    assert isinstance(env, DummyVectorEnv)
    env.reset(seed=0)
    obs, *_ = env.step([1], env_id=[1])
    assert obs.shape == (1, 4)
    env.close()
