"""Replay-buffer memory: bytes per transition against the raw arrays, and memmap storage.

1. A Hopper-v5 buffer (obs/obs_next 11 x float64, act 3 x float32, rew float64, terminated,
   truncated) of ``--hopper`` transitions (default 1M) and an Atari buffer (84x84 uint8
   frames, ``stack_num=4``, ``save_only_last_obs=True``, ``ignore_obs_next=True``: the
   DQN-family Atari presets' buffer) of ``--atari`` frames (default 100k, extrapolated to 1M
   linearly: 1M frames are ~7 GB, more than a shared machine should give a benchmark). Each
   is filled through ``VectorReplayBuffer.add`` and reports: the bytes per transition of its
   columns, of the anonymous memory its process gained (``RssAnon``), and of the raw arrays
   (what the fields themselves take: Tianshou's ``ReplayBuffer`` stores the same arrays).
2. The same Atari buffer with ``memmap_dir=`` (``--memmap`` frames, default 320k = 2.1 GiB, in
   a temporary directory on disk): ``RssAnon`` stays flat while it fills, the written pages
   count as file-backed memory (``RssFile``) that the kernel can drop.

The buffers are filled with 1000 sub-buffers of 1000-row adds (the columns and their size
do not depend on the number of sub-buffers; only the per-sub-buffer bookkeeping does, a few
dozen bytes each).

    python -m benchmarks memory
    python benchmarks/bench_memory.py --hopper 1000000 --atari 100000 --memmap 320000
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.timing import record

RINGS = 1000


def rss() -> dict[str, int]:
    """``RssAnon``, ``RssFile`` and ``RssShmem`` of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _hopper_step(n: int, rng: np.random.Generator) -> tuple[dict[str, Any], int]:
    obs = rng.standard_normal((n, 11))
    step = {
        "obs": obs,
        "act": rng.uniform(-1, 1, (n, 3)).astype(np.float32),
        "rew": rng.standard_normal(n),
        "terminated": rng.random(n) < 0.001,
        "truncated": np.zeros(n, dtype=bool),
        "obs_next": obs + 0.01,
    }
    raw = 11 * 8 * 2 + 3 * 4 + 8 + 1 + 1
    return step, raw


def _atari_step(n: int, rng: np.random.Generator) -> tuple[dict[str, Any], int]:
    step = {
        "obs": rng.integers(0, 255, (n, 4, 84, 84), dtype=np.uint8),
        "act": rng.integers(0, 6, n),
        "rew": rng.standard_normal(n),
        "terminated": rng.random(n) < 0.001,
        "truncated": np.zeros(n, dtype=bool),
    }
    raw = 84 * 84 + 8 + 8 + 1 + 1  # one frame per transition (the stack is rebuilt)
    return step, raw


def _fill(
    make: Callable[..., Any],
    size: int,
    step: dict[str, Any],
    probe: Callable[[int], None] | None = None,
) -> Any:
    buf = make(size)
    ids = np.arange(RINGS)
    for i in range(size // RINGS):
        buf.add(step, buffer_ids=ids)
        if probe is not None:
            probe(i)
    return buf


def _columns_bytes(buf: Any) -> int:
    return sum(t.numel() * t.element_size() for t in buf._storage.columns.values())


def _report(name: str, size: int, extrapolate: int, make: Callable[..., Any], step_fn: Any) -> None:
    step, raw = step_fn(RINGS, np.random.default_rng(0))  # the input, before the baseline
    gc.collect()
    before = rss()["RssAnon"]
    buf = _fill(make, size, step)
    gained = rss()["RssAnon"] - before
    cols = _columns_bytes(buf)
    per_col, per_rss = cols / size, gained / size
    line = (
        f"{name:<34} {size:>9,d} transitions   columns {per_col:7.1f} B/tr   "
        f"RssAnon {per_rss:7.1f} B/tr   raw arrays {raw:6d} B/tr   "
        f"overhead {per_col / raw - 1:+6.1%}"
    )
    print(line)
    record(name, kind="buffer", size=size, extrapolate=extrapolate, columns_bytes=cols,
           rss_anon_bytes=gained, raw_bytes_per_transition=raw)  # fmt: skip
    if extrapolate != size:
        print(
            f"{'':<34} at {extrapolate:,d}: columns {per_col * extrapolate / 2**30:6.2f} GiB, "
            f"raw {raw * extrapolate / 2**30:6.2f} GiB (extrapolated linearly)"
        )
    else:
        print(
            f"{'':<34} total: columns {cols / 2**30:6.2f} GiB, RssAnon +{gained / 2**30:6.2f} GiB"
        )
    del buf
    gc.collect()


def _memmap(size: int) -> None:
    from tdrl.data.buffer import VectorReplayBuffer

    folder = tempfile.mkdtemp(prefix="tdrl-bench-memmap-", dir=os.environ.get("TMPDIR", "/tmp"))
    samples: list[tuple[int, dict[str, int]]] = []
    n_adds = size // RINGS
    every = max(1, n_adds // 10)

    def probe(i: int) -> None:
        if (i + 1) % every == 0 or i + 1 == n_adds:
            samples.append(((i + 1) * RINGS, rss()))

    def make(n: int) -> Any:
        return VectorReplayBuffer(
            n,
            RINGS,
            stack_num=4,
            save_only_last_obs=True,
            ignore_obs_next=True,
            memmap_dir=folder,
        )

    try:
        step, _ = _atari_step(RINGS, np.random.default_rng(0))
        gc.collect()
        start = rss()
        buf = _fill(make, size, step, probe)
        on_disk = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        print(
            f"memmap Atari buffer, {size:,d} frames, {on_disk / 2**30:.2f} GiB of files in "
            f"{folder} (filesystem: {_fs_type(folder)})"
        )
        record(
            "memmap Atari buffer",
            kind="memmap",
            size=size,
            file_bytes=on_disk,
            filesystem=_fs_type(folder),
            samples=[
                {"frames": n, **{k: r[k] - start[k] for k in ("RssAnon", "RssFile")}}
                for n, r in samples
            ],
        )
        print(
            f"{'frames written':>16} {'RssAnon +MiB':>14} {'RssFile +MiB':>14} {'RssShmem MiB':>13}"
        )
        for n, r in samples:
            print(
                f"{n:>16,d} {(r['RssAnon'] - start['RssAnon']) / 2**20:>14.1f} "
                f"{(r['RssFile'] - start['RssFile']) / 2**20:>14.1f} "
                f"{r['RssShmem'] / 2**20:>13.1f}"
            )
        del buf
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fs_type(path: str) -> str:
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            mount, fs = parts[1], parts[2]
            if os.path.abspath(path).startswith(mount) and len(mount) > len(best):
                best, kind = mount, fs
    return f"{kind} at {best}"


def main(argv: list[str] | None = None) -> None:
    """Print bytes per transition for Hopper and Atari buffers and the memmap RSS curve."""
    from tdrl.data.buffer import VectorReplayBuffer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hopper", type=int, default=1_000_000)
    parser.add_argument("--atari", type=int, default=100_000)
    parser.add_argument("--memmap", type=int, default=320_000, help="0 skips it")
    args = parser.parse_args([] if argv is None else argv)
    _report(
        "Hopper-v5 (float64 obs)",
        args.hopper,
        1_000_000,
        lambda n: VectorReplayBuffer(n, RINGS),
        _hopper_step,
    )
    _report(
        "Atari (uint8, save_only_last_obs)",
        args.atari,
        1_000_000,
        lambda n: VectorReplayBuffer(
            n, RINGS, stack_num=4, save_only_last_obs=True, ignore_obs_next=True
        ),
        _atari_step,
    )
    if args.memmap:
        _memmap(args.memmap)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
