"""The long-run lane: MuJoCo at 1M env steps, in the background, resumable, never in the way.

Runs ``tdrl bench`` over :data:`ITEMS` in order (cheapest evidence first) into
``benchmarks/results/mujoco-1m/``, at the lowest CPU priority (``run.sh`` starts it under
``nice -n 19``; every run has one torch thread). One ``tdrl bench`` at a time, a second
only while a core is idle (the 1-minute load average leaves one free). Every run
checkpoints each epoch, so a stopped lane continues where it stopped: start it again.

A timing benchmark pauses it: while any process holds :data:`PAUSE_LOCK` (``flock``,
exclusive; :func:`benchmarks.timing.lane_paused`), the lane stops its runs with SIGSTOP and
continues them with SIGCONT afterwards, so no speed figure is measured beside it. (A
paused run's wall time includes the pause.)

    python benchmarks/long/lane.py run       # the supervisor (run.sh starts it)
    python benchmarks/long/lane.py status    # what is left, in runs and core-hours
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "mujoco-1m"
HERE = ROOT / "benchmarks" / "long"
PAUSE_LOCK = HERE / "pause.lock"
PID_FILE = HERE / "lane.pid"
ENV_STEPS = 1_000_000
TASKS4 = ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")

# default core-hours per 1M-step run, until the lane has measured its own
CORE_HOURS = {"ppo": 0.25, "trpo": 0.25, "sac": 2.5, "td3": 2.0}


@dataclass(frozen=True)
class Unit:
    """One ``tdrl bench`` invocation: an algorithm on a task, seeds ``0..seeds-1``."""

    item: int
    algo: str
    task: str
    seeds: int

    def run_dir(self, seed: int) -> Path:
        """Where ``tdrl bench`` keeps seed ``seed``'s run."""
        return OUT / self.algo / self.task / f"seed{seed}"

    def command(self) -> list[str]:
        """The ``tdrl bench`` command line of this unit."""
        return [
            sys.executable, "-m", "tdrl.cli", "bench", "--algos", self.algo,
            "--tasks", self.task, "--seeds", str(self.seeds), "--env-steps", str(ENV_STEPS),
            "--out", str(OUT), "--logger", "csv", "--workers", "1", "--no-progress",
        ]  # fmt: skip


ITEMS: tuple[Unit, ...] = (
    *(Unit(1, "ppo", t, 3) for t in TASKS4),
    # the v4 tasks keep the v3 physics and reward that Tianshou's table was measured on
    # (v5: both Walker2d feet at friction 1.9; Ant's contact cost always on and its
    # healthy reward only while healthy): one seed each tells an env difference from a bug
    *(Unit(1, "ppo", t, 1) for t in ("Walker2d-v4", "Ant-v4")),
    *(Unit(2, "trpo", t, 3) for t in TASKS4),
    Unit(2, "trpo", "Ant-v4", 1),  # as PPO's: Ant-v5 changed the task (see above)
    *(Unit(3, "sac", t, 1) for t in ("Hopper-v5", "HalfCheetah-v5")),
    Unit(4, "td3", "Hopper-v5", 1),
    *(Unit(5, "sac", t, 1) for t in ("Walker2d-v5", "Ant-v5")),
    *(Unit(5, "td3", t, 1) for t in ("HalfCheetah-v5", "Walker2d-v5", "Ant-v5")),
    *(Unit(5, a, t, 3) for a in ("sac", "td3") for t in TASKS4),
)
"""The lane's order: (1) PPO, 4 tasks x seeds 0-2, then Walker2d-v4 and Ant-v4 seed 0;
(2) TRPO, 4 tasks x seeds 0-2, then Ant-v4 seed 0; (3) SAC Hopper and
HalfCheetah, seed 0; (4) TD3 Hopper, seed 0; (5) the other SAC/TD3 tasks, then seeds 1-2."""


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_state(unit: Unit, seed: int) -> tuple[bool, int]:
    """(finished, env steps done) of one run of ``unit``."""
    d = unit.run_dir(seed)
    done = _read(d / "done.json")
    if done is not None:
        return True, int(done.get("env_step", ENV_STEPS))
    progress = _read(d / "progress.json") or {}
    return False, int(progress.get("env_step", 0))


def unit_done(unit: Unit) -> bool:
    """Whether every seed of ``unit`` has finished."""
    return all(run_state(unit, s)[0] for s in range(unit.seeds))


def core_hours_per_run(algo: str) -> float:
    """Core-hours of one 1M-step run of ``algo``: measured by finished runs, else a guess."""
    walls = []
    for d in OUT.glob(f"{algo}/*/seed*"):
        done = _read(d / "done.json")
        if done and done.get("env_step"):
            walls.append(float(done["wall_s"]) / 3600 * ENV_STEPS / float(done["env_step"]))
    return sum(walls) / len(walls) if walls else CORE_HOURS[algo]


def status() -> str:
    """What is done, running and left, with an estimate of the core-hours remaining."""
    lines, left_h = [], 0.0
    seen: set[tuple[str, str, int]] = set()
    for unit in ITEMS:
        cells = []
        for seed in range(unit.seeds):
            if (unit.algo, unit.task, seed) in seen:
                continue
            seen.add((unit.algo, unit.task, seed))
            finished, steps = run_state(unit, seed)
            cells.append("done" if finished else f"{steps / ENV_STEPS:.0%}")
            if not finished:
                left_h += core_hours_per_run(unit.algo) * (1 - steps / ENV_STEPS)
        if cells:
            lines.append(f"  item {unit.item}: {unit.algo:<4} {unit.task:<15} {' '.join(cells)}")
    alive = _lane_pid() is not None
    paused = alive and _pause_held()
    head = "running" + (" (paused by a timing benchmark)" if paused else "") if alive else "stopped"
    return "\n".join([f"long-run lane: {head}; about {left_h:.1f} core-hours left", *lines])


def _pause_held() -> bool:
    """Whether a timing benchmark holds :data:`PAUSE_LOCK`."""
    PAUSE_LOCK.touch(exist_ok=True)
    with PAUSE_LOCK.open() as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def _lane_pid() -> int | None:
    try:
        pid = int(PID_FILE.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (read from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _signal_tree(procs: list[subprocess.Popen], sig: int) -> None:
    for proc in procs:
        for pid in _descendants(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def _core_idle() -> bool:
    """Whether a core is idle: the 1-minute load average leaves one free."""
    return os.getloadavg()[0] < (os.cpu_count() or 1) - 1


def _log(message: str) -> None:
    print(f"{time.strftime('%F %T')} {message}", flush=True)


def supervise(poll: float = 2.0) -> int:
    """Run the lane until every item is done (or a signal stops it)."""
    HERE.mkdir(parents=True, exist_ok=True)
    PID_FILE.write_text(str(os.getpid()))
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", WANDB_MODE="offline")
    running: dict[Unit, subprocess.Popen] = {}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    paused, last_start = False, 0.0
    try:
        while not stopping:
            for unit, proc in list(running.items()):
                if proc.poll() is not None:
                    del running[unit]
                    _log(f"{unit.algo} {unit.task}: exit {proc.returncode}")
            held = _pause_held()
            if held != paused:
                _signal_tree(list(running.values()), signal.SIGSTOP if held else signal.SIGCONT)
                paused = held
                _log("paused" if held else "continued")
            todo = [u for u in ITEMS if u not in running and not unit_done(u)]
            if not todo and not running:
                _log("every item is done")
                return 0
            second = len(running) < 2 and _core_idle() and time.time() - last_start > 120
            room = not running or second
            if todo and room and not paused:
                unit = todo[0]
                log = (OUT / "lane-runs.log").open("a")
                running[unit] = subprocess.Popen(unit.command(), cwd=ROOT, stdout=log, stderr=log)
                last_start = time.time()
                _log(f"started item {unit.item}: {unit.algo} {unit.task}")
            time.sleep(poll)
    finally:
        _signal_tree(list(running.values()), signal.SIGCONT)
        for proc in running.values():
            proc.send_signal(signal.SIGINT)  # the run saves a checkpoint and exits
        for proc in running.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        PID_FILE.unlink(missing_ok=True)
    return 0


def main(argv: list[str]) -> int:
    """``run`` or ``status``."""
    if argv[:1] == ["run"]:
        if _lane_pid() is not None:
            print(f"the lane is already running (pid {_lane_pid()})")
            return 0
        OUT.mkdir(parents=True, exist_ok=True)
        return supervise()
    if argv[:1] in (["status"], []):
        print(status())
        return 0
    print(f"lane.py: expected 'run' or 'status', got {argv[0]!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
