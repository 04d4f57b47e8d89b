"""Property test: random interleavings of subset steps and resets match a plain model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdrl.env import DummyVectorEnv, ShmemVectorEnv
from tdrl.env.testing import MoveToRightEnv

SIZES = [1, 2, 3]
N = len(SIZES)

ops = st.lists(
    st.tuples(
        st.booleans(),  # True: step, False: reset
        st.lists(st.integers(0, N - 1), min_size=1, max_size=N, unique=True),
        st.lists(st.integers(0, 1), min_size=N, max_size=N),
    ),
    min_size=1,
    max_size=25,
)


def _check(venv, program, eager: bool = False) -> None:
    """``eager``: an env stepped after its episode ended without a reset has been reset by its
    worker (``eager_reset``), so it continues from position 0."""
    pos = np.zeros(N, dtype=np.int64)
    ended = np.zeros(N, dtype=bool)
    obs, _ = venv.reset()
    assert obs.tolist() == pos.tolist()
    for is_step, ids, acts in program:
        act = np.array(acts[: len(ids)])
        if is_step:
            obs, rew, term, trunc, info = venv.step(act, env_id=ids)
            for j, i in enumerate(ids):
                if eager and ended[i]:
                    pos[i], ended[i] = 0, False
                pos[i] = min(SIZES[i], pos[i] + 1) if act[j] else max(0, pos[i] - 1)
            hit = pos[ids] == np.array(SIZES)[ids]
            ended[ids] = hit
            assert term.tolist() == hit.tolist() and rew.tolist() == hit.astype(float).tolist()
            assert not trunc.any()
        else:
            obs, info = venv.reset(env_id=ids)
            pos[ids], ended[ids] = 0, False
        assert obs.tolist() == pos[ids].tolist()
        assert [d["env_id"] for d in info] == ids


def _fns() -> list:
    return [lambda s=s: MoveToRightEnv(s) for s in SIZES]


@settings(max_examples=40, deadline=None)
@given(program=ops)
def test_dummy_matches_model(program) -> None:
    venv = DummyVectorEnv(_fns())
    _check(venv, program)
    venv.close()


@pytest.fixture(scope="module", params=[False, True], ids=["lazy-reset", "eager-reset"])
def shmem(request: pytest.FixtureRequest):
    """One ShmemVectorEnv for every example (each example starts with a full reset)."""
    venv = ShmemVectorEnv(_fns(), context="fork", eager_reset=request.param)
    yield venv
    venv.close()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(program=ops)
def test_shmem_matches_model(shmem, program) -> None:
    _check(shmem, program, eager=shmem.eager_reset)
