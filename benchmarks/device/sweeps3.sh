#!/usr/bin/env bash
# Issue 31, point 3, on a many-core machine: the 100-run sweep
# (compare -w dl2 --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20) at 1, 2, 4, 8
# and 16 local workers, the pool before issue 31 and N plain processes beside it, the per-run
# overhead, and whole `dlsched compare` processes; everything in $OUT/sweeps3.tar.gz.
#
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s3 BUDGET_S=90 bash benchmarks/device/sweeps3.sh
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s3 BUDGET_S=20 bash benchmarks/device/sweeps3.sh  # rehearsal
#
# BUDGET_S (s, default 90): the whole script's time; below 80 it sweeps fewer seeds (said in
# machine.txt; SWEEP_SEEDS=1-2 forces them). Stages run in order of importance and a stage is
# skipped when what is left of the budget is less than it needs. Uses at most the machine's
# cores (16 workers at most). Results of 2026-11-26: benchmarks/RESULTS.md (issue 31, point 3).
set -u
OUT=${OUT:-/tmp/sweeps3}
BUDGET_S=${BUDGET_S:-90}
PY=${PY:-python3}
LOGS=$(mktemp -d /tmp/sweeps3_logs.XXXX)
START=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - START))); }
mkdir -p "$OUT"
exec > >(tee -a "$LOGS/console.log") 2>&1
if ! $PY -c "import gymnasium, zmq, zstandard" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="${PYTHONPATH:-$PWD/src}:/tmp/site"
fi
export PYTHONPATH="${PYTHONPATH:-$PWD/src}"
export PYTHONUNBUFFERED=1
SCHEDULERS=fifo,drf,srtf,optimus,efficient-srtf
if [ "$BUDGET_S" -ge 80 ]; then SEEDS=1-20; elif [ "$BUDGET_S" -ge 40 ]; then SEEDS=1-6; else SEEDS=1-2; fi
SEEDS=${SWEEP_SEEDS:-$SEEDS}  # a rehearsal's override
SWEEP=(-w dl2 --schedulers "$SCHEDULERS" --seeds "$SEEDS")
{
    date -u
    git log -1 --oneline 2>/dev/null
    echo "BUDGET_S=$BUDGET_S seeds=$SEEDS python=$($PY -V 2>&1) nproc=$(nproc)"
    cat /proc/loadavg
    lscpu 2>/dev/null | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz" 
    $PY -c "import dlsched, numpy, scipy; print(dlsched.__file__, numpy.__version__, scipy.__version__)"
    $PY -c "import numpy, scipy.linalg; from threadpoolctl import threadpool_info as t; print([(i['internal_api'], i['num_threads']) for i in t()])" 2>&1
} >"$LOGS/machine.txt" 2>&1
cat "$LOGS/machine.txt"

stage() {  # stage NAME NEEDS_S COMMAND...: run it under what is left, or say it was skipped
    local name=$1 needs=$2
    shift 2
    local budget
    budget=$(left)
    if [ "$budget" -lt "$needs" ]; then
        echo "== $name: skipped ($budget s left, needs $needs s)" | tee "$LOGS/$name.log"
        return
    fi
    echo "== $name ($budget s left; $(cut -d' ' -f1-3 /proc/loadavg))"
    timeout "$budget" "$@" >"$LOGS/$name.log" 2>&1
    echo "exit $? after $((SECONDS - START)) s"
    tail -12 "$LOGS/$name.log"
}

# 1. the scaling itself (one process; warm parent; 1 worker first)
stage scaling 8 $PY benchmarks/compare_workers.py "${SWEEP[@]}" --workers 1,2,4,8,16
# 2. beside it: the pool before issue 31 and 16 plain processes (the machine's ceiling)
stage before_and_ceiling 6 $PY benchmarks/compare_workers.py "${SWEEP[@]}" --no-baseline \
    --workers 16 --per-task 4,16 --ceiling 16
# 3. per-run overhead on 16 workers
stage overhead 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers 16
# 4. whole `dlsched compare` processes (start-up included), 16 and 4 workers
export TIMEFORMAT='whole process: wall %R s, user %U s, sys %S s'
for n in 16 4; do
    stage "cli_$n" 6 bash -c "time $PY -m dlsched compare ${SWEEP[*]} --workers $n --json >/dev/null"
done
# 5. with what is left: 16 and 8 workers again (noise), then a whole 1-worker process
stage repeat 8 $PY benchmarks/compare_workers.py "${SWEEP[@]}" --no-baseline --workers 16,8 --repeat 2
stage cli_1 25 bash -c "time $PY -m dlsched compare ${SWEEP[*]} --workers 1 --json >/dev/null"
cat /proc/loadavg >>"$LOGS/machine.txt"
echo "total $((SECONDS - START)) s" | tee -a "$LOGS/machine.txt"
tar -czf "$OUT/sweeps3.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
ls -la "$OUT"
