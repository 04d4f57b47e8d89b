"""Collector bad input (issue 16): NaN/inf from an env raises at the env boundary naming
the env and the key (what was collected before stays in the buffer); an algorithm passed
where its policy is expected is refused with a hint."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.data import NonFiniteError
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.collector import AsyncCollector, Collector
from tdrl.env import DummyVectorEnv


class BadValueEnv(gym.Env):
    """Counts steps; at step ``bad_at`` (0: at reset) it puts ``value`` into ``where``
    (``"rew"``, ``"obs"`` or ``"goal"``, a float leaf of its Dict observation)."""

    def __init__(self, bad_at: int | None, where: str = "rew", value: float = np.nan) -> None:
        self.bad_at, self.where, self.value = bad_at, where, value
        self.observation_space = gym.spaces.Dict(
            {
                "pos": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
                "goal": gym.spaces.Box(-np.inf, np.inf, (1,), np.float64),
                "count": gym.spaces.Discrete(100),
            }
        )
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> dict:
        obs = {
            "pos": np.full(2, self.t, np.float32),
            "goal": np.zeros(1),
            "count": np.int64(self.t),
        }
        if self.t == self.bad_at and self.where in ("obs", "goal"):
            key = "pos" if self.where == "obs" else "goal"
            obs[key] = obs[key].copy()
            obs[key][-1] = self.value
        return obs

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        self.t += 1
        rew = self.value if (self.t == self.bad_at and self.where == "rew") else 1.0
        return self._obs(), rew, False, self.t >= 50, {}


def policy(batch: Batch, state: Any = None) -> Batch:
    n = batch.batch_size[0]
    return Batch({"act": torch.zeros(n, dtype=torch.int64)}, batch_size=[n])


def make(bad: list[int | None], where: str = "rew", value: float = np.nan, **kw: Any) -> Any:
    def factory(b: int | None) -> Any:
        return lambda: BadValueEnv(b, where, value)

    envs = DummyVectorEnv([factory(b) for b in bad], **kw)
    return envs, VectorReplayBuffer(200, len(bad))


@pytest.mark.parametrize(
    ("where", "value", "key"),
    [
        ("rew", np.nan, "rew"),
        ("rew", -np.inf, "rew"),
        ("obs", np.inf, r"obs_next\.pos"),
        ("goal", np.nan, r"obs_next\.goal"),
    ],
)
def test_nonfinite_step_raises_naming_env_and_key(where: str, value: float, key: str) -> None:
    envs, buf = make([None, 4, None], where, value)
    c = Collector(policy, envs, buf)
    c.reset(seed=0)
    c.collect(n_step=6)  # two clean vector steps
    with pytest.raises(NonFiniteError, match=rf"env 1: {key} returned by step\(\) is -?(nan|inf)"):
        c.collect(n_step=9)
    # what was collected before the bad step stays: 2 + 1 clean vector steps, 3 envs
    assert len(buf) == 9
    assert np.isfinite(buf.rew[buf.sample_indices(0)].numpy()).all()
    assert np.isfinite(buf.obs_next.pos[buf.sample_indices(0)].numpy()).all()


def test_nonfinite_reset_observation_raises() -> None:
    envs, buf = make([None, None, 0], "obs", np.nan)
    c = Collector(policy, envs, buf)
    with pytest.raises(NonFiniteError, match=r"env 2: obs\.pos returned by reset\(\) is nan"):
        c.reset(seed=0)


def test_integer_observations_are_not_checked() -> None:
    """Only floating leaves are checked (an integer leaf cannot hold NaN)."""
    from tdrl.data.collector import first_nonfinite

    assert first_nonfinite({"count": np.array([1, 2]), "x": np.ones((2, 3))}, "obs") is None
    assert first_nonfinite(torch.tensor([0.0, float("nan")]), "rew") == (
        "rew",
        1,
        pytest.approx(np.nan, nan_ok=True),
    )


def test_check_finite_false_stores_the_values() -> None:
    envs, buf = make([None, 2], "rew", np.nan)
    c = Collector(policy, envs, buf, check_finite=False)
    c.reset(seed=0)
    c.collect(n_step=6)
    assert len(buf) == 6 and np.isnan(buf.rew.numpy()).sum() == 1


def test_async_collector_checks_too() -> None:
    envs, buf = make([None, 3], "obs", np.inf, wait_num=1)
    c = AsyncCollector(policy, envs, buf)
    c.reset(seed=0)
    with pytest.raises(NonFiniteError, match=r"env 1: obs_next\.pos returned by step\(\)"):
        c.collect(n_step=20)
    assert len(buf) >= 2 and np.isfinite(buf.obs_next.pos.numpy()).all()


def test_an_algorithm_stands_for_its_policy() -> None:
    """Tianshou 2.0's ``Collector(algorithm, envs, ...)``: the algorithm's policy acts."""
    from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy

    pol = DQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2))
    alg = DQN(policy=pol)
    for cls in (Collector, AsyncCollector):
        envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
        c = cls(alg, envs)
        assert c.policy is pol
        c.reset(seed=0)
        assert c.collect(n_step=3).n_collected_steps >= 3
    assert Collector(alg.policy, DummyVectorEnv([lambda: gym.make("CartPole-v1")])).policy is pol


def test_algorithm_is_recognized_without_importing_the_old_base_module() -> None:
    """The check looks where ``Algorithm`` is defined, not at the ``tdrl.algorithm.base``
    alias, which a script importing only an algorithm module never loads."""
    import subprocess
    import sys

    code = (
        "import sys, gymnasium as gym, torch\n"
        "from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy\n"
        "from tdrl.data.collector import Collector\n"
        "from tdrl.env import DummyVectorEnv\n"
        "assert 'tdrl.algorithm.base' not in sys.modules\n"
        "alg = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2), "
        "action_space=gym.spaces.Discrete(2)))\n"
        "c = Collector(alg, DummyVectorEnv([lambda: gym.make('CartPole-v1')]))\n"
        "print(c.policy is alg.policy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
