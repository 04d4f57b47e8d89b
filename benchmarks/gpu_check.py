"""The stages of ``benchmarks/gpu_check.sh``: what the GPU path does on a real GPU.

Each stage is one process started by the shell script under its own timeout, and each
writes its rows the moment it has them, so a run cut off midway still returns what it
measured. Files, all in the output folder:

* ``env.json`` (stage ``env``): Python, torch, CUDA, the GPU, the library versions;
* ``update.csv`` (stage ``update``): the SAC Hopper-sized update (obs 11, act 3, 256x256
  actor and twin critics, batch 256) as updates/s, on the CPU eager, on the GPU eager,
  GPU ``compile()`` and GPU compile with CUDA graphs (``mode="reduce-overhead"``);
* ``e2e.csv`` (stage ``e2e``): ``tdrl`` training runs (SAC and TD3 on Hopper-v5, a
  fixed number of env steps, networks and replay storage on the device), as env steps/s;
* ``stages.csv`` (written by the shell script): each stage's status and seconds;
* ``summary.md`` (stage ``table``): the tables above as markdown.

    python -m benchmarks.gpu_check env OUT
    python -m benchmarks.gpu_check update OUT [--device cuda] [--seconds 3]
    python -m benchmarks.gpu_check e2e OUT --algo sac --mode eager [--steps 3000]
    python -m benchmarks.gpu_check table OUT

``--device cpu`` runs the GPU rows on the CPU instead (how the CPU tests exercise the
code paths; such rows are labelled with the device they ran on).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

UPDATE_FIELDS = ("mode", "device", "updates", "seconds", "updates_per_s", "compile_s")
E2E_FIELDS = (
    "algo",
    "task",
    "mode",
    "device",
    "env_steps",
    "warmup_steps",
    "gradient_steps",
    "train_s",
    "env_steps_per_s",
    "updates_per_s",
    "compile_s",
)
STAGE_FIELDS = ("stage", "status", "seconds", "note")
MODES = {"eager": None, "compile": "default", "cudagraphs": "reduce-overhead"}
"""Update modes: ``compile``'s ``mode`` (``None``: no compile)."""

ANCHOR = {"sac": 725.0, "td3": 936.0}
"""LeanRL's reported env steps/s with compile and CUDA graphs on an H100 (the anchor)."""


def append_row(path: Path, fields: Sequence[str], row: dict[str, Any]) -> None:
    """Append ``row`` to the CSV at ``path`` (header first if new), flushed at once.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.csv"
    >>> append_row(p, ("a", "b"), {"a": 1, "b": 2.5}); append_row(p, ("a", "b"), {"a": 2})
    >>> p.read_text().splitlines()
    ['a,b', '1,2.5', '2,']
    """
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in fields})
        f.flush()


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the CSV at ``path`` (none if it is missing)."""
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------- env
def _version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # not installed, or installed without metadata
        return "missing"


def stage_env(out: Path) -> None:
    """Write ``env.json``: interpreter, torch and CUDA, the GPU, the library versions."""
    import torch

    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": os.environ.get("TDRL_COMMIT", "unknown"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            gpu=props.name,
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
            multiprocessors=props.multi_processor_count,
            capability=f"{props.major}.{props.minor}",
            cudnn=torch.backends.cudnn.version(),
        )
    for name in ("torchrl", "tensordict", "gymnasium", "mujoco", "numpy", "triton"):
        info[name] = _version(name)
    try:
        import torchrl._torchrl  # noqa: F401

        info["torchrl_extension"] = "loads"
    except Exception as e:  # the ABI-bound extension (tdrl does not need it)
        info["torchrl_extension"] = f"does not load: {type(e).__name__}"
    (out / "env.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info, indent=2), flush=True)


# ---------------------------------------------------------------------------- update
def _sac(device: str) -> Any:
    """SAC as tdrl's Hopper-v5 preset builds it (256x256 actor and twin critics), on
    ``device``."""
    import gymnasium as gym
    import torch

    import tdrl

    torch.manual_seed(0)
    return tdrl.make_algorithm(
        "sac",
        "Hopper-v5",
        observation_space=gym.spaces.Box(-1.0, 1.0, (11,)),
        action_space=gym.spaces.Box(-1.0, 1.0, (3,)),
        device=device,
    )


def time_updates(
    update: Callable[[], Any], sync: Callable[[], None], seconds: float
) -> tuple[int, float]:
    """Run ``update`` for about ``seconds`` (whole chunks of 10, synchronized before
    the clock is read); return the number of updates and the seconds they took.

    >>> n, s = time_updates(lambda: None, lambda: None, 0.01)
    >>> n >= 10 and s > 0
    True
    """
    sync()
    start = time.perf_counter()
    n = 0
    while True:
        for _ in range(10):
            update()
        n += 10
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n, elapsed


def stage_update(out: Path, device: str, seconds: float, modes: Sequence[str]) -> None:
    """Time the SAC Hopper-sized update in each of ``modes`` (``cpu-eager`` and the
    :data:`MODES` on ``device``), a row of ``update.csv`` per mode as soon as it is timed."""
    import torch

    torch.set_num_threads(1)
    failed = []
    for name in modes:
        dev, mode = ("cpu", "eager") if name == "cpu-eager" else (device, name)
        try:
            row = _time_update(dev, mode, seconds)
        except Exception:  # one mode's failure leaves the others to be measured
            traceback.print_exc()
            failed.append(name)
            row = {"mode": mode, "device": dev, "updates": "failed"}
        append_row(out / "update.csv", UPDATE_FIELDS, row)
        print(row, flush=True)
    if failed:
        raise SystemExit(f"update: failed in mode(s) {', '.join(failed)}")


def _time_update(dev: str, mode: str, seconds: float) -> dict[str, Any]:
    import gymnasium as gym
    import torch

    from tdrl.algorithm.compile import synthetic_buffer, warmup

    algo = _sac(dev)
    if MODES[mode] is not None:
        algo.compile(mode=None if MODES[mode] == "default" else MODES[mode])
    buf = synthetic_buffer(
        gym.spaces.Box(-1, 1, (11,)), gym.spaces.Box(-1, 1, (3,)), 8, 1000, device=dev
    )
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    compile_s = warmup(algo, buf, 256) if MODES[mode] is not None else 0.0
    for _ in range(20):  # optimizer state, CUDA graph recording, caches
        algo.update(buf, 256)
    n, secs = time_updates(lambda: algo.update(buf, 256), sync, seconds)
    return {
        "mode": mode,
        "device": dev,
        "updates": n,
        "seconds": round(secs, 3),
        "updates_per_s": round(n / secs, 1),
        "compile_s": round(compile_s, 1),
    }


# ------------------------------------------------------------------------------- e2e
def stage_e2e(
    out: Path, algo: str, task: str, mode: str, device: str, steps: int, warmup_steps: int
) -> None:
    """Train ``algo`` on ``task`` for ``steps`` env steps (``warmup_steps`` of them
    random) with networks and replay storage on ``device``; a row of ``e2e.csv``."""
    import tempfile

    from tdrl.experiment import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo,
        task,
        seed=0,
        epochs=1,
        step_per_epoch=steps,
        test_num=1,
        device=device,
        buffer_device=device,
        compile=MODES[mode],
        log_dir=tempfile.mkdtemp(prefix="gpu_check_"),
        show_progress=False,
        plot=False,
        overrides={"warmup_steps": warmup_steps},
    )
    start = time.perf_counter()
    result, _ = run_experiment(cfg)
    total = time.perf_counter() - start
    train_s = result.timing.train_time
    row = {
        "algo": algo,
        "task": task,
        "mode": mode,
        "device": device,
        "env_steps": result.env_step,
        "warmup_steps": warmup_steps,
        "gradient_steps": result.gradient_step,
        "train_s": round(train_s, 2),
        "env_steps_per_s": round(result.env_step_speed, 1),
        "updates_per_s": round(result.update_speed, 1),
        "compile_s": round(max(0.0, total - result.timing.total_time), 1),
    }
    if result.gradient_step == 0:
        raise SystemExit(f"e2e {algo} {mode}: trained 0 gradient steps in {result.env_step}")
    append_row(out / "e2e.csv", E2E_FIELDS, row)
    print(row, flush=True)


# ----------------------------------------------------------------------------- table
def _md(rows: list[dict[str, str]], cols: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r.get(c, "") for c in cols) + " |" for r in rows]
    return lines


def stage_table(out: Path) -> str:
    """Write ``summary.md`` from what the other stages wrote; return it."""
    lines = ["# GPU check", ""]
    env_file = out / "env.json"
    if env_file.exists():
        env = json.loads(env_file.read_text())
        lines.append(
            f"{env.get('gpu', 'no GPU')}; torch {env.get('torch')} (CUDA "
            f"{env.get('cuda_build')}); Python {env.get('python')}; torchrl "
            f"{env.get('torchrl')}, tensordict {env.get('tensordict')}, gymnasium "
            f"{env.get('gymnasium')}, mujoco {env.get('mujoco')}; commit {env.get('commit')}."
        )
        lines.append("")
    for title, name, cols in (
        ("Stages", "stages.csv", STAGE_FIELDS),
        ("SAC update, Hopper-sized, batch 256", "update.csv", UPDATE_FIELDS),
        ("End to end (tdrl train, networks and replay on the device)", "e2e.csv", E2E_FIELDS),
    ):
        rows = read_rows(out / name)
        lines += [f"## {title}", ""]
        lines += _md(rows, cols) if rows else ["(no rows: the stage did not finish)"]
        lines.append("")
    e2e = [r for r in read_rows(out / "e2e.csv") if r["mode"] == "cudagraphs"]
    if e2e:
        lines.append(
            "Anchor: LeanRL reports about "
            + ", ".join(f"{v:.0f} ({k.upper()})" for k, v in ANCHOR.items())
            + " env steps/s with compile and CUDA graphs on an H100."
        )
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text


# ------------------------------------------------------------------------------ main
def main(argv: Sequence[str] | None = None) -> int:
    """Run one stage (see the module docstring); return the exit status."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check")
    p.add_argument("stage", choices=("env", "update", "e2e", "table"))
    p.add_argument("out", type=Path)
    p.add_argument("--device", default="cuda")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--modes", default="cpu-eager,eager,compile,cudagraphs")
    p.add_argument("--algo", default="sac")
    p.add_argument("--task", default="Hopper-v5")
    p.add_argument("--mode", default="eager", choices=tuple(MODES))
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--warmup-steps", type=int, default=500)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage == "env":
        stage_env(args.out)
    elif args.stage == "update":
        modes = [m for m in args.modes.split(",") if m]
        bad = [m for m in modes if m != "cpu-eager" and m not in MODES]
        if bad:
            p.error(f"--modes: expected cpu-eager or one of {sorted(MODES)}, got {bad[0]!r}")
        stage_update(args.out, args.device, args.seconds, modes)
    elif args.stage == "e2e":
        stage_e2e(
            args.out, args.algo, args.task, args.mode, args.device, args.steps, args.warmup_steps
        )
    else:
        print(stage_table(args.out), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
