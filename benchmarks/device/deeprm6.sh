#!/usr/bin/env bash
# Issue 29 (DeepRM part), device share of helper deeprm6: more of DeepRM's own REINFORCE
# (`train deeprm --paper`) at one load (LOAD, default 1.3), continued from START (default: the
# shipped per-load policy `deeprm:paper@LOAD`), on the CPU cores this script is given (the task:
# 4-9; no GPU: on the CPU an iteration is cheaper), WORKERS rollout processes (default 5) + the
# main process (validation on VAL_JOBSETS jobsets, default 30), for BUDGET_S seconds (default 200).
# Every validated network is kept in snaps/ for selection back on the 2-core box.
# Everything comes back in $OUT/deeprm6.tar.gz (< 15 MiB).
# Run from the repo root with PYTHONPATH=$PWD/src. Rehearsal on the 2-core box:
#   OUT=/tmp/x BUDGET_S=150 JOBSETS=4 VAL_JOBSETS=2 WORKERS=1 VALIDATE_EVERY=1 bash benchmarks/device/deeprm6.sh
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-200}
LOAD=${LOAD:-1.3}
START=${START:-src/dlsched/papers/deeprm/policies/paper_loads/load$LOAD}
WORKERS=${WORKERS:-5}
JOBSETS=${JOBSETS:-100}
VAL_JOBSETS=${VAL_JOBSETS:-30}
VALIDATE_EVERY=${VALIDATE_EVERY:-10}
PY=${PYTHON:-python}
command -v "$PY" >/dev/null || PY=python3
start=$(date -u +%s)
work=$(mktemp -d)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s load $LOAD start-from $START workers $WORKERS+1"
  nproc; uptime; "$PY" -V; git log -1 --oneline 2>/dev/null
  "$PY" -c "import torch; print('torch', torch.__version__)"
  grep -m1 'model name' /proc/cpuinfo
} > "$work/machine.txt" 2>&1

# the budget less packing (15 s); --max-minutes leaves 60 s for imports and the last validation
left=$((BUDGET_S - ($(date -u +%s) - start) - 15))
minutes=$(awk -v s="$left" 'BEGIN { m = (s - 60) / 60; printf "%.2f", (m < 0.5 ? 0.5 : m) }')
echo "training ${minutes} min from $(date -u +%T)" >> "$work/machine.txt"
timeout "$((left > 5 ? left : 5))" "$PY" -m dlsched train deeprm --paper --device cpu \
  --loads "$LOAD" --init-from "$START" --jobsets "$JOBSETS" --iterations 100000 \
  --max-minutes "$minutes" --validate-every "$VALIDATE_EVERY" --validation-jobsets "$VAL_JOBSETS" \
  --workers "$WORKERS" --seed 1 --out "$work/run" > "$work/stdout.log" 2>&1 &
run=$!

# keep every validated network (last/ is rewritten at each validation)
iterations() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['steps']['iterations'])" "$1" 2>/dev/null; }
mkdir -p "$work/snaps"
while kill -0 "$run" 2>/dev/null; do
  card="$work/run/last/card.json"
  if [ -f "$card" ]; then
    it=$(iterations "$card")
    if [ -n "$it" ] && [ ! -d "$work/snaps/$it" ]; then
      sleep 1 && mkdir -p "$work/snaps/$it" && cp "$work/run/last/"{policy.pt,card.json} "$work/snaps/$it/"
    fi
  fi
  sleep 2
done
wait "$run"; echo "run exit $? at $(date -u +%FT%TZ)" >> "$work/machine.txt"
tr '\r' '\n' < "$work/stdout.log" | tail -20 > "$work/tail.log"
rm -f "$work/run/last/train_state.pt" "$work/run/last/train_state.pt.tmp"

mkdir -p "$OUT"
tar czf "$OUT/deeprm6.tar.gz" -C "$work" .
if [ "$(stat -c %s "$OUT/deeprm6.tar.gz")" -gt 15000000 ]; then  # drop the oldest snapshots
  (cd "$work/snaps" && ls | sort -n | head -n -6 | xargs -r rm -rf)
  tar czf "$OUT/deeprm6.tar.gz" -C "$work" .
fi
ls -la "$OUT"
rm -rf "$work"
