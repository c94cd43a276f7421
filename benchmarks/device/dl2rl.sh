#!/usr/bin/env bash
# Issue 29 (DL2 part), device share of helper dl2rl: DL2's paper actor-critic variants from the
# same supervised start, one process per CPU core (5 processes, torch 1 thread each, --device
# cpu, no GPU), each for the whole budget; logs and train_log.csv of each come back in
# $OUT/dl2rl.tar.gz (no weights: the greedy validation of every checkpoint is in its log).
# Run from the repo root with PYTHONPATH=$PWD/src; BUDGET_S (default 400) is the wall time.
#   OUT=/tmp/x BUDGET_S=20 bash benchmarks/device/dl2rl.sh   # rehearsal
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-400}
PY=${PYTHON:-python}
work=$(mktemp -d)
run_s=$((BUDGET_S > 40 ? BUDGET_S - 30 : 10))
minutes=$(awk -v s="$run_s" 'BEGIN { printf "%.2f", (s - 90) / 60 }')  # start-up, validations, the last chunk
init=src/dlsched/papers/dl2/policies/dl2_paper  # the supervised start (runs/variants/sl)
# VARIANT:NAME:EVAL_EVERY (benchmarks/dl2_paper_variants.py)
JOBS="A:A_paper:375 Z:Z_no_signal:375 L:L_lr1e-5:750 Y:Y_lr1e-5_no_signal:750 V:V_no_value_net:375"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s run ${run_s}s minutes ${minutes}"
  nproc; uptime; "$PY" -V
} > "$work/machine.txt" 2>&1
for job in $JOBS; do
  IFS=: read -r variant name every <<< "$job"
  timeout "$run_s" "$PY" benchmarks/dl2_paper_variants.py "$variant" --out "$work" \
    --init "$init" --name "$name" --eval-every "$every" --minutes "$minutes" \
    > "$work/$name.log" 2>&1 &
done
wait
echo "end $(date -u +%FT%TZ)" >> "$work/machine.txt"
find "$work" -name policy.pt -delete
mkdir -p "$OUT"
tar czf "$OUT/dl2rl.tar.gz" -C "$work" .
rm -rf "$work"
