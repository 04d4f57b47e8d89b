"""RayVectorEnv on a local Ray instance: the shared vector-env contract, plus failures."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

# a local Ray instance per module (10-20 s to start): run with the slow tests
pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")

import tests.env.test_contract as contract  # noqa: E402
from tdrl.env import DummyVectorEnv  # noqa: E402
from tdrl.env.ray_env import RayVectorEnv  # noqa: E402
from tdrl.env.testing import FailingEnv, MoveToRightEnv  # noqa: E402

# the shared contract, run here against RayVectorEnv (this module's make_venv wins); the
# quick ones run by default, the rest (one actor process per env: ~1-3 s each) are slow
from tests.env.test_contract import (  # noqa: E402, F401
    test_async_wait_num,
    test_bad_input_errors,
    test_reset_step_contract,
    test_subset_stepping_keeps_order,
)

slow = pytest.mark.slow


@slow
@pytest.mark.parametrize(
    "name",
    [
        "test_truncation",
        "test_dict_obs",
        "test_get_set_attr",
        "test_empty_env_id",
        "test_reset_with_seed_matches_gymnasium",
        "test_seeding_same_seed_same_trajectory",
    ],
)
def test_contract_slow(make_venv: Callable[..., Any], name: str) -> None:
    getattr(contract, name)(make_venv)


@slow
def test_contract_action_space_box(make_venv: Callable[..., Any]) -> None:
    from gymnasium import spaces

    space = spaces.Box(-1, 1, shape=(2,), dtype=np.float32)
    contract.test_action_space_kinds(make_venv, space, np.array([[0.5, -0.5], [0.25, 1.0]]))


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (started only if none is running)."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def make_venv() -> Iterator[Callable[..., Any]]:
    """Build a RayVectorEnv; closes what it built afterwards."""
    built: list[Any] = []

    def make(fns: list, **kw: Any) -> Any:
        venv = RayVectorEnv(fns, **kw)
        built.append(venv)
        return venv

    yield make
    for venv in built:
        venv.close()


@slow
def test_matches_dummy_trajectories() -> None:
    fns = [lambda i=i: MoveToRightEnv(3 + i, max_steps=4) for i in range(3)]
    ref, venv = DummyVectorEnv(fns), RayVectorEnv(fns)
    rng = np.random.default_rng(0)
    try:
        for a, b in zip(ref.reset(seed=1), venv.reset(seed=1)):
            assert [np.asarray(x).tolist() for x in a] == [np.asarray(x).tolist() for x in b]
        for _ in range(12):
            act = rng.integers(0, 2, size=3)
            r, v = ref.step(act), venv.step(act)
            for x, y in zip(r[:4], v[:4]):
                np.testing.assert_array_equal(x, y)
            done = np.flatnonzero(r[2] | r[3])
            if len(done):
                np.testing.assert_array_equal(ref.reset(done)[0], venv.reset(done)[0])
    finally:
        ref.close()
        venv.close()


def test_env_that_raises_names_the_env_and_stays_usable() -> None:
    venv = RayVectorEnv([lambda: MoveToRightEnv(9), lambda: FailingEnv(fail_at=2)])
    try:
        venv.reset()
        venv.step([1, 1])
        with pytest.raises(RuntimeError, match=r"env 1 raised in its actor.*deliberate failure"):
            venv.step([1, 1])
        obs, *_ = venv.step([1], env_id=[0])
        assert obs.tolist() == [3]
    finally:
        venv.close()


@slow
def test_factory_that_raises() -> None:
    def bad() -> Any:
        raise ValueError("no such env")

    with pytest.raises(RuntimeError, match=r"(?s)env 0 .*no such env"):
        RayVectorEnv([bad])


@slow
def test_close_kills_the_actors() -> None:
    venv = RayVectorEnv([lambda: MoveToRightEnv(3)] * 2)
    actors = list(venv.actors)
    venv.close()
    assert venv.is_closed and venv.actors == []
    # ray.kill is asynchronous: on a loaded machine a call right after it may still be
    # served, so wait (bounded) for the actor to be gone
    deadline = time.monotonic() + 120
    with pytest.raises(ray.exceptions.RayActorError):
        while time.monotonic() < deadline:
            ray.get(actors[0].spaces.remote(), timeout=30)
            time.sleep(0.5)


def test_bad_num_cpus() -> None:
    with pytest.raises(ValueError, match="num_cpus: expected a number >= 0, got -1"):
        RayVectorEnv([lambda: MoveToRightEnv(3)], num_cpus=-1)
