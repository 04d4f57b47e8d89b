"""GAE and n-step returns with ``terminated``/``truncated`` flags of any dtype (issue 24).

Tianshou takes ``np.logical_or`` of the flags and masks ``V(s')`` with the buffer's bool
column, so bool, int and float 0/1 flags all give the same answer. tdrl must too, on the
numba kernel and on the numpy path (``TDRL_NUMBA=0`` or no numba).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdrl.algorithm import Algorithm
from tdrl.algorithm import returns as R
from tdrl.data import Batch, ReplayBuffer

DTYPES = [bool, np.int64, np.int32, np.uint8, np.float32, np.float64]


class _Buf:
    """Four finished steps: episodes end at rows 1 and 3."""

    done = terminated = np.array([False, True, False, True])
    maxsize = 4

    def unfinished_index(self) -> np.ndarray:
        return np.array([], dtype=np.int64)


@pytest.fixture(params=["numba", "numpy"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "numpy":
        monkeypatch.setattr(R, "_gae_kernel", lambda: None)
    elif R._gae_kernel() is None:
        pytest.skip("numba not installed or TDRL_NUMBA=0")
    return str(request.param)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_gae_flags_of_any_dtype(path: str, dtype: type, as_tensor: bool) -> None:
    flags = np.array([0, 1, 0, 1]).astype(dtype)
    trunc = np.zeros(4, dtype=dtype)
    batch = {
        "rew": np.ones(4),
        "terminated": torch.as_tensor(flags) if as_tensor else flags,
        "truncated": torch.as_tensor(trunc) if as_tensor else trunc,
    }
    ret, adv = R.compute_episodic_return(
        batch, _Buf(), np.arange(4), v_s_=np.full(4, 5.0), v_s=np.zeros(4), gamma=0.5,
        gae_lambda=1.0,
    )  # fmt: skip
    # terminated rows do not bootstrap: r = 1; the others: 1 + 0.5 * (1 + 0.5 * 0) ... = 4
    assert ret.tolist() == [4.0, 1.0, 4.0, 1.0]
    assert adv.tolist() == [4.0, 1.0, 4.0, 1.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_monte_carlo_return_flags_of_any_dtype(path: str, dtype: type) -> None:
    batch = {
        "rew": np.array([7, 6, 1, 2, 3, 4, 5.0]),
        "terminated": np.array([0, 1, 0, 1, 0, 1, 0]).astype(dtype),
        "truncated": np.zeros(7, dtype=dtype),
    }

    class Buf:
        done = terminated = batch["terminated"].astype(bool)
        maxsize = 7

        def unfinished_index(self) -> np.ndarray:
            return np.array([6])

    ret, _ = R.compute_episodic_return(batch, Buf(), np.arange(7), gamma=0.1, gae_lambda=1.0)
    np.testing.assert_allclose(ret.numpy(), [7.6, 6, 1.2, 2, 3.4, 4, 5])


def test_float_flags_through_a_buffer(path: str) -> None:
    """Tianshou's own pattern: float flags in the batch, the same flags added to a buffer."""
    buf = ReplayBuffer(20)
    batch = Batch(
        terminated=np.array([0, 0, 0, 1.0]), truncated=np.array([0, 0, 1.0, 0]),
        rew=np.array([1, 2, 3, 4.0]),
    )  # fmt: skip
    for i in range(4):
        buf.add(Batch(obs=0, act=0, rew=batch.rew[i], terminated=bool(batch.terminated[i]),
                      truncated=bool(batch.truncated[i])))  # fmt: skip
    idx = buf.sample_indices(0)
    ret, _ = Algorithm.compute_episodic_return(batch, buf, idx, gamma=0.5, gae_lambda=1.0)
    np.testing.assert_allclose(ret.numpy(), [1 + 0.5 * (2 + 0.5 * 3), 2 + 0.5 * 3, 3, 4])


def test_nstep_with_int_flag_buffer_columns() -> None:
    """``compute_nstep_return`` masks with ``~terminated`` as a logical, not a bitwise, not."""

    class Buf:
        rew = np.array([1.0, 1.0])
        done = terminated = np.array([0, 1])
        maxsize = 2

        def next(self, i: np.ndarray) -> np.ndarray:
            return np.minimum(i + 1, 1)

        def unfinished_index(self) -> np.ndarray:
            return np.array([], dtype=np.int64)

    batch: dict = {}
    out = Algorithm.compute_nstep_return(
        batch, Buf(), np.arange(2), lambda b, i: torch.full((len(i),), 10.0), gamma=0.5
    )
    assert out["returns"].reshape(-1).tolist() == [6.0, 1.0]
