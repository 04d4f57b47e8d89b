#!/usr/bin/env bash
# Rerun the whole seed sweep behind the README's algorithm table on the current code.
#
#   bash sweeps/rerun.sh            # resumable: rerun it after an interruption
#   WORKERS=2 bash sweeps/rerun.sh  # runs at a time (default 1)
#
# Records go to sweeps/results-rerun.jsonl (each carries the commit it was measured at);
# once every row of scripts/render_tables.py's ALGORITHM_ROWS has its five seeds, the file
# replaces sweeps/results.jsonl and the README table is rendered again. The offline rows
# learn from `tdrl gather sac Pendulum-v1` and `tdrl gather dqn CartPole-v1` data (seed 0,
# gathered once into sweeps/data/, which git ignores); their thresholds are the weaker
# offline ones listed below.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
OUT=sweeps/results-rerun.jsonl
W=${WORKERS:-1}
sweep() { "$PY" -m tdrl.cli bench --to-threshold "$@" --out "$OUT" --workers "$W"; }

mkdir -p sweeps/data
[ -f sweeps/data/sac-Pendulum-v1.hdf5 ] \
    || "$PY" -m tdrl.cli gather sac Pendulum-v1 --seed 0 --no-progress --out sweeps/data/sac-Pendulum-v1.hdf5
[ -f sweeps/data/dqn-CartPole-v1.hdf5 ] \
    || "$PY" -m tdrl.cli gather dqn CartPole-v1 --seed 0 --no-progress --out sweeps/data/dqn-CartPole-v1.hdf5
PEND=sweeps/data/sac-Pendulum-v1.hdf5
CART=sweeps/data/dqn-CartPole-v1.hdf5

# online presets, to the task's own threshold
sweep dqn:CartPole-v1 c51:CartPole-v1 qrdqn:CartPole-v1 iqn:CartPole-v1 fqf:CartPole-v1 \
    rainbow:CartPole-v1 bdqn:Pendulum-v1 drqn:CartPole-v1 discrete_sac:CartPole-v1 \
    reinforce:CartPole-v1 a2c:CartPole-v1 ppo:CartPole-v1 ppo:Pendulum-v1 npg:Pendulum-v1 \
    trpo:Pendulum-v1 ddpg:Pendulum-v1 td3:Pendulum-v1 sac:Pendulum-v1 redq:Pendulum-v1 \
    dqn+icm:CartPole-v1 ppo+icm:CartPole-v1 psrl:tdrl/NChain-v0
# learning from data, to the offline thresholds
sweep gail:Pendulum-v1 --dataset "$PEND" --threshold -1100
sweep bc:Pendulum-v1 bcq:Pendulum-v1 cql:Pendulum-v1 --dataset "$PEND" --threshold -400
sweep td3_bc:Pendulum-v1 iql:Pendulum-v1 --dataset "$PEND" --threshold -300
sweep bc:CartPole-v1 discrete_bcq:CartPole-v1 --dataset "$CART" --threshold 185
sweep discrete_crr:CartPole-v1 --dataset "$CART" --threshold 180
sweep discrete_cql:CartPole-v1 --dataset "$CART" --threshold 170

"$PY" - "$OUT" <<'PYEOF'
import json, sys
sys.path.insert(0, "scripts")
from render_tables import ALGORITHM_ROWS
recs = [json.loads(line) for line in open(sys.argv[1])]
missing = [(a, t) for a, t, _ in ALGORITHM_ROWS
           if len({r["seed"] for r in recs if r["algo"] == a and r["task"] == t}) < 5]
if missing:
    sys.exit(f"rerun.sh: rows without five seeds: {missing}")
PYEOF
mv "$OUT" sweeps/results.jsonl
"$PY" scripts/render_tables.py
echo "rerun.sh: sweeps/results.jsonl replaced; README table rendered"
