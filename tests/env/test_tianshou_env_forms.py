"""Tianshou's spellings of the vector-env API on tdrl's envs: ``step(id=)``, ``workers``,
envs without spaces, ``VectorEnvWrapper`` / ``NormObsVectorEnv(venv)``, ``_wrap_id``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from tdrl.data import Batch, Collector, VectorReplayBuffer
from tdrl.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    ShmemVectorEnv,
    SubprocVectorEnv,
    VectorEnvWrapper,
)
from tdrl.env.base import EnvWorker
from tdrl.env.dummy import DummyEnvWorker
from tdrl.env.normobs import NormObsDummyVectorEnv, NormObsVectorEnv
from tdrl.env.subproc import SubprocEnvWorker
from tdrl.env.testing import MoveToRightEnv

MAKERS: list[Any] = [
    pytest.param(DummyVectorEnv, id="dummy"),
    pytest.param(lambda fns, **kw: SubprocVectorEnv(fns, context="fork", **kw), id="subproc"),
    pytest.param(lambda fns, **kw: ShmemVectorEnv(fns, context="fork", **kw), id="shmem"),
]


def _fns(n: int = 3, **kw: Any) -> list[Callable[[], gym.Env]]:
    def make(i: int) -> Callable[[], gym.Env]:
        return lambda: MoveToRightEnv(size=4, ident=i, **kw)

    return [make(i) for i in range(n)]


@pytest.mark.parametrize("make", MAKERS)
def test_step_accepts_id_as_env_id(make: Any) -> None:
    venv = make(_fns())
    try:
        venv.reset()
        obs, _, _, _, info = venv.step([1, 1], id=[2, 0])
        assert obs.tolist() == [1, 1] and [d["env_id"] for d in info] == [2, 0]
        obs, *_ = venv.step(np.array([1]), env_id=[2])
        assert obs.tolist() == [2]
        with pytest.raises(TypeError, match="env_id"):
            venv.step([1], env_id=[0], id=[0])
    finally:
        venv.close()


@pytest.mark.parametrize("make", MAKERS)
def test_workers_one_per_env(make: Any) -> None:
    venv = make(_fns())
    try:
        workers = venv.workers
        assert len(workers) == 3 and all(isinstance(w, EnvWorker) for w in workers)
        assert [w.get_env_attr("ident") for w in workers] == [0, 1, 2]
        workers[1].set_env_attr("size", 9)
        assert venv.get_env_attr("size") == [4, 9, 4]
        if isinstance(venv, DummyVectorEnv):
            assert all(isinstance(w, DummyEnvWorker) for w in workers)
            assert workers[2].env is venv.envs[2]
        else:
            assert all(isinstance(w, SubprocEnvWorker) for w in workers)
            assert [w.process.pid for w in workers] == venv.pids
    finally:
        venv.close()


class Spaceless(gym.Env):
    """An env that defines no observation or action space; its observations differ in
    length per env (so they stack to an object array)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return np.zeros(self.n), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return np.full(self.n, float(action)), 1.0, False, False, {"n": self.n}


@pytest.mark.parametrize("make", MAKERS)
def test_envs_without_spaces(make: Any) -> None:
    venv = make([lambda: Spaceless(2), lambda: Spaceless(3)])
    try:
        assert venv.observation_space == [None, None] and venv.action_space == [None, None]
        venv.seed(1)
        obs, info = venv.reset(seed=0)
        assert obs.dtype == object and [o.shape for o in obs] == [(2,), (3,)]
        obs, rew, *_, info = venv.step(np.array([4, 5]))
        assert obs[1].tolist() == [5.0, 5.0, 5.0] and rew.tolist() == [1.0, 1.0]
        assert [d["n"] for d in info] == [2, 3]
    finally:
        venv.close()


def test_envs_without_spaces_of_equal_shapes_stack() -> None:
    venv = DummyVectorEnv([lambda: Spaceless(2)] * 3)
    obs, _ = venv.reset()
    assert obs.shape == (3, 2) and obs.dtype == np.float64
    empty, _ = venv.reset(env_id=[])
    assert len(empty) == 0


def test_step_info_array_makes_a_batch_even_with_objects_in_it() -> None:
    venv = DummyVectorEnv(_fns(3))
    venv.reset()
    *_, info = venv.step([1, 1], env_id=[2, 1])
    for d in info:
        d["env"] = object()  # an object, as an env that reports itself in its info would
    batch = Batch(info)
    assert batch.env_id.tolist() == [2, 1] and batch.ident.tolist() == [2, 1]
    assert batch.env.shape == (2,) and batch.env[0] is info[0]["env"]


def test_wrapper_forwards_everything() -> None:
    inner = DummyVectorEnv(_fns(), wait_num=2)
    venv = VectorEnvWrapper(inner)
    assert isinstance(venv, BaseVectorEnv) and len(venv) == 3 and venv.is_async
    assert venv.observation_space is inner.observation_space
    obs, _ = venv.reset(env_id=[0, 1])
    assert obs.tolist() == [0, 0]
    venv.step([1, 1, 1], id=[0, 1, 2])
    assert venv.ready_id == inner.ready_id and venv.waiting_id == inner.waiting_id
    assert venv.get_env_attr("ident", id=[2]) == [2]
    venv.set_env_attr("size", 7)
    assert inner.get_env_attr("size") == [7, 7, 7]
    assert venv.workers[0].env is inner.envs[0]  # type: ignore[attr-defined]
    assert venv.envs is inner.envs  # read through
    assert venv.seed(3) == inner.seed(3)
    venv.close()
    assert venv.is_closed and inner.is_closed
    with pytest.raises(TypeError, match="venv"):
        VectorEnvWrapper([MoveToRightEnv(2)])  # type: ignore[arg-type]


def test_wrapper_in_a_collector() -> None:
    from tdrl.algorithm import RandomActionPolicy

    venv = VectorEnvWrapper(DummyVectorEnv(_fns(2)))
    collector = Collector(
        RandomActionPolicy(gym.spaces.Discrete(2)), venv, VectorReplayBuffer(50, 2)
    )
    assert collector.collect(n_step=10, reset_before_collect=True).n_collected_steps == 10


def test_norm_obs_wrapper_equals_the_norm_obs_dummy_env() -> None:
    fns = _fns(3, array_state=True)
    wrapped = NormObsVectorEnv(DummyVectorEnv(fns))
    built = NormObsDummyVectorEnv(fns)
    acts = [np.array([1, 0, 1]), np.array([1, 1, 1]), np.array([0, 1, 1])]
    np.testing.assert_allclose(wrapped.reset()[0], built.reset()[0])
    for act in acts:
        a = wrapped.step(act, id=[0, 1, 2])
        b = built.step(act, env_id=[0, 1, 2])
        np.testing.assert_allclose(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_allclose(wrapped.get_obs_rms().mean, built.get_obs_rms().mean)
    assert int(wrapped.get_obs_rms().count) == 3 * (1 + len(acts))


def test_norm_obs_wrapper_test_envs_share_frozen_statistics() -> None:
    fns = _fns(2, array_state=True)
    train = NormObsVectorEnv(DummyVectorEnv(fns))
    test = NormObsVectorEnv(DummyVectorEnv(fns), update_obs_rms=False)
    train.reset()
    train.step(np.array([1, 1]))
    test.set_obs_rms(train.get_obs_rms())
    assert test.get_obs_rms() is train.get_obs_rms()
    count = int(train.get_obs_rms().count)
    raw, _ = test.venv.reset()
    obs, _ = test.reset()
    rms = train.get_obs_rms()
    expected = np.clip((raw - rms.mean.numpy()) / np.sqrt(rms.var.numpy() + rms.eps), -10, 10)
    np.testing.assert_allclose(obs, expected, rtol=1e-5)
    assert int(train.get_obs_rms().count) == count
    shared = NormObsVectorEnv(DummyVectorEnv(fns), update_obs_rms=False, obs_rms=rms)
    assert shared.get_obs_rms() is rms


def test_norm_obs_wrapper_refuses_non_array_spaces() -> None:
    with pytest.raises(TypeError, match="observation_space"):
        NormObsVectorEnv(DummyVectorEnv(_fns(2)))  # Discrete observations


class CountedSteps(DummyVectorEnv):
    """A subclass in Tianshou's style: it overrides the public ``step`` and selects its
    envs with ``_wrap_id``."""

    def step(self, action: Any, id: Any = None) -> Any:  # type: ignore[override]
        ids = self._wrap_id(id)
        self.calls = [*getattr(self, "calls", []), ids]
        return super().step(action, ids)


def test_wrap_id_for_subclasses() -> None:
    venv = CountedSteps(_fns())
    venv.reset()
    venv.step([1, 1, 1])
    venv.step([1], 2)
    assert venv.calls == [[0, 1, 2], [2]]
    assert venv._wrap_id(np.int64(1)) == [1]
    with pytest.raises(IndexError, match="env_id"):
        venv._wrap_id([5])
