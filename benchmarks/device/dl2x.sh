#!/usr/bin/env bash
# Issue 29 (DL2 part), device share of helper dl2x: is there a signal for DL2's paper
# actor-critic to learn near its supervised start? Three processes (one per CPU core given,
# torch 1 thread each, no GPU), each a queue of measurements run until the budget is spent:
#   1. the policy gradient's signal and noise at the start (benchmarks/dl2_gradient_snr.py):
#      the paper (γ 0.9), the start made less confident (temperature 3), groups of 8,192;
#   2. the same with the authors' code's advantage (γ 0), then with per-job credit (reward job),
#      then the critic on held-out slots (benchmarks/dl2_advantage_by_action.py, γ 0.9 and 0);
#   3. a supervised start imitating Optimus (the paper's preset and network), then paired
#      rollouts (benchmarks/dl2_signal.py): one-slot deviations, exploration, sampling, and
#      the path from the DRF start to the Optimus-imitating one.
# Logs and JSON come back in $OUT/dl2x.tar.gz (no weights). Run from the repo root with
# PYTHONPATH=$PWD/src; BUDGET_S (default 400) is the wall time.
#   OUT=/tmp/x BUDGET_S=20 bash benchmarks/device/dl2x.sh   # rehearsal
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-400}
PY=${PYTHON:-python}
work=$(mktemp -d)
deadline=$(($(date +%s) + (BUDGET_S > 40 ? BUDGET_S - 25 : 10)))
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s"
  nproc; uptime; "$PY" -V
} > "$work/machine.txt" 2>&1

step() {  # NAME COMMAND...: run it with what is left of the budget (skipped when none is)
  local name=$1 left=$((deadline - $(date +%s)))
  shift
  if [ "$left" -le 5 ]; then echo "skipped: no budget left" > "$work/$name.log"; return; fi
  echo "$(date -u +%T) $name (${left}s left): $*" >> "$work/steps.txt"
  timeout "$left" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  echo "$(date -u +%T) $name rc=$rc" >> "$work/steps.txt"
}
SNR="$PY benchmarks/dl2_gradient_snr.py --groups 64 --group-size 2048"
(
  step snr_paper $SNR --gamma 0.9 --out "$work/snr_paper.json"
  step snr_paper_t3 $SNR --gamma 0.9 --temp 3 --out "$work/snr_paper_t3.json"
  step snr_paper_8k "$PY" benchmarks/dl2_gradient_snr.py --groups 64 --group-size 8192 \
    --gamma 0.9 --out "$work/snr_paper_8k.json"
) &
(
  step snr_authors $SNR --gamma 0 --out "$work/snr_authors.json"
  step snr_job $SNR --gamma 0 --reward job --out "$work/snr_job.json"
  step critic_paper "$PY" benchmarks/dl2_advantage_by_action.py --gamma 0.9
  step critic_authors "$PY" benchmarks/dl2_advantage_by_action.py --gamma 0
) &
(
  step sl_optimus "$PY" benchmarks/dl2_paper_variants.py sl --teacher optimus \
    --init "$work/sl-optimus" --out "$work"
  step signal "$PY" benchmarks/dl2_signal.py --traces 16 --first-seed 7000 --samples 2 \
    --slots 10 40 80 120 --other "$work/sl-optimus" --mix 0.1 0.25 0.5 1 \
    --out "$work/signal.json"
) &
wait
echo "end $(date -u +%FT%TZ)" >> "$work/machine.txt"
find "$work" -name policy.pt -delete
mkdir -p "$OUT"
tar czf "$OUT/dl2x.tar.gz" -C "$work" .
rm -rf "$work"
