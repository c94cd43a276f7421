#!/usr/bin/env bash
# Issue 31, point 4 (trace scale) on a second machine, after helper engine6's changes (the
# counted choosing walk of SRTF/Tiresias/LAS, SAF's packing): every slow fixed-GPU scheduler on
# all of Philly (target <= 60 s CPU each) and full-Philly FIFO's jobs/s (>= 20,000), with
# benchmarks/trace_scale.py (a fresh process per run, CPU seconds of the simulation alone);
# everything in $OUT/engine6.tar.gz.
#
#   export PYTHONPATH=$PWD/src; OUT=/tmp/e6 BUDGET_S=200 bash benchmarks/device/engine6.sh
#   export PYTHONPATH=$PWD/src; OUT=/tmp/e6 BUDGET_S=30 bash benchmarks/device/engine6.sh  # rehearsal
#
# BUDGET_S (s, default 200): the whole script's wall time. Two lanes run at once, each pinned to
# one of the cores this process may use (so at most 2 cores; one lane when only one is allowed);
# each run's CPU limit is what is left of the budget less 20 s, capped at 90 s, and its wall
# limit what is left. The Philly trace is packaged in the repository
# (src/dlsched/data/philly_jobs.csv.gz): nothing outside the checkout is read. LANE_A / LANE_B
# (space-separated WORKLOAD@SCHEDULER) replace a lane's cases, e.g. for a rehearsal on a busy box:
#   LANE_A="philly:b436b2@fifo" LANE_B="philly:b436b2@sjf" OUT=/tmp/e6 BUDGET_S=60 bash ...
set -u
OUT=${OUT:-/tmp/engine6}
BUDGET_S=${BUDGET_S:-200}
PY=${PY:-python3}
LOGS=$(mktemp -d /tmp/engine6_logs.XXXX)
START=$SECONDS
mkdir -p "$OUT"
export PYTHONPATH="${PYTHONPATH:-$PWD/src}"
export PYTHONUNBUFFERED=1
mapfile -t CORES < <($PY -c "import os; print(*sorted(os.sched_getaffinity(0))[:2], sep='\n')")
{
    date -u
    git log -1 --oneline 2>/dev/null
    echo "BUDGET_S=$BUDGET_S python=$($PY -V 2>&1) nproc=$(nproc) lanes on cores: ${CORES[*]}"
    cat /proc/loadavg
    lscpu 2>/dev/null | grep -E "Model name|^CPU\(s\)|MHz"
    $PY -c "import dlsched, numpy; print(dlsched.__file__, numpy.__version__)"
} >"$LOGS/machine.txt" 2>&1
cat "$LOGS/machine.txt"

lane() {  # lane CORE NAME WORKLOAD:SCHEDULER...: run each case in turn within the budget
    local core=$1 name=$2
    shift 2
    local case left limit
    for case in "$@"; do
        left=$((BUDGET_S - (SECONDS - START) - 5))
        limit=$((left - 20 < 90 ? left - 20 : 90))  # 20 s: start-up and reading the trace
        if [ "$limit" -lt 3 ]; then
            echo "${case}: skipped (${left} s left)" >>"$LOGS/$name.log"
            continue
        fi
        timeout "$left" taskset -c "$core" $PY benchmarks/trace_scale.py \
            --workloads "${case%@*}" --schedulers "${case##*@}" --limit "$limit" --json \
            >>"$LOGS/$name.jsonl" 2>>"$LOGS/$name.log" ||
            echo "${case}: exit $?" >>"$LOGS/$name.log"
    done
}

# case = WORKLOAD@SCHEDULER; most wanted first in each lane
A=("philly@srtf" "philly@fifo" "philly@saf")
B=("philly@tiresias" "philly@kubeflow-dynamic" "philly:6214e9@srtf")
[ -n "${LANE_A:-}" ] && read -r -a A <<<"$LANE_A"
[ -n "${LANE_B:-}" ] && read -r -a B <<<"$LANE_B"
if [ "${#CORES[@]}" -ge 2 ]; then
    lane "${CORES[0]}" lane_a "${A[@]}" &
    lane "${CORES[1]}" lane_b "${B[@]}" &
    wait
else
    lane "${CORES[0]}" lane_a "${A[@]}" "${B[@]}"
fi
cat "$LOGS"/*.jsonl 2>/dev/null
cat /proc/loadavg >>"$LOGS/machine.txt"
echo "total $((SECONDS - START)) s" | tee -a "$LOGS/machine.txt"
tar -czf "$OUT/engine6.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
ls -la "$OUT"
