#!/usr/bin/env bash
# Issue 29, SCED² part, on the device machine (4 CPU cores, the GPU shared): four variants of
# `train sched2 --paper` side by side, one core each, PyTorch environment + network on CUDA
# (CPU fallback), each for BUDGET_S less a margin; each best network is then run on the
# selection traces 91001-91030 (not the test seeds). One file back: $OUT/sched2rl.tar.gz.
#
#   OUT=/tmp/x BUDGET_S=40 SCHED2RL_EXTRA="--set num_jobs=60 --set num_envs=4 --set \
#       learning_starts=200 --set eval_every=4" bash benchmarks/device/sched2rl.sh  # rehearsal
set -u
OUT=${OUT:?set OUT}
BUDGET_S=${BUDGET_S:-400}
PY=${PY:-python3}
[ -x .venv/bin/python ] && [ "$PY" = python3 ] && PY=.venv/bin/python
WORK=$(mktemp -d /tmp/sched2rl.XXXXXX)
TRAIN_S=$(( BUDGET_S * 60 / 100 ))   # training; the rest: start-up, selection runs, packing
echo "start $(date -u +%T) budget ${BUDGET_S}s train ${TRAIN_S}s" >"$WORK/driver.log"
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
    >>"$WORK/driver.log" 2>&1
# name: PaperConfig overrides. Replay ratio = updates_per_step * 256 / num_envs transitions.
COMMON="--set num_envs=256 --set threads=1 --set eval_every=200"
COMMON="$COMMON ${SCHED2RL_EXTRA:-}"   # a rehearsal shrinks the problem
INC="--set reward=incremental --set reward_scale=1 --set target_update=50 --set updates_per_step=4"
declare -A VARIANTS=(
    [inc_g90]="$INC --set gamma=0.9"
    [inc_g90_s1]="$INC --set gamma=0.9 --set seed=1"
    [inc_g95]="$INC --set gamma=0.95"
    [paper_control]="--set reward=paper --set target_update=500 --set updates_per_step=2"
)
for name in "${!VARIANTS[@]}"; do
    # shellcheck disable=SC2086
    timeout $(( BUDGET_S - 15 )) $PY benchmarks/device/sched2rl_train.py --out "$WORK/$name" \
        --budget "$TRAIN_S" $COMMON ${VARIANTS[$name]} >"$WORK/$name.log" 2>&1 &
done
wait
echo "end $(date -u +%T)" >>"$WORK/driver.log"
nvidia-smi >>"$WORK/driver.log" 2>&1
mkdir -p "$OUT"
tar czf "$OUT/sched2rl.tar.gz" -C "$WORK" --exclude='*/last' .
ls -la "$OUT/sched2rl.tar.gz"
