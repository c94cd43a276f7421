#!/usr/bin/env bash
# Issue 33 item 5 on the device machine (3 CPU cores, no GPU): more held-out seeds for the
# learned heterogeneity-aware scheduler against Gavel's LAS-het (benchmarks/hetero_learned.py,
# 3 processes): 200-job workloads at 4 and 8 jobs/h on seeds 20011-20030 (this box ran
# 20001-20010), then 500-job ones (reproduce gavel's size) at 4, 8 and 12 jobs/h, chunk after
# chunk until BUDGET_S is nearly spent; every finished run is kept (runs.csv is written row by
# row). One file back: $OUT/hetlearn.tar.gz.
#
#   OUT=/tmp/x BUDGET_S=60 HETLEARN_SCALE=20 bash benchmarks/device/hetlearn.sh   # rehearsal
set -u
OUT=${OUT:?set OUT}
BUDGET_S=${BUDGET_S:-400}
SCALE=${HETLEARN_SCALE:-1}   # a rehearsal divides the jobs per workload by this
PY=${PY:-python3}
[ -x .venv/bin/python ] && [ "$PY" = python3 ] && PY=.venv/bin/python
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
WORK=$(mktemp -d /tmp/hetlearn.XXXXXX)
LOG="$WORK/driver.log"
{ date -u +%T; echo "budget ${BUDGET_S}s cores $(nproc)"; git log -1 --oneline; } >"$LOG" 2>&1
START=$SECONDS
CHUNKS=(  # jobs rates seeds
    "200 4,8 20011-20020"
    "200 4,8 20021-20030"
    "500 4,8,12 20001-20005"
    "500 4,8,12 20006-20010"
)
for chunk in "${CHUNKS[@]}"; do
    read -r jobs rates seeds <<<"$chunk"
    left=$(( BUDGET_S - 20 - (SECONDS - START) ))
    [ "$left" -ge 20 ] || break
    name="jobs${jobs}_seeds$seeds"
    timeout "$left" $PY benchmarks/hetero_learned.py --rates "$rates" --seeds "$seeds" \
        --num-jobs $(( jobs / SCALE )) --workers 3 --out "$WORK/$name" >"$WORK/$name.log" 2>&1
    echo "$name: exit $? at $(( SECONDS - START )) s" >>"$LOG"
done
echo "end $(date -u +%T)" >>"$LOG"
mkdir -p "$OUT"
tar czf "$OUT/hetlearn.tar.gz" -C "$WORK" .
ls -la "$OUT/hetlearn.tar.gz"
