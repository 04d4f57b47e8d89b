#!/usr/bin/env bash
# The complete MuJoCo grid of issue 15 that this 2-core CPU finishes in one session: SAC and
# TD3 at 30k env steps, PPO at 100k, Hopper-v5 and HalfCheetah-v5, seeds 0-2, tdrl and
# Tianshou 2.0.1 as two sweeps at once (one core each, so both libraries see the same load),
# into benchmarks/results/mujoco-2026-11-23-short/. Resumable: run it again.
#
#     nohup nice -n 10 bash benchmarks/run_mujoco_2026_11_23_short.sh > /tmp/mujoco-short.log 2>&1 &
set -uo pipefail
here=$(dirname "$0")
export OUT=${OUT:-benchmarks/results/mujoco-2026-11-23-short}
export STEPS="sac:30000 td3:30000 ppo:100000"
export TITLE="MuJoCo benchmark on a 2-core CPU: tdrl vs Tianshou 2.0.1 (30k / 100k steps)"
mkdir -p "$OUT"
LIBS=tdrl bash "$here/run_mujoco_sweep.sh" > "$OUT/sweep-tdrl.log" 2>&1 &
LIBS=tianshou bash "$here/run_mujoco_sweep.sh" > "$OUT/sweep-tianshou.log" 2>&1 &
wait
exec ${PYTHON:-python} -m tdrl.cli report "$OUT" --title "$TITLE"
