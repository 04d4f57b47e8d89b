"""Return estimators: tdrl vs Tianshou (numba) on identical buffers and values.

* GAE over an on-policy rollout: 8 envs x 2048 steps, ``sample_indices(0)`` order, called
  as the on-policy algorithms call it (goal >= 1.5x; a numba loop when numba is installed,
  compiled by the warm-up call before timing).
* n-step (n=3) returns for 256 sampled indices of a full 100k-transition, 8-env buffer.

Each library runs on its own buffer, filled with the same transitions; tdrl is also timed on
Tianshou's buffer (same numpy columns) to separate the estimator from the buffer's ``next``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from benchmarks.timing import best_of, row
from tdrl.algorithm.returns import compute_episodic_return, compute_nstep_return
from tdrl.data.buffer import VectorReplayBuffer as TdrlVectorBuffer


def _cpu_time(fn: Callable[[], object], number: int) -> float:
    """Mean thread CPU seconds per call (less sensitive than wall time to a shared machine)."""
    start = time.thread_time()
    for _ in range(number):
        fn()
    return (time.thread_time() - start) / number


def _interleaved(
    ours: Callable[[], object], peer: Callable[[], object], number: int, rounds: int = 30
) -> tuple[float, float]:
    """Best per-call CPU seconds of ``ours`` and ``peer``, timed in alternating short rounds.

    The benchmark machine is shared with other jobs: alternating keeps both sides under the
    same load, and thread CPU time leaves out the time spent descheduled.
    """
    best_of(ours, number, repeat=1)  # warm up
    best_of(peer, number, repeat=1)
    t_ours = t_peer = float("inf")
    for _ in range(rounds):
        t_ours = min(t_ours, _cpu_time(ours, number))
        t_peer = min(t_peer, _cpu_time(peer, number))
    return t_ours, t_peer


def _fill(n_env: int, steps: int, seed: int = 0) -> tuple[Any, TdrlVectorBuffer]:
    """Identical random transitions written into a Tianshou and a tdrl vector buffer."""
    from tianshou.data import Batch
    from tianshou.data import VectorReplayBuffer as TsVectorBuffer

    rng = np.random.default_rng(seed)
    size = n_env * steps
    ts_buf = TsVectorBuffer(size, n_env)
    td_buf = TdrlVectorBuffer(size, n_env)
    obs = np.zeros((n_env, 4), dtype=np.float32)
    act = np.zeros(n_env, dtype=np.int64)
    for _ in range(steps):
        rew = rng.standard_normal(n_env)
        term = rng.random(n_env) < 0.004
        trunc = rng.random(n_env) < 0.002
        data = {"obs": obs, "act": act, "rew": rew, "terminated": term, "truncated": trunc}
        ts_buf.add(Batch(obs_next=obs, info=Batch(), **data))
        td_buf.add({"obs_next": obs, **data})
    return ts_buf, td_buf


def bench_gae() -> None:
    """GAE on 8 x 2048 steps (plus the ongoing episodes' unfinished cut)."""
    from tianshou.algorithm.algorithm_base import Algorithm

    ts_buf, td_buf = _fill(8, 2048)
    idx = td_buf.sample_indices(0)
    assert np.array_equal(idx, ts_buf.sample_indices(0))
    ts_batch, td_batch = ts_buf[idx], td_buf[idx]
    gen = torch.Generator().manual_seed(0)
    v_s = torch.randn(len(idx), 1, generator=gen)
    v_s_ = torch.randn(len(idx), 1, generator=gen)

    def peer() -> Any:
        return Algorithm.compute_episodic_return(ts_batch, ts_buf, idx, v_s_, v_s, 0.99, 0.95)

    def ours() -> Any:
        return compute_episodic_return(td_batch, td_buf, idx, v_s_, v_s, 0.99, 0.95)

    def ours_on_peer_buf() -> Any:
        return compute_episodic_return(ts_batch, ts_buf, idx, v_s_, v_s, 0.99, 0.95)

    exp, got = peer(), ours()
    np.testing.assert_allclose(got[0].numpy(), exp[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours_on_peer_buf()[1].numpy(), exp[1], rtol=1e-4, atol=1e-4)
    # the call OnPolicyAlgorithm._add_returns_and_advantages makes (a Batch read from the
    # buffer, critic values as tensors): the goal row of issue 17
    print(
        row(
            "GAE 8x2048, algorithm's Batch path (own buffers)",
            *_interleaved(ours, peer, 20),
            goal=1.5,
        ),
        flush=True,
    )
    print(row("GAE 8x2048 (both on tianshou's buffer)", *_interleaved(ours_on_peer_buf, peer, 20)))


def bench_nstep() -> None:
    """n-step 3 returns for 256 sampled indices of a full 1e5-transition, 8-env buffer."""
    from tianshou.algorithm.algorithm_base import Algorithm

    ts_buf, td_buf = _fill(8, 12_500, seed=1)
    idx = td_buf.sample_indices(256)
    q_table = torch.randn(td_buf.maxsize, generator=torch.Generator().manual_seed(1))

    def target_q(buffer: object, indices: np.ndarray) -> torch.Tensor:
        return q_table[indices]

    ts_batch, td_batch = ts_buf[idx], td_buf[idx]

    def peer() -> Any:
        return Algorithm.compute_nstep_return(ts_batch, ts_buf, idx, target_q, 0.99, 3)

    def ours() -> Any:
        return compute_nstep_return(td_batch, td_buf, idx, target_q, 0.99, 3)

    def ours_on_peer_buf() -> Any:
        return compute_nstep_return({}, ts_buf, idx, target_q, 0.99, 3)

    torch.testing.assert_close(ours()["returns"], peer().returns)
    torch.testing.assert_close(ours_on_peer_buf()["returns"], peer().returns)
    print(row("n-step 3, 256 of 1e5 (own buffers)", *_interleaved(ours, peer, 50)), flush=True)
    print(
        row("n-step 3, 256 of 1e5 (both on tianshou's)", *_interleaved(ours_on_peer_buf, peer, 50))
    )


def main() -> None:
    """Run the GAE and n-step comparisons (needs Tianshou installed)."""
    try:
        import tianshou  # noqa: F401
    except ImportError:
        print("tianshou is not installed: skipping bench_returns")
        return
    torch.set_num_threads(1)
    bench_gae()
    bench_nstep()


if __name__ == "__main__":
    main()
