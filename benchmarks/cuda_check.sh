#!/usr/bin/env bash
# Issue 29's GPU checks in one run on a CUDA machine (the device tool's one prepared script):
# every test marked `cuda`, DeepRM's environment steps a second (CPU and GPU side by side) and a
# paper-scale `train deeprm --paper --device cuda` run; logs and the policy under $OUT.
#
#   OUT=/tmp/cuda_check TRAIN_MINUTES=5 bash benchmarks/cuda_check.sh      # on the GPU machine
#   OUT=/tmp/cc DEVICE=cpu TRAIN_MINUTES=0.5 JOBSETS=4 bash benchmarks/cuda_check.sh   # rehearsal
#
# Missing Python packages travel as wheels in .whl/ (see the device notes); installed to /tmp/site.
set -u
OUT=${OUT:-/tmp/cuda_check}
DEVICE=${DEVICE:-cuda}
TRAIN_MINUTES=${TRAIN_MINUTES:-5}
JOBSETS=${JOBSETS:-100}
PY=${PY:-python3}
mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
{
    date -u
    git log -1 --oneline 2>/dev/null
    nvidia-smi -L 2>/dev/null
    $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    nproc
} 2>&1 | tee "$OUT/machine.txt"

echo "== tests marked cuda"
mapfile -t FILES < <(grep -rl "mark.cuda" tests --include='*.py')
timeout 150 $PY -m pytest -m cuda -q -p no:cacheprovider -rA "${FILES[@]}" 2>&1 |
    tee "$OUT/cuda_tests.log" | tail -15

echo "== environment steps a second"
timeout 75 $PY benchmarks/env_steps.py --only deeprm --seconds 6 --deeprm-batch "${DEEPRM_BATCH:-2000}" 2>&1 | tee "$OUT/env_steps.log"

echo "== paper-scale DeepRM training on $DEVICE"
RUN=/tmp/deeprm_paper_run
rm -rf "$RUN"
LIMIT=$($PY -c "print(int(float('$TRAIN_MINUTES') * 60 + 45))")
timeout "$LIMIT" $PY -m dlsched train deeprm --paper --device "$DEVICE" --jobsets "$JOBSETS" \
    --max-minutes "$TRAIN_MINUTES" --validate-every 20 --validation-jobsets 10 --seed 0 \
    --out "$RUN" >"$OUT/train_stdout.log" 2>&1
echo "train exit $?"
tail -12 "$OUT/train_stdout.log"
for f in train_log.csv policy.pt card.json; do
    [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/gpu_$f"
done
ls -la "$OUT"
