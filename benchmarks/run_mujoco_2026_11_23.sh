#!/usr/bin/env bash
# The long MuJoCo sweep of issue 15 on this CPU (resumed across sessions): SAC and TD3 at
# 100k env steps, PPO at 300k, Hopper-v5 and HalfCheetah-v5, seeds 0-2, tdrl then Tianshou
# 2.0.1 per row, into benchmarks/results/mujoco-2026-11-23/. Resumable (see
# run_mujoco_sweep.sh):
#
#     nohup nice -n 15 bash benchmarks/run_mujoco_2026_11_23.sh > /tmp/mujoco-bench.log 2>&1 &
set -uo pipefail
OUT=${OUT:-benchmarks/results/mujoco-2026-11-23} \
STEPS="sac:100000 td3:100000 ppo:300000" \
TITLE="MuJoCo benchmark on a shared 2-core CPU: tdrl vs Tianshou 2.0.1 (100k / 300k steps)" \
    exec bash "$(dirname "$0")/run_mujoco_sweep.sh"
