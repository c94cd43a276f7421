#!/usr/bin/env bash
# Issue 31, point 3, on a many-core machine: what limits the 100-run sweep
# (compare -w dl2 --schedulers fifo,drf,srtf,optimus,efficient-srtf --seeds 1-20) at 16 workers.
# The CPU topology (lscpu, /sys), the ceiling of N processes doing the same work
# (core_ceiling.py), the sweep at 1, 8 and 16 workers beside the pool of 2026-11-26
# (compare_workers.py --executor), the per-run overhead and the timeline at 16 workers
# (sweep_overhead.py), and 16 workers with one OpenBLAS thread each; all in $OUT/sweeps5.tar.gz.
#
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s5 BUDGET_S=80 bash benchmarks/device/sweeps5.sh
#   export PYTHONPATH=$PWD/src; OUT=/tmp/s5 BUDGET_S=20 bash benchmarks/device/sweeps5.sh  # rehearsal
#
# BUDGET_S (s, default 80): the whole script's time; below 70 it sweeps fewer seeds (said in
# machine.txt; SWEEP_SEEDS=1-2 forces them). Stages run in order of importance and a stage is
# skipped when what is left of the budget is less than it needs. Uses the machine's cores, 16
# processes at most (N = min(nproc, 16): 1, N/2 and N workers). Results: benchmarks/RESULTS.md
# (issue 31, point 3).
set -u
OUT=${OUT:-/tmp/sweeps5}
BUDGET_S=${BUDGET_S:-80}
PY=${PY:-python3}
LOGS=$(mktemp -d /tmp/sweeps5_logs.XXXX)
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
if [ "$BUDGET_S" -ge 70 ]; then SEEDS=1-20; elif [ "$BUDGET_S" -ge 40 ]; then SEEDS=1-6; else SEEDS=1-2; fi
SEEDS=${SWEEP_SEEDS:-$SEEDS}  # a rehearsal's override
SWEEP=(-w dl2 --schedulers "$SCHEDULERS" --seeds "$SEEDS")
N=$(nproc)
N=$((N > 16 ? 16 : N))
HALF=$((N / 2))
if [ "$N" -ge 4 ]; then COUNTS=1,$HALF,$N; else COUNTS=1,$N; fi
{
    date -u
    git log -1 --oneline 2>/dev/null
    echo "BUDGET_S=$BUDGET_S seeds=$SEEDS workers=$COUNTS python=$($PY -V 2>&1) nproc=$(nproc)"
    cat /proc/loadavg
    lscpu 2>&1
    echo "== lscpu -e"
    lscpu -e 2>&1
    echo "== /sys topology: cpu core_id package thread_siblings"
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        t=$c/topology
        echo "$(basename "$c") $(cat "$t/core_id" 2>/dev/null) $(cat "$t/physical_package_id" \
            2>/dev/null) $(cat "$t/thread_siblings_list" 2>/dev/null)"
    done
    echo "== numa"
    ls -d /sys/devices/system/node/node* 2>&1
    numactl -H 2>&1 | head -5
    echo "== cpuinfo (first cpu)"
    grep -m1 -E "^siblings" /proc/cpuinfo
    grep -m1 -E "^cpu cores" /proc/cpuinfo
    grep -m1 -oE "\b(hypervisor|ht)\b" /proc/cpuinfo | tr '\n' ' '
    echo
    grep -E "^cpu MHz" /proc/cpuinfo | sort | uniq -c | head -4
    cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
    cat /sys/fs/cgroup/cpu.max 2>&1
    $PY -c "import dlsched, numpy, scipy; print(dlsched.__file__, numpy.__version__, scipy.__version__)"
    $PY -c "import numpy, scipy.linalg; from threadpoolctl import threadpool_info as t; print([(i['internal_api'], i['num_threads']) for i in t()])" 2>&1
} >"$LOGS/machine.txt" 2>&1
grep -vE "^(Flags|Vulnerability)" "$LOGS/machine.txt" | head -32

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
    tail -14 "$LOGS/$name.log"
}

# 1. the scaling (one warm process; 1 worker first), beside the pool of 2026-11-26
stage scaling 10 $PY benchmarks/compare_workers.py "${SWEEP[@]}" --workers $COUNTS --executor $N
# 2. the machine's ceiling: N processes each doing the same work (pure Python; the runs)
stage ceiling 6 $PY benchmarks/core_ceiling.py -w dl2 --schedulers "$SCHEDULERS" \
    --processes $COUNTS --repeat 2
# 3. per-run overhead and timeline on N workers, this pool and the pool of 2026-11-26
stage overhead 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers $N
stage overhead_executor 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers $N --executor
# 4. noise: N and N/2 workers and the pool of 2026-11-26 again
stage repeat 8 $PY benchmarks/compare_workers.py "${SWEEP[@]}" --no-baseline --workers $N,$HALF \
    --executor $N --repeat 2
# 5. one OpenBLAS / OpenMP thread a process (else each worker has nproc idle ones)
stage one_blas_thread 5 env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
    $PY benchmarks/compare_workers.py "${SWEEP[@]}" --no-baseline --workers $N --repeat 2
stage overhead_again 4 $PY benchmarks/sweep_overhead.py "${SWEEP[@]}" --workers $N
cat /proc/loadavg >>"$LOGS/machine.txt"
echo "total $((SECONDS - START)) s" | tee -a "$LOGS/machine.txt"
tar -czf "$OUT/sweeps5.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
ls -la "$OUT"
