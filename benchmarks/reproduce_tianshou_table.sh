#!/usr/bin/env bash
# Reproduce Tianshou's MuJoCo benchmark table (1M env steps per run) with tdrl, on a
# bigger machine. Tianshou's published returns at 1M steps (its paper / README):
#
#   algorithm   Hopper   HalfCheetah   Walker2d    Ant
#   SAC          3542       12139        5007      5850
#   TD3          3472       10201        3982      5116
#   PPO          2609        5784        3589      3258
#
# Usage (from the repository root, with `pip install -e '.[mujoco,logging,bench]'`):
#
#   bash benchmarks/reproduce_tianshou_table.sh OUT_DIR              # local, one run per core
#   BACKEND=ray bash benchmarks/reproduce_tianshou_table.sh OUT_DIR  # Ray (RAY_ADDRESS or local)
#   TIANSHOU=1 bash benchmarks/reproduce_tianshou_table.sh OUT_DIR   # also Tianshou 2.0.1
#
# Resumable: re-run the same command after an interruption. 4 tasks x 3 algorithms x
# SEEDS seeds (default 10) = 120 runs; on one core an off-policy run at 1M steps takes
# about a day, so give it many cores (WORKERS, default: all) or a Ray cluster.
# The report: OUT_DIR/report.md and OUT_DIR/curves.png (`tdrl report OUT_DIR` redraws them).
set -euo pipefail
OUT=${1:?usage: reproduce_tianshou_table.sh OUT_DIR}
ALGOS=${ALGOS:-sac,td3,ppo}
TASKS=${TASKS:-Hopper-v5,HalfCheetah-v5,Walker2d-v5,Ant-v5}
SEEDS=${SEEDS:-10}
STEPS=${STEPS:-1000000}
WORKERS=${WORKERS:-$(nproc)}
BACKEND=${BACKEND:-local}
LOGGER=${LOGGER:-wandb}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

tdrl bench --algos "$ALGOS" --tasks "$TASKS" --seeds "$SEEDS" --env-steps "$STEPS" \
    --out "$OUT" --logger "$LOGGER" --workers "$WORKERS" --backend "$BACKEND"
if [[ "${TIANSHOU:-0}" == 1 ]]; then
    python benchmarks/mujoco_tianshou.py --algos "$ALGOS" --tasks "$TASKS" --seeds "$SEEDS" \
        --env-steps "$STEPS" --out "$OUT" --workers "$WORKERS"
fi
tdrl report "$OUT" --last-k 10 --title "MuJoCo at ${STEPS} env steps (Tianshou's table: SAC/TD3/PPO)"
