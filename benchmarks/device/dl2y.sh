#!/usr/bin/env bash
# Issue 29 (DL2 part), device share of helper dl2y: does pairing copies of a trace (common
# random numbers, per-job noise, leave-one-out baseline; `dlsched.papers.dl2.paired`) give
# DL2's policy gradient at its supervised start a signal the paper's critic advantage lacked?
# One process per CPU core given (at most 4; torch 1 thread each, no GPU), each running
# benchmarks/dl2_paired_snr.py on its own training traces until the budget is spent, saving
# every group's gradient; the groups of all of them are then pooled (--combine).
# Logs and JSON come back in $OUT/dl2y.tar.gz (no gradients, no weights). Run from the repo
# root with PYTHONPATH=$PWD/src; BUDGET_S (default 200) is the wall time.
#   OUT=/tmp/x BUDGET_S=30 bash benchmarks/device/dl2y.sh   # rehearsal
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-200}
PY=${PYTHON:-python}
WORKERS=${WORKERS:-$(($(nproc) < 4 ? $(nproc) : 4))}  # one per core given (taskset), at most 4
work=$(mktemp -d)
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s workers $WORKERS"
  nproc; uptime; "$PY" -V
} > "$work/machine.txt" 2>&1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1  # after nproc, which reads it
measure=$((BUDGET_S > 60 ? BUDGET_S - 45 : BUDGET_S / 2))  # leaves time to pool and pack
for i in $(seq 0 $((WORKERS - 1))); do
  timeout $((measure + 15)) "$PY" benchmarks/dl2_paired_snr.py --groups 1000 --traces 4 \
    --copies 4 --window 8 --horizon 30 --max-burn 200 --seed $((100 + i)) \
    --first-trace $((100000 + 10000 * i)) --max-seconds "$measure" \
    --save-grads "$work/grads/$i" --out "$work/snr_$i.json" > "$work/snr_$i.log" 2>&1 &
done
wait
dirs=$(ls -d "$work"/grads/* 2>/dev/null)
if [ -n "$dirs" ]; then
  # shellcheck disable=SC2086  # one argument per directory
  timeout 20 "$PY" benchmarks/dl2_paired_snr.py --combine $dirs --out "$work/pooled.json" \
    > "$work/pooled.log" 2>&1
fi
echo "end $(date -u +%FT%TZ)" >> "$work/machine.txt"
rm -rf "$work/grads"
mkdir -p "$OUT"
tar czf "$OUT/dl2y.tar.gz" -C "$work" .
rm -rf "$work"
