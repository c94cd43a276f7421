#!/usr/bin/env bash
# Issue 29 (DeepRM part), device share of helper deeprmrl: DeepRM's own REINFORCE
# (`train deeprm --paper`) continued on the GPU from the shipped `deeprm:paper` network for the
# budget (about 1.5-2.5 s an iteration on an H100: ~150-200 more of the paper's 1,000
# iterations), after the DeepRM tests marked `cuda`. Uses the GPU and 2 CPU cores (torch 1
# thread; validation runs on the CPU). Log, card, policy and train_log.csv come back in
# $OUT/deeprmrl.tar.gz. Run from the repo root with PYTHONPATH=$PWD/src; BUDGET_S (default 400)
# is the wall time.
#   OUT=/tmp/x BUDGET_S=300 DEVICE=cpu JOBSETS=2 VAL_JOBSETS=1 VALIDATE_EVERY=5 \
#     bash benchmarks/device/deeprmrl.sh
# (a rehearsal on the CPU)
set -u
: "${OUT:?set OUT}"
BUDGET_S=${BUDGET_S:-400}
DEVICE=${DEVICE:-cuda}
JOBSETS=${JOBSETS:-100}
VAL_JOBSETS=${VAL_JOBSETS:-10}
VALIDATE_EVERY=${VALIDATE_EVERY:-20}
PY=${PYTHON:-python}
command -v "$PY" >/dev/null || PY=python3
start=$(date -u +%s)
work=$(mktemp -d)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
{
  echo "start $(date -u +%FT%TZ) budget ${BUDGET_S}s device $DEVICE jobsets $JOBSETS"
  nproc; uptime; "$PY" -V; git log -1 --oneline 2>/dev/null; nvidia-smi -L 2>/dev/null
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
} > "$work/machine.txt" 2>&1

# 1. DeepRM's CUDA tests (they skip without a GPU): at most 60 s
timeout 60 "$PY" -m pytest -m cuda -q -p no:cacheprovider -rA \
  tests/rl/test_deeprm_batched.py > "$work/cuda_tests.log" 2>&1
echo "cuda tests exit $?" >> "$work/machine.txt"

# 2. the paper run, from the shipped network, for what is left (the last validation and saving: 70 s)
left=$((BUDGET_S - ($(date -u +%s) - start) - 15))
minutes=$(awk -v s="$left" 'BEGIN { m = (s - 70) / 60; printf "%.2f", (m < 1 ? 1 : m) }')
echo "training ${minutes} min from $(date -u +%T)" >> "$work/machine.txt"
timeout "$((left > 5 ? left : 5))" "$PY" -m dlsched train deeprm --paper --device "$DEVICE" \
  --init-from src/dlsched/papers/deeprm/policies/paper --jobsets "$JOBSETS" --workers 1 \
  --max-minutes "$minutes" --validate-every "$VALIDATE_EVERY" --validation-jobsets "$VAL_JOBSETS" --seed 0 \
  --out "$work/run" > "$work/train_stdout.log" 2>&1
echo "train exit $? at $(date -u +%FT%TZ)" >> "$work/machine.txt"
tr '\r' '\n' < "$work/train_stdout.log" | tail -20 > "$work/train_tail.log"

mkdir -p "$OUT"
tar czf "$OUT/deeprmrl.tar.gz" -C "$work" .
rm -rf "$work"
