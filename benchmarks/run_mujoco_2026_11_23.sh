#!/usr/bin/env bash
# The committed MuJoCo benchmark of issue 15 on this CPU: tdrl and Tianshou 2.0.1 side by
# side, SAC and TD3 at 100k env steps, PPO at 300k, on Hopper-v5 and HalfCheetah-v5, seeds
# 0-2, one run at a time, into benchmarks/results/mujoco-2026-11-23/.
#
# Resumable: run the same command again (from the repository root). Finished runs are
# skipped; an interrupted run continues from its last epoch's checkpoint (tdrl's and, via
# benchmarks/mujoco_tianshou.py, Tianshou's). The order is seed-major and interleaves the
# libraries (seed 0 of every algorithm x task for tdrl then Tianshou, then seed 1, ...), so
# that side-by-side pairs for every row appear early:
#
#     nohup nice -n 15 bash benchmarks/run_mujoco_2026_11_23.sh > /tmp/mujoco-bench.log 2>&1 &
#
# Stop it with `kill -INT` (or -TERM) on the `tdrl.cli bench` / mujoco_tianshou.py process
# after killing this script: the running run saves a checkpoint and exits.
# LOGGER=csv skips W&B (default: wandb, offline unless an account is configured);
# OUT=... writes elsewhere; PYTHON=... picks the interpreter.
set -uo pipefail
OUT=${OUT:-benchmarks/results/mujoco-2026-11-23}
LOGGER=${LOGGER:-wandb}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}

for n in 1 2 3; do  # --seeds is a count: n=2 runs seed 1 (seed 0 is done by then)
    for spec in sac:100000 td3:100000 ppo:300000; do
        algo=${spec%%:*}
        steps=${spec##*:}
        for task in Hopper-v5 HalfCheetah-v5; do
            $PY -m tdrl.cli bench --algos "$algo" --tasks "$task" --seeds "$n" \
                --env-steps "$steps" --out "$OUT" --logger "$LOGGER" --workers 1 --no-progress
            $PY benchmarks/mujoco_tianshou.py --algos "$algo" --tasks "$task" --seeds "$n" \
                --env-steps "$steps" --out "$OUT" --workers 1
        done
    done
done
$PY -m tdrl.cli report "$OUT" --title "MuJoCo benchmark on a shared 2-core CPU: tdrl vs Tianshou 2.0.1"
