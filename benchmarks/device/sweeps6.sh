#!/usr/bin/env bash
# Issue 31, point 3, on a many-core machine: why the 100-run sweep
# (compare -w dl2 --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20) takes ~30 %
# more CPU a run on 16 workers than in one process. sweep_cpu.py: every run's CPU alone, then
# the same runs on N processes, alternately, in six ways side by side (the pool as it is; runs
# in the order given instead of costliest first; each worker pinned to a core; no cyclic GC in
# the workers; N plain processes with static shares; N - 1 workers), each run's CPU measured
# where it ran, the parent's CPU split into its parts. Then the per-run overhead from a fresh
# process (sweep_overhead.py) and the machine's ceiling (core_ceiling.py); all in
# $OUT/sweeps6.tar.gz.
#
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s6 BUDGET_S=100 bash benchmarks/device/sweeps6.sh
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s6 BUDGET_S=20 bash benchmarks/device/sweeps6.sh  # rehearsal
#
# BUDGET_S (s, default 100): the whole script's time; below 90 it times fewer repeats, below 60
# fewer seeds (said in machine.txt; SWEEP_SEEDS forces them). A stage is skipped when what is
# left of the budget is less than it needs. Uses the machine's cores, 16 processes at most
# (N = min(nproc, 16)). Results: benchmarks/RESULTS.md (issue 31, point 3).
set -u
OUT=${OUT:-/tmp/sweeps6}
BUDGET_S=${BUDGET_S:-100}
PY=${PY:-python3}
LOGS=$(mktemp -d /tmp/sweeps6_logs.XXXX)
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
if [ "$BUDGET_S" -ge 60 ]; then SEEDS=1-20; else SEEDS=1-2; fi
if [ "$BUDGET_S" -ge 90 ]; then REPEAT=4; elif [ "$BUDGET_S" -ge 60 ]; then REPEAT=2; else REPEAT=1; fi
SEEDS=${SWEEP_SEEDS:-$SEEDS}  # a rehearsal's override
SWEEP=(-w dl2 --schedulers "$SCHEDULERS" --seeds "$SEEDS")
N=$(nproc)
N=$((N > 16 ? 16 : N))
{
    date -u
    git log -1 --oneline 2>/dev/null
    echo "BUDGET_S=$BUDGET_S seeds=$SEEDS repeat=$REPEAT workers=$N python=$($PY -V 2>&1) nproc=$(nproc)"
    cat /proc/loadavg
    lscpu 2>&1 | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3|Hypervisor)"
    echo "kernel $(uname -r); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)"
    grep -E "^cpu MHz" /proc/cpuinfo | sort | uniq -c | head -4
    $PY -c "import dlsched, numpy, scipy; print(dlsched.__file__, numpy.__version__, scipy.__version__)"
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
    tail -9 "$LOGS/$name.log"
}

cp /proc/vmstat "$LOGS/vmstat_before.txt" 2>/dev/null
grep -E "^(MemTotal|MemFree|MemAvailable|AnonHugePages)" /proc/meminfo >>"$LOGS/machine.txt" 2>&1
# 1. each run's CPU alone and on N processes, six ways, alternately (the 1-worker sweep first)
stage cpu 10 $PY benchmarks/sweep_cpu.py "${SWEEP[@]}" --workers $N --repeat $REPEAT \
    --variants pool,given,pinned,nogc,plain,fewer --csv "$LOGS/runs.csv"
cp /proc/vmstat "$LOGS/vmstat_after_cpu.txt" 2>/dev/null
# 2. per-run overhead on N workers from a fresh process (a sweep's parent, warm after one run)
stage overhead 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers $N
# 3. the machine's ceiling: N processes each doing the same work (pure Python; the runs)
stage ceiling 6 $PY benchmarks/core_ceiling.py -w dl2 --schedulers "$SCHEDULERS" \
    --processes 1,$N --repeat 2
stage overhead_again 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers $N
cat /proc/loadavg >>"$LOGS/machine.txt"
echo "total $((SECONDS - START)) s" | tee -a "$LOGS/machine.txt"
tar -czf "$OUT/sweeps6.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
ls -la "$OUT"
