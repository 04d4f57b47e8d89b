#!/usr/bin/env bash
# The long-run lane (MuJoCo at 1M env steps): start it, or see where it stands.
#
#   bash benchmarks/long/run.sh           # start it in the background (or say it runs),
#                                         # then print what is left
#   bash benchmarks/long/run.sh status    # only print what is left
#   bash benchmarks/long/run.sh stop      # stop it: each run saves a checkpoint first
#   bash benchmarks/long/run.sh commit    # commit the runs' results so far (no checkpoints),
#                                         # with the report and the README table rendered
#
# Start it at the beginning of every stretch of work on the project: it continues where it
# stopped, at nice 19 with one torch thread per run, and pauses while a timing benchmark
# runs. Results: benchmarks/results/mujoco-1m/. Log: benchmarks/long/lane.log.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
PY=${PYTHON:-python}
LANE=benchmarks/long/lane.py

case "${1:-start}" in
    start)
        if ! "$PY" -c "import tdrl" 2>/dev/null; then
            echo "run.sh: expected a Python with tdrl installed (set PYTHON), got '$PY'" >&2
            exit 2
        fi
        if [ -f benchmarks/long/lane.pid ] && kill -0 "$(cat benchmarks/long/lane.pid)" 2>/dev/null; then
            echo "the lane is already running (pid $(cat benchmarks/long/lane.pid))"
        else
            nohup setsid nice -n 19 "$PY" "$LANE" run >> benchmarks/long/lane.log 2>&1 < /dev/null &
            sleep 2
            echo "started the lane (pid $(cat benchmarks/long/lane.pid 2>/dev/null || echo '?'))"
        fi
        "$PY" "$LANE" status ;;
    status) "$PY" "$LANE" status ;;
    stop)
        if [ -f benchmarks/long/lane.pid ]; then
            kill -TERM "$(cat benchmarks/long/lane.pid)" 2>/dev/null && echo "stopping the lane"
        else
            echo "the lane is not running"
        fi ;;
    commit)  # the report and the README's generated table first, so they match the results;
        # the lane is paused meanwhile (its pause lock), so no run writes in between
        touch benchmarks/long/pause.lock
        PY="$PY" flock -x benchmarks/long/pause.lock bash -c '
            sleep 3
            "$PY" -m tdrl.cli report benchmarks/results/mujoco-1m \
                --title "MuJoCo at 1M env steps (the long-run lane)" >/dev/null
            "$PY" scripts/render_tables.py >/dev/null
            git add benchmarks/results/mujoco-1m README.md \
                && git commit -q -m "mujoco-1m: lane results $(date +%F)" \
                    -- benchmarks/results/mujoco-1m README.md \
                && echo "committed" || echo "nothing to commit"' ;;
    *) echo "run.sh: expected start, status, stop or commit, got '$1'" >&2; exit 2 ;;
esac
