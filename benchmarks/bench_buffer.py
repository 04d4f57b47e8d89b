"""Replay buffer speed: tdrl against Tianshou on identical inputs, in one process.

Figures: 8-env ``VectorReplayBuffer.add`` with Hopper-sized transitions (obs 11 floats,
act 3), ``sample(256)``, ``prev + next + unfinished_index`` over the whole buffer, and the
episode-aware calls / sampling at capacities 1e4 and 1e6 (they must not grow with capacity).

    /opt/tsenv/bin/python -m benchmarks buffer
"""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.timing import best_of, row


def pair(fn_a, fn_b, number: int, repeat: int = 9) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Best-of timings of two callables measured in alternation (load hits both alike)."""
    a = b = float("inf")
    for _ in range(repeat):
        a = min(a, best_of(fn_a, number, repeat=1))
        b = min(b, best_of(fn_b, number, repeat=1))
    return a, b


N_ENV = 8
OBS, ACT = 11, 3


def _steps(n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        term = rng.random(N_ENV) < 0.02
        trunc = rng.random(N_ENV) < 0.005
        out.append(
            {
                "obs": rng.standard_normal((N_ENV, OBS)),
                "act": rng.standard_normal((N_ENV, ACT)),
                "rew": rng.standard_normal(N_ENV),
                "terminated": term,
                "truncated": trunc,
                "obs_next": rng.standard_normal((N_ENV, OBS)),
            }
        )
    return out


def _fill(tdrl_buf, ts_buf, ts_batch, steps, n: int) -> None:  # type: ignore[no-untyped-def]
    ids = np.arange(N_ENV)
    for i in range(n):
        step = steps[i % len(steps)]
        tdrl_buf.add(step, ids)
        if ts_buf is not None:
            ts_buf.add(ts_batch(**step), ids)


def main() -> None:
    """Print the tdrl/Tianshou rows."""
    torch.set_num_threads(1)
    from tianshou.data import Batch as TsBatch
    from tianshou.data import VectorReplayBuffer as TsVector

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    steps = _steps(512)
    ts_steps = [TsBatch(**s) for s in steps]
    info_keys = ("x_position", "x_velocity", "z_distance_from_origin", "reward_forward")
    rich = [
        {**s, "info": {"env_id": np.arange(N_ENV), **{k: s["rew"] * 0.5 for k in info_keys}}}
        for s in steps
    ]
    ts_rich = [TsBatch(**r, policy=TsBatch()) for r in rich]
    td_steps = [Batch({k: torch.from_numpy(v) for k, v in s.items()}) for s in steps]
    ids = np.arange(N_ENV)

    # -- add ----------------------------------------------------------------
    for cap in (10_000, 1_000_000):
        mine = VectorReplayBuffer(cap, N_ENV, seed=0)
        peer = TsVector(cap, N_ENV)
        it = iter(range(10**9))

        def add_mine(buf=mine, it=it) -> None:  # type: ignore[no-untyped-def]
            buf.add(steps[next(it) % 512], ids)

        def add_mine_td(buf=mine, it=it) -> None:  # type: ignore[no-untyped-def]
            buf.add(td_steps[next(it) % 512], ids)

        def add_peer(buf=peer, it=it) -> None:  # type: ignore[no-untyped-def]
            buf.add(ts_steps[next(it) % 512], ids)

        t_mine, t_peer = pair(add_mine, add_peer, 2000)
        t_td, t_peer2 = pair(add_mine_td, add_peer, 2000)
        t_peer = min(t_peer, t_peer2)
        print(row(f"add 8 envs, dict of numpy (cap {cap:.0e})", t_mine, t_peer), flush=True)
        print(row(f"add 8 envs, tdrl Batch of tensors (cap {cap:.0e})", t_td, t_peer), flush=True)

        def add_rich(buf=mine, it=it) -> None:  # type: ignore[no-untyped-def]
            buf.add(rich[next(it) % 512], ids)

        def add_rich_peer(buf=peer, it=it) -> None:  # type: ignore[no-untyped-def]
            buf.add(ts_rich[next(it) % 512], ids)

        t_mine, t_peer = pair(add_rich, add_rich_peer, 2000)
        print(row(f"add 8 envs + info(5 keys), policy (cap {cap:.0e})", t_mine, t_peer), flush=True)

    # -- sample and episode calls at two capacities --------------------------
    for cap in (10_000, 1_000_000):
        mine = VectorReplayBuffer(cap, N_ENV, seed=0)
        peer = TsVector(cap, N_ENV)
        n_fill = min(cap // N_ENV, 20_000)
        for i in range(n_fill):
            step = steps[i % 512]
            mine.add(step, ids)
            peer.add(ts_steps[i % 512], ids)
        idx = mine.sample_indices(256)
        t_mine, t_peer = pair(
            lambda buf=mine: buf.sample(256), lambda buf=peer: buf.sample(256), 300
        )
        print(row(f"sample(256) (cap {cap:.0e}, len {len(mine)})", t_mine, t_peer), flush=True)

        def ep_mine(buf=mine, idx=idx) -> None:  # type: ignore[no-untyped-def]
            buf.prev(idx), buf.next(idx), buf.unfinished_index()

        def ep_peer(buf=peer, idx=idx) -> None:  # type: ignore[no-untyped-def]
            buf.prev(idx), buf.next(idx), buf.unfinished_index()

        t_mine, t_peer = pair(ep_mine, ep_peer, 300)
        print(row(f"prev+next+unfinished, 256 idx (cap {cap:.0e})", t_mine, t_peer), flush=True)

    # -- episode calls over the full buffer -----------------------------------
    cap = 100_000
    mine = VectorReplayBuffer(cap, N_ENV, seed=0)
    peer = TsVector(cap, N_ENV)
    for i in range(cap // N_ENV + 10):
        mine.add(steps[i % 512], ids)
        peer.add(ts_steps[i % 512], ids)
    all_mine = mine.sample_indices(0)
    all_peer = peer.sample_indices(0)
    assert np.array_equal(all_mine, all_peer)
    assert np.array_equal(mine.prev(all_mine), peer.prev(all_peer))
    assert np.array_equal(mine.next(all_mine), peer.next(all_peer))

    def full_mine() -> None:
        mine.prev(all_mine), mine.next(all_mine), mine.unfinished_index()

    def full_peer() -> None:
        peer.prev(all_peer), peer.next(all_peer), peer.unfinished_index()

    print(
        row("prev+next+unfinished, full buffer (1e5)", *pair(full_mine, full_peer, 5)), flush=True
    )
    t_mine, t_peer = pair(lambda: mine.sample_indices(0), lambda: peer.sample_indices(0), 20)
    print(row("sample_indices(0), full buffer (1e5)", t_mine, t_peer), flush=True)


if __name__ == "__main__":
    main()
