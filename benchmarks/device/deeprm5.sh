#!/usr/bin/env bash
# Issue 29 (DeepRM part), device share of helper deeprm5: more of DeepRM's own REINFORCE
# (`train deeprm --paper`) on 7 CPU cores of the H100 machine (no GPU: on the CPU an iteration is
# cheaper), two runs side by side for BUDGET_S seconds (default 420):
#   slow/  the slowdown objective continued from START (default: deeprm5_start/, iteration 557 of the
#          continuation of `deeprm:paper` on the 2-core box),
#          SLOW_WORKERS rollout processes (default 5) + the main process (validation);
#   comp/  Fig. 5's completion-time objective (reward -|J|) at load 1.3, started from the same
#          network (a warm start: the paper trains it from scratch), one process.
# Every 2nd validated iteration of slow/ is kept in snaps/ for selection on more validation
# jobsets back on the 2-core box. Everything comes back in $OUT/deeprm5.tar.gz (< 15 MiB).
# Run from the repo root with PYTHONPATH=$PWD/src. Rehearsal on the 2-core box:
#   OUT=/tmp/x BUDGET_S=240 JOBSETS=4 VAL_JOBSETS=1 SLOW_WORKERS=1 VALIDATE_EVERY=2 bash benchmarks/device/deeprm5.sh
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-420}
START=${START:-benchmarks/device/deeprm5_start}
SLOW_WORKERS=${SLOW_WORKERS:-5}
JOBSETS=${JOBSETS:-100}
VAL_JOBSETS=${VAL_JOBSETS:-10}
VALIDATE_EVERY=${VALIDATE_EVERY:-10}
PY=${PYTHON:-python}
command -v "$PY" >/dev/null || PY=python3
start=$(date -u +%s)
work=$(mktemp -d)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s start-from $START workers $SLOW_WORKERS+1+1"
  nproc; uptime; "$PY" -V; git log -1 --oneline 2>/dev/null
  "$PY" -c "import torch; print('torch', torch.__version__)"
  grep -m1 'model name' /proc/cpuinfo
} > "$work/machine.txt" 2>&1

# the budget less packing (20 s); each run's --max-minutes leaves 90 s for imports and its last validation
left=$((BUDGET_S - ($(date -u +%s) - start) - 20))
minutes=$(awk -v s="$left" 'BEGIN { m = (s - 90) / 60; printf "%.2f", (m < 0.5 ? 0.5 : m) }')
echo "training ${minutes} min from $(date -u +%T)" >> "$work/machine.txt"
common=(--paper --device cpu --init-from "$START" --jobsets "$JOBSETS" --max-minutes "$minutes"
  --validate-every "$VALIDATE_EVERY" --validation-jobsets "$VAL_JOBSETS" --seed 0)
timeout "$((left > 5 ? left : 5))" "$PY" -m dlsched train deeprm "${common[@]}" \
  --workers "$SLOW_WORKERS" --out "$work/slow" > "$work/slow_stdout.log" 2>&1 &
slow=$!
timeout "$((left > 5 ? left : 5))" "$PY" -m dlsched train deeprm "${common[@]}" \
  --objective completion --loads 1.3 --workers 1 --out "$work/comp" > "$work/comp_stdout.log" 2>&1 &
comp=$!

# keep every 2nd validated network of the slowdown run (last/ is rewritten at each validation)
iterations() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['steps']['iterations'])" "$1" 2>/dev/null; }
first=$(iterations "$START/card.json")
mkdir -p "$work/snaps"
while kill -0 "$slow" 2>/dev/null; do
  card="$work/slow/last/card.json"
  if [ -f "$card" ]; then
    it=$(iterations "$card")
    if [ -n "$it" ] && [ $(((it - ${first:-0}) % (2 * VALIDATE_EVERY))) -eq 0 ] && [ ! -d "$work/snaps/$it" ]; then
      sleep 1 && mkdir -p "$work/snaps/$it" && cp "$work/slow/last/"{policy.pt,card.json} "$work/snaps/$it/"
    fi
  fi
  sleep 2
done
wait "$slow"; echo "slow exit $? at $(date -u +%FT%TZ)" >> "$work/machine.txt"
wait "$comp"; echo "comp exit $? at $(date -u +%FT%TZ)" >> "$work/machine.txt"
for run in slow comp; do
  tr '\r' '\n' < "$work/${run}_stdout.log" | tail -20 > "$work/${run}_tail.log"
  rm -f "$work/$run/last/train_state.pt.tmp"
done
rm -f "$work/comp/last/train_state.pt"  # the completion run is not continued elsewhere

mkdir -p "$OUT"
tar czf "$OUT/deeprm5.tar.gz" -C "$work" .
if [ "$(stat -c %s "$OUT/deeprm5.tar.gz")" -gt 15000000 ]; then  # drop the oldest snapshots
  (cd "$work/snaps" && ls | sort -n | head -n -4 | xargs -r rm -rf)
  tar czf "$OUT/deeprm5.tar.gz" -C "$work" .
fi
ls -la "$OUT"
rm -rf "$work"
