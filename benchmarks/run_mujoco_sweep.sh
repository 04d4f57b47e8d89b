#!/usr/bin/env bash
# A MuJoCo sweep of issue 15 on this CPU: tdrl and/or Tianshou 2.0.1 with the same presets,
# budgets and seeds, into one results directory that `tdrl report` turns into a table.
#
#   OUT=DIR STEPS="sac:30000 td3:30000 ppo:100000" LIBS="tdrl tianshou" \
#       bash benchmarks/run_mujoco_sweep.sh
#
# Settings (environment variables):
#   OUT     results directory (required)
#   STEPS   space-separated ALGO:ENV_STEPS budgets (default: sac:100000 td3:100000 ppo:300000)
#   TASKS   space-separated task ids (default: Hopper-v5 HalfCheetah-v5)
#   SEEDS   seed count: seeds 0..SEEDS-1 (default: 3)
#   LIBS    which libraries, in this order per row (default: tdrl tianshou). Two sweeps with
#           LIBS=tdrl and LIBS=tianshou can run at once into the same OUT, one per core.
#   FROM    start the seed loop at this count (default 1). Any number of sweeps may run into
#           one OUT at once: a run another process is running is skipped (its run.lock), so
#           a second sweep with FROM=3 takes the rows' remaining seeds in parallel.
#   LOGGER  tdrl's logger (default: wandb, offline unless an account is configured)
#   TITLE   the report's title; PYTHON the interpreter
#
# Resumable: run the same command again. Finished runs (done.json) are skipped; an
# interrupted run continues from its last epoch's checkpoint (tdrl's, and Tianshou's via
# benchmarks/mujoco_tianshou.py). The order is seed-major, so every row gets its seed 0
# first. Stop it by killing this script, then `kill -INT` the running `tdrl.cli bench` /
# mujoco_tianshou.py process: that run saves a checkpoint and exits.
set -uo pipefail
OUT=${OUT:?set OUT=results directory}
STEPS=${STEPS:-sac:100000 td3:100000 ppo:300000}
TASKS=${TASKS:-Hopper-v5 HalfCheetah-v5}
SEEDS=${SEEDS:-3}
LIBS=${LIBS:-tdrl tianshou}
LOGGER=${LOGGER:-wandb}
TITLE=${TITLE:-MuJoCo benchmark on a 2-core CPU: tdrl vs Tianshou 2.0.1}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}

for n in $(seq "${FROM:-1}" "$SEEDS"); do  # --seeds is a count: n=2 adds seed 1 (seed 0 is done by then)
    for spec in $STEPS; do
        algo=${spec%%:*}
        steps=${spec##*:}
        for task in $TASKS; do
            for lib in $LIBS; do
                if [ "$lib" = tdrl ]; then
                    $PY -m tdrl.cli bench --algos "$algo" --tasks "$task" --seeds "$n" \
                        --env-steps "$steps" --out "$OUT" --logger "$LOGGER" --workers 1 \
                        --no-progress
                else
                    $PY benchmarks/mujoco_tianshou.py --algos "$algo" --tasks "$task" \
                        --seeds "$n" --env-steps "$steps" --out "$OUT" --workers 1
                fi
            done
        done
    done
done
$PY -m tdrl.cli report "$OUT" --title "$TITLE"
