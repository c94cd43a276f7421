#!/usr/bin/env bash
# Issue 31, point 3, on a many-core machine: is the 100-run sweep's extra CPU a run on 16 workers
# (1.2-1.4x its CPU alone; a process's first run ~1.0x, its later runs and the second half of a
# timing more, sweeps6) the workers' age (heaps grown over their runs) or the machine's state
# over a timing with 16 processes at once? sweep_cpu.py, the runs alone first, then alternately:
#   pool        the pool as `compare --workers N` runs it (N = min(nproc, 16));
#   fresh       every run in a process of its own, forked from the warm parent, N at once,
#               costliest first: no run in an old process (age out, load and time kept);
#   recycle3    the same, each process 3 runs before a new one is forked (the device run of
#               2026-11-27 15:23 UTC timed pool-recycle3, the pool's own recycle_after=3 option,
#               removed after it showed no gain);
#   pool<N/2>, pool<3N/4>   the pool on fewer workers: where the extra CPU begins;
#   trim        the pool, gc.collect + malloc_trim(0) in the workers after each run;
# each timing followed by 5 runs alone in the parent (--probe 5: has the machine itself slowed?).
# Then pool and fresh again with PYTHONMALLOC=malloc, and with glibc's heap on transparent huge
# pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), each with its own alone pass; last, every test
# marked `cuda` (~60 s). All logs in $OUT/sweeps7.tar.gz.
#
#   OUT=/tmp/s7 BUDGET_S=300 bash benchmarks/device/sweeps7.sh
#   OUT=/tmp/s7 BUDGET_S=30 SWEEP_SEEDS=1-2 bash benchmarks/device/sweeps7.sh  # rehearsal
#
# BUDGET_S (s, default 300): the whole script's time. The CUDA tests keep CUDA_S (default 60 s,
# at most a third of the budget) at the end; the sweep stages share what is before, the most
# decisive first; below 240 s fewer repeats, below 60 s seeds 1-2 (said in machine.txt;
# SWEEP_SEEDS forces them). A stage is skipped when too little is left. Missing packages
# (gymnasium, pyzmq, zstandard, highspy) are installed from .whl/ to /tmp/site when there.
# Results: benchmarks/RESULTS.md (issue 31, point 3).
set -u
OUT=${OUT:-/tmp/sweeps7}
BUDGET_S=${BUDGET_S:-300}
PY=${PY:-python3}
LOGS=$(mktemp -d /tmp/sweeps7_logs.XXXX)
START=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - START))); }
mkdir -p "$OUT"
exec > >(tee -a "$LOGS/console.log") 2>&1
SITE=${SITE:-/tmp/site}
export PYTHONPATH="${PYTHONPATH:-$PWD/src}"
if ! $PY -c "import gymnasium, zmq, zstandard, highspy" 2>/dev/null; then
    if ls .whl/*.whl >/dev/null 2>&1 && $PY -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --upgrade --target "$SITE" .whl/*.whl; then
        export PYTHONPATH="$PYTHONPATH:$SITE"
        echo "installed to $SITE: $(cd .whl && ls -- *.whl | tr '\n' ' ')"
    else
        echo "some packages missing and not installed from .whl/"
    fi
fi
export PYTHONUNBUFFERED=1
CUDA_S=${CUDA_S:-60}
CUDA_S=$((CUDA_S > BUDGET_S / 3 ? BUDGET_S / 3 : CUDA_S))
SCHEDULERS=fifo,drf,srtf,optimus,efficient-srtf
if [ "$BUDGET_S" -ge 60 ]; then SEEDS=1-20; else SEEDS=1-2; fi
if [ "$BUDGET_S" -ge 240 ]; then REPEAT=6; elif [ "$BUDGET_S" -ge 120 ]; then REPEAT=3; else REPEAT=1; fi
SEEDS=${SWEEP_SEEDS:-$SEEDS} # a rehearsal's override
SWEEP=(-w dl2 --schedulers "$SCHEDULERS" --seeds "$SEEDS")
N=$(nproc)
N=$((N > 16 ? 16 : N))
HALF=$((N / 2 > 0 ? N / 2 : 1))
VARIANTS=pool,fresh,recycle3,pool$HALF
[ $((N * 3 / 4)) -gt "$HALF" ] && VARIANTS=$VARIANTS,pool$((N * 3 / 4))
VARIANTS=$VARIANTS,trim
{
    date -u
    git log -1 --oneline 2>/dev/null
    echo "BUDGET_S=$BUDGET_S CUDA_S=$CUDA_S SHARE=$((BUDGET_S - CUDA_S - 5)) seeds=$SEEDS repeat=$REPEAT workers=$N variants=$VARIANTS"
    echo "python=$($PY -V 2>&1) nproc=$(nproc) PYTHONPATH=$PYTHONPATH"
    cat /proc/loadavg
    lscpu 2>&1 | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3|Hypervisor)"
    echo "kernel $(uname -r); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)"
    ldd --version 2>&1 | head -1
    grep -E "^cpu MHz" /proc/cpuinfo | sort | uniq -c | head -4
    grep -E "^(MemTotal|MemFree|MemAvailable|AnonHugePages)" /proc/meminfo
    $PY -c "import dlsched, numpy, scipy, gymnasium; print(dlsched.__file__, numpy.__version__, scipy.__version__, gymnasium.__version__)"
} >"$LOGS/machine.txt" 2>&1
cat "$LOGS/machine.txt"

SHARE=$((BUDGET_S - CUDA_S - 5)) # the sweep stages' seconds, before the CUDA tests
stage() { # stage NAME NEEDS_S MAX_S COMMAND...: run it under what is left before the CUDA tests
    local name=$1 needs=$2 most=$3
    shift 3
    local budget
    budget=$(($(left) - CUDA_S - 5))
    most=$((most > needs ? most : needs))
    budget=$((budget > most ? most : budget))
    if [ "$budget" -lt "$needs" ]; then
        echo "== $name: skipped ($budget s left before the CUDA tests, needs $needs s)" | tee "$LOGS/$name.log"
        return
    fi
    echo "== $name ($budget s left before the CUDA tests; $(cut -d' ' -f1-3 /proc/loadavg))"
    timeout "$budget" "$@" >"$LOGS/$name.log" 2>&1
    echo "exit $? after $((SECONDS - START)) s"
    tail -8 "$LOGS/$name.log"
}

CPU=($PY benchmarks/sweep_cpu.py "${SWEEP[@]}" --workers $N --probe 5)
cp /proc/vmstat "$LOGS/vmstat_before.txt" 2>/dev/null
# 1. age or the machine: the pool, a process a run, workers replaced after 3 runs, fewer workers,
#    trimmed heaps
stage cpu 10 $((SHARE * 56 / 100)) "${CPU[@]}" --repeat $REPEAT --variants "$VARIANTS" --csv "$LOGS/runs.csv"
cp /proc/vmstat "$LOGS/vmstat_after_cpu.txt" 2>/dev/null
# 2. the same with the C allocator instead of pymalloc's arenas, then glibc's heap on huge pages
stage malloc 10 $((SHARE * 22 / 100)) env PYTHONMALLOC=malloc "${CPU[@]}" --repeat $(((REPEAT + 1) / 2)) \
    --variants pool,fresh --csv "$LOGS/runs_malloc.csv"
stage hugetlb 10 "$SHARE" env PYTHONMALLOC=malloc GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "${CPU[@]}" \
    --repeat $(((REPEAT + 1) / 2)) --variants pool,fresh --csv "$LOGS/runs_hugetlb.csv"
grep -E "^(AnonHugePages)" /proc/meminfo >>"$LOGS/machine.txt" 2>&1
# 3. every test marked cuda, in what is left (CUDA_S at least)
echo "== cuda tests ($(left) s left)"
mapfile -t FILES < <(grep -rl "mark.cuda" tests src --include='*.py')
budget=$(left)
budget=$((budget < CUDA_S ? CUDA_S : budget))
timeout "$budget" $PY -m pytest -m cuda -q -p no:cacheprovider -rA "${FILES[@]}" >"$LOGS/cuda_tests.log" 2>&1
echo "cuda tests: exit $? after $((SECONDS - START)) s"
tail -5 "$LOGS/cuda_tests.log"
cat /proc/loadavg >>"$LOGS/machine.txt"
echo "total $((SECONDS - START)) s" | tee -a "$LOGS/machine.txt"
tar -czf "$OUT/sweeps7.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
ls -la "$OUT"
