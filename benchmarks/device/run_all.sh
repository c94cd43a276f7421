#!/usr/bin/env bash
# The session's one device run (an H100 machine: one GPU, 16 cores), prepared ahead and run once:
#   phase 1 — sweeps6.sh alone on all 16 cores (sweep scaling wants a quiet machine);
#   phase 2 — each other benchmarks/device/NAME.sh at once, pinned to its own cores, and every
#             test marked `cuda`.
# Each NAME.sh reads BUDGET_S (seconds to use) and writes one $OUT/NAME.tar.gz.
#
#   OUT=/tmp/dev PHASE1_S=100 PHASE2_S=200 bash benchmarks/device/run_all.sh
#   OUT=/tmp/dev PHASE1_S=10 PHASE2_S=20 bash benchmarks/device/run_all.sh   # rehearsal here
set -u
OUT=${OUT:?set OUT}
PHASE1_S=${PHASE1_S:-100}
PHASE2_S=${PHASE2_S:-200}
PY=${PY:-python3}
export PY PYTHON=${PYTHON:-$PY}  # the scripts read either; the device has python3 only
mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
LOG="$OUT/driver.log"
{
    date -u
    git log -1 --oneline 2>/dev/null
    nvidia-smi -L 2>/dev/null
    $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    echo "cores $(nproc)"
} >"$LOG" 2>&1

pin() {  # CORES: the taskset prefix, where this machine has those cores (a rehearsal may not)
    if [ "${1##*-}" -lt "$(nproc)" ]; then echo "taskset -c $1"; fi
}

run_one() {  # NAME CORES BUDGET
    local name=$1 cores=$2 budget=$3
    [ -f "benchmarks/device/$name.sh" ] || { echo "$name: no script" >>"$LOG"; return; }
    local start=$SECONDS
    BUDGET_S=$budget OUT="$OUT" timeout $((budget + 20)) $(pin "$cores") \
        bash "benchmarks/device/$name.sh" >"/tmp/$name.stdout" 2>&1
    local rc=$?
    echo "$name: exit $rc after $((SECONDS - start)) s on cores $cores" >>"$LOG"
    tail -5 "/tmp/$name.stdout" | sed "s/^/  $name| /" >>"$LOG"
    [ -f "$OUT/$name.tar.gz" ] || tar czf "$OUT/$name.tar.gz" -C /tmp "$name.stdout"
}

echo "== phase 1 $(date -u +%T)" >>"$LOG"
run_one sweeps6 0-15 "$PHASE1_S"

echo "== phase 2 $(date -u +%T)" >>"$LOG"
run_one lascore 0-1 "$PHASE2_S" &
run_one engine6 2-3 "$PHASE2_S" &
run_one dl2y 4-6 "$PHASE2_S" &
run_one deeprm6 7-10 "$PHASE2_S" &
run_one sched2y 11-14 "$PHASE2_S" &
(
    mapfile -t FILES < <(grep -rl "mark.cuda" tests --include='*.py')
    timeout "$PHASE2_S" $(pin 15-15) $PY -m pytest -m cuda -q -p no:cacheprovider -rA "${FILES[@]}" \
        >"$OUT/cuda_tests.log" 2>&1
    echo "cuda tests: exit $?" >>"$LOG"
) &
wait
echo "== done $(date -u +%T)" >>"$LOG"
ls -la "$OUT" >>"$LOG"
