#!/usr/bin/env bash
# Issue 29, SCED² part (helper sched2x), on the device machine's CPU cores 7-9 (no GPU): three
# `train sched2 --paper --reward incremental` runs side by side, one core each, for BUDGET_S
# less a margin — the replay-priority A/B on the same seed plus a second seed of the fix:
#   max_s1: new transitions at the largest priority ever set (the paper's PER; the control),
#   td_s1:  new transitions at their own |TD error| (--replay-priority td), same seed,
#   td_s2:  the same as td_s1, seed 2 (the seed-to-seed spread).
# Then benchmarks/sched2_dqn_diagnose.py on each best network (validation traces only).
# One file back: $OUT/sched2x.tar.gz (logs, progress rows, train logs, cards, best networks).
#
#   OUT=/tmp/x BUDGET_S=70 SCHED2X_EXTRA="--set num_jobs=60 --set num_envs=4 \
#       --set learning_starts=200 --set eval_every=4" SCHED2X_JOBS=60 \
#       bash benchmarks/device/sched2x.sh                                 # rehearsal here
set -u
OUT=${OUT:?set OUT}
BUDGET_S=${BUDGET_S:-400}
PY=${PY:-python3}
[ -x .venv/bin/python ] && [ "$PY" = python3 ] && PY=.venv/bin/python
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
WORK=$(mktemp -d /tmp/sched2x.XXXXXX)
TRAIN_S=$(( BUDGET_S - 110 ))   # the rest: start-up, the last validation, diagnosis, packing
[ "$TRAIN_S" -lt 10 ] && TRAIN_S=10
echo "start $(date -u +%T) budget ${BUDGET_S}s train ${TRAIN_S}s cores $(nproc)" >"$WORK/driver.log"
COMMON="--set device=cpu --set threads=1 --selection-traces 0 ${SCHED2X_EXTRA:-}"
INC="--set reward=incremental --set gamma=0.9 --set reward_scale=1 --set target_update=50"
INC="$INC --set updates_per_step=2"   # = paper.INCREMENTAL
declare -A VARIANTS=(
    [max_s1]="$INC --set new_priority=max --set seed=1"
    [td_s1]="$INC --set new_priority=td --set seed=1"
    [td_s2]="$INC --set new_priority=td --set seed=2"
)
for name in "${!VARIANTS[@]}"; do
    # shellcheck disable=SC2086
    timeout $(( BUDGET_S - 45 )) $PY benchmarks/device/sched2rl_train.py --out "$WORK/$name" \
        --budget "$TRAIN_S" $COMMON ${VARIANTS[$name]} >"$WORK/$name.log" 2>&1 &
done
wait
echo "trained $(date -u +%T)" >>"$WORK/driver.log"
for name in "${!VARIANTS[@]}"; do
    [ -f "$WORK/$name/policy.pt" ] || continue
    timeout 35 $PY benchmarks/sched2_dqn_diagnose.py --policy "$WORK/$name" \
        --jobs "${SCHED2X_JOBS:-1000}" --json "$WORK/$name.diag.json" >"$WORK/$name.diag" 2>&1 &
done
wait
echo "end $(date -u +%T)" >>"$WORK/driver.log"
mkdir -p "$OUT"
tar czf "$OUT/sched2x.tar.gz" -C "$WORK" --exclude='*/last' .
ls -la "$OUT/sched2x.tar.gz"
