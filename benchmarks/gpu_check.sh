#!/usr/bin/env bash
# The GPU check: one prepared command that measures tdrl's GPU path on one GPU in under
# five minutes, writing each stage's result the moment the stage ends.
#
#   bash benchmarks/gpu_check.sh --prepare [DIR]     # here: download the cp312 wheels
#   bash benchmarks/gpu_check.sh [--out DIR] [--wheels DIR] [--budget S] [--steps N]
#                                [--stages tests,update,e2e] [--device cuda|cpu]
#                                                     # on the GPU machine
#
# Stages, each under its own timeout and all inside --budget seconds (default 280):
#   install  the wheels of --wheels (default .whl/ if present; "none": install nothing)
#            into a private folder (the GPU machine has torch but not torchrl,
#            tensordict, gymnasium or mujoco);
#   env      python, torch, CUDA and GPU, library versions        -> env.json
#   tests    pytest tests/algorithm/test_cuda.py                  -> pytest.log
#   update   SAC Hopper-sized update: CPU eager, GPU eager, GPU compile with CUDA graphs,
#            GPU compile, as updates/s                             -> update.csv
#   e2e      SAC and TD3 on Hopper-v5 for --steps env steps, networks and replay on the
#            device, eager and compiled with CUDA graphs, env steps/s -> e2e.csv
#   table    the tables above                                     -> summary.md
# plus stages.csv (status and seconds per stage) and log.txt (everything printed): at
# most 8 files, in --out (default $OUT, else benchmarks/results/gpu-DATE).
#
# Without a CUDA device the GPU stages are skipped (status "skipped" in stages.csv; the
# exit status is 0 and the last line says SKIPPED). --device cpu runs them on the CPU
# instead, to test the script. A usage error exits 2 with one line. Safe to rerun: the
# output folder's files are replaced.
set -u -o pipefail

die() { echo "gpu_check.sh: $*" >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
out=${OUT:-}
wheels=""
budget=280
steps=2000
stages=tests,update,e2e
device=cuda
prepare=""

while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || die "--out: expected a folder, got nothing"; out=$2; shift 2 ;;
        --wheels) [ $# -ge 2 ] || die "--wheels: expected a folder of .whl files, got nothing"
            wheels=$2; shift 2 ;;
        --budget) [ $# -ge 2 ] && is_uint "$2" \
            || die "--budget: expected a positive number of seconds, got '${2:-}'"
            budget=$2; shift 2 ;;
        --steps) [ $# -ge 2 ] && is_uint "$2" \
            || die "--steps: expected a positive number of env steps, got '${2:-}'"
            steps=$2; shift 2 ;;
        --stages) [[ "${2:-}" =~ ^(tests|update|e2e)(,(tests|update|e2e))*$ ]] \
            || die "--stages: expected a comma-separated list of tests, update, e2e, got '${2:-}'"
            stages=$2; shift 2 ;;
        --device) case "${2:-}" in cuda|cpu) device=$2 ;;
            *) die "--device: expected cuda or cpu, got '${2:-}'" ;; esac; shift 2 ;;
        --prepare) prepare=${2:-$REPO/.whl}; [ $# -ge 2 ] && shift; shift ;;
        -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "expected one of --out, --wheels, --budget, --steps, --stages, --device, --prepare, got '$1'" ;;
    esac
done

# ------------------------------------------------------------------ --prepare (here)
if [ -n "$prepare" ]; then
    mkdir -p "$prepare" || die "--prepare: expected a folder that can be created, got '$prepare'"
    # the versions this checkout's environment runs, as wheels for the GPU machine's 3.12
    pins=$("$PYTHON" - <<'EOF'
from importlib.metadata import version
names = ["torchrl", "tensordict", "gymnasium", "farama-notifications", "mujoco",
         "mujoco-core", "mujoco-studio", "glfw", "pyopengl", "websockets", "orjson",
         "pyvers", "hoptorch", "importlib_metadata"]
pins = []
for n in names:
    try:
        pins.append(f"{n}=={version(n)}")
    except Exception:
        pass
print(" ".join(pins))
EOF
)
    for pin in $pins; do
        "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
            --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
            --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
            -d "$prepare" "$pin" 2>&1 | grep -v "^WARNING: Location" || true
    done
    du -sh "$prepare"
    exit 0
fi

# ------------------------------------------------------------------ the check (there)
[ -n "$out" ] || out=$REPO/benchmarks/results/gpu-$(date +%F)
if [ -z "$wheels" ] && ls "$REPO"/.whl/*.whl >/dev/null 2>&1; then wheels=$REPO/.whl; fi
[ "$wheels" = none ] && wheels=""
if [ -n "$wheels" ]; then
    ls "$wheels"/*.whl >/dev/null 2>&1 \
        || die "--wheels: expected a folder of .whl files, got '$wheels' (none there)"
fi
mkdir -p "$out" 2>/dev/null || die "--out: expected a folder that can be created, got '$out'"
rm -f "$out"/{env.json,stages.csv,update.csv,e2e.csv,pytest.log,summary.md,log.txt}
exec > >(tee -a "$out/log.txt") 2>&1

deadline=$(( $(date +%s) + budget ))
echo "stage,status,seconds,note" > "$out/stages.csv"
record() { echo "$1,$2,$3,\"$4\"" >> "$out/stages.csv"; echo "== $1: $2 ($3 s) $4"; }

# run_stage NAME TIMEOUT CMD...: run CMD under min(TIMEOUT, what the budget has left)
run_stage() {
    local name=$1 limit=$2; shift 2
    local left=$(( deadline - $(date +%s) - 10 ))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 5 ]; then record "$name" "not run" 0 "budget spent"; return 1; fi
    echo "== $name (at most $limit s): $*"
    local t0=$SECONDS rc
    timeout --kill-after=5 "$limit" "$@"; rc=$?
    local secs=$(( SECONDS - t0 ))
    case $rc in
        0) record "$name" ok "$secs" "" ;;
        124|137) record "$name" timeout "$secs" "cut at $limit s; rows written before stay" ;;
        *) record "$name" failed "$secs" "exit $rc" ;;
    esac
    return $rc
}

export PYTHONUNBUFFERED=1
if [ -n "$wheels" ]; then
    site=${TMPDIR:-/tmp}/tdrl_gpu_check_site
    run_stage install 90 "$PYTHON" -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
    export PYTHONPATH=$REPO:$site${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
fi
cd "$REPO" || exit 1
CHECK=("$PYTHON" -m benchmarks.gpu_check)

run_stage env 60 "${CHECK[@]}" env "$out"
if [ "$device" = cuda ] && ! "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    for s in tests update e2e; do record "$s" skipped 0 "no CUDA device"; done
    "${CHECK[@]}" table "$out" >/dev/null
    echo "gpu_check: SKIPPED: no CUDA device here (results in $out)"
    exit 0
fi

wants() { [[ ",$stages," == *",$1,"* ]]; }
wants tests && run_stage tests 90 "$PYTHON" -m pytest -q -p no:cacheprovider -o addopts="" \
    tests/algorithm/test_cuda.py 2>&1 | tee "$out/pytest.log"
"${CHECK[@]}" table "$out" >/dev/null
wants update && run_stage update 100 "${CHECK[@]}" update "$out" --device "$device" \
    --modes cpu-eager,eager,cudagraphs,compile
"${CHECK[@]}" table "$out" >/dev/null
for mode in eager cudagraphs; do
    wants e2e || break
    for algo in sac td3; do
        limit=60; [ "$mode" = eager ] || limit=75
        run_stage "e2e-$algo-$mode" "$limit" "${CHECK[@]}" e2e "$out" --algo "$algo" --mode "$mode" \
            --device "$device" --steps "$steps"
        "${CHECK[@]}" table "$out" >/dev/null
    done
done
"${CHECK[@]}" table "$out"
failed=$(grep -c ",\(failed\|timeout\|not run\)," "$out/stages.csv")
echo "gpu_check: done: $failed stage(s) failed, timed out or not run (results in $out)"
[ "$failed" -eq 0 ]
