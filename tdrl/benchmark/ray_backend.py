"""The Ray backend of a sweep: each run is a Ray task; its logs come back to ``OUT``.

A task runs on any node of the Ray instance (a local one started here, or the cluster at
``RAY_ADDRESS``, e.g. from ``ray start --head``): it unpacks what the run's directory
already holds (an interrupted run's checkpoint and logs) into a temporary directory of
its node, trains there in a child process (``python -m tdrl.benchmark.runner``, so every
run has a fresh interpreter, as with the local backend), and returns the directory
packed; the driver unpacks it into ``OUT/ALGO/TASK/seedS/``. Every node needs tdrl and
its dependencies installed (the same environment as the driver).

At most ``workers`` runs are in flight at once; a local instance gets ``workers`` CPUs.
"""

from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path
from typing import Any

from tdrl.benchmark.plan import RunSpec
from tdrl.benchmark.runner import ALREADY_DONE_EXIT, prepare_run

__all__ = ["pack_dir", "run_ray", "unpack_dir"]


def pack_dir(path: str | os.PathLike[str]) -> bytes:
    """The files under ``path`` as a gzipped tar archive (paths relative to ``path``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for item in sorted(Path(path).iterdir()):
            tar.add(item, arcname=item.name)
    return buf.getvalue()


def unpack_dir(data: bytes, path: str | os.PathLike[str]) -> None:
    """Unpack an archive of :func:`pack_dir` into ``path`` (files there are replaced).

    >>> import tempfile
    >>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> _ = (a / "test.csv").write_text("env_step\\n1\\n")
    >>> unpack_dir(pack_dir(a), b)
    >>> (b / "test.csv").read_text()
    'env_step\\n1\\n'
    """
    Path(path).mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(path, filter="data")


def _train_remotely(spec_dict: dict[str, Any], archive: bytes, keep: bool) -> tuple[int, bytes]:
    """The Ray task: train one run in a temporary directory; return (exit status, the
    run directory packed)."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tdrl-bench-") as tmp:
        spec = RunSpec.from_dict({**spec_dict, "out": tmp})
        d = spec.dir
        unpack_dir(archive, d)
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        cmd = [sys.executable, "-m", "tdrl.benchmark.runner", str(d)]
        if keep:
            cmd.append("--keep-checkpoint")
        with open(d / "stdout.log", "ab") as log:
            code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        return code, pack_dir(d)


def run_ray(
    todo: list[RunSpec],
    workers: int,
    result: Any,
    progress: Any,
    keep_checkpoints: bool = False,
    poll: float = 1.0,
) -> None:
    """Run ``todo`` as Ray tasks, ``workers`` at a time; record them in ``result`` (a
    :class:`~tdrl.benchmark.pool.SweepResult`) and move ``progress`` as they finish.

    Connects to ``RAY_ADDRESS`` when set, else starts a local instance with ``workers``
    CPUs (and stops it at the end); an instance already started in this process is used
    as it is.
    """
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError("--backend ray needs ray: pip install 'tdrl[bench]'") from exc
    started = False
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        ray.init(
            address=address or None,
            num_cpus=None if address else workers,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
        started = True
    task = ray.remote(num_cpus=1, max_retries=0)(_train_remotely)
    pending = list(todo)
    running: dict[Any, RunSpec] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                spec = pending.pop(0)
                d = prepare_run(spec)
                running[task.remote(spec.to_dict(), pack_dir(d), keep_checkpoints)] = spec
            ready, _ = ray.wait(list(running), num_returns=1, timeout=poll)
            for ref in ready:
                spec = running.pop(ref)
                try:
                    code, archive = ray.get(ref)
                except Exception as exc:  # a task that died: record it, go on
                    result.failed.append((spec, f"ray task failed: {type(exc).__name__}: {exc}"))
                    continue
                unpack_dir(archive, spec.dir)
                if code == 0 and spec.finished():
                    result.finished.append(spec)
                elif code == ALREADY_DONE_EXIT:
                    result.skipped.append(spec)
                else:
                    result.failed.append(
                        (spec, f"exit status {code}, see {spec.dir / 'stdout.log'}")
                    )
            done = len(result.skipped) + len(result.finished)
            progress.update(list(running.values()), done, len(result.failed))
            if not ready:
                time.sleep(0)
    finally:
        for ref in running:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
