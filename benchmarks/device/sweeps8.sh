#!/usr/bin/env bash
# Issue 31, point 3, on a many-core machine: a sweep's chunks sized by the runs' expected CPU
# (`parallel.CHUNK_CPU_S`: runs of 20 ms or more go out one at a time) against the dispatch of
# e0d1c44 (chunks of ~runs left / 32, which could tie two costly runs together at the end),
# alternately in one call, 16 workers and 8; every run's start, end and CPU in $OUT/*.csv
# (how long each worker waited at the start and at the end: see RESULTS.md). The old dispatch is
# run from a copy of src/ with .base/parallel_e0d1c44.py in place of the new one (carry .base).
#
#   OUT=/tmp/s8 ROUNDS=2 bash benchmarks/device/sweeps8.sh      # carry: .whl, .base
set -u
OUT=${OUT:-/tmp/sweeps8}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
SITE=/tmp/site
python3 -c "import gymnasium, zmq, zstandard, highspy" 2>/dev/null ||
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
rm -rf /tmp/oldsrc && cp -r src /tmp/oldsrc && cp .base/parallel_e0d1c44.py /tmp/oldsrc/dlsched/experiments/parallel.py
N=$(nproc)
N=$((N > 16 ? 16 : N))
{ date -u; git log -1 --oneline; lscpu | grep -E "Model name|^CPU\(s\)"; cat /proc/loadavg; } >"$OUT/machine.txt" 2>&1
for round in $(seq "$ROUNDS"); do
    for side in old new; do
        [ $side = old ] && P=/tmp/oldsrc || P=$PWD/src
        PYTHONPATH=$P:$SITE python3 benchmarks/sweep_cpu.py -w dl2 --schedulers fifo,drf,srtf,optimus,efficient-srtf \
            --seeds 1-20 --workers "$N" --repeat 2 --variants "pool,pool$((N / 2))" \
            --csv "$OUT/$side$round.csv" >"$OUT/$side$round.log" 2>&1
        echo "$side $round: $(grep -E '^pool' "$OUT/$side$round.log" | grep timings | cut -c1-120 | tr '\n' ' ')"
    done
done
