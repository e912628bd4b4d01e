#!/usr/bin/env bash
# AUC of MVPO's repair against the exact ALFWorld oracle on a trained policy's own rollouts
# (benchmarks/results/alignment_trained.md): the warm-started encoder policy trained 10 iterations
# (8x8x50, ALFWorld train, seed 0) with MVPO v1 and with form=paper, every batch recorded, then
# every recorded batch scored by benchmarks/alignment.py --run-dir (variants layer on the run's own config).
set -e
cd "$(dirname "$0")/.."
B=.venv/bin
[ -f runs/encoder-warm/warm_start.json ] || nice $B/python -m mvpo_train.encoder_policy --out runs/encoder-warm --threads 1
run() {  # name, estimator kwargs
  nice -n 10 $B/mvpo-train --preset cpu-tiny --policy encoder --model runs/encoder-warm \
    --env-kwargs '{"progress_oracle": true}' --tasks '[]' --max-steps 50 --ppo-epochs 2 \
    --estimator mvpo --estimator-kwargs "$2" --num-groups 8 --group-size 8 --lr 2e-3 \
    --iterations 10 --seed 0 --threads 1 --no-progress --no-tensorboard --record-every 1 \
    --eval-every 0 --save-every 5 --embedding-cache runs/alignment-trained/embeddings.npz \
    --run-dir runs/alignment-trained/$1 > runs/alignment-trained/$1.log 2>&1
}
mkdir -p runs/alignment-trained
run v1 '{"form": "v1"}' &
run seeds '{"form": "paper"}' &
wait
for n in v1 seeds; do
  $B/python benchmarks/alignment.py --run-dir runs/alignment-trained/$n --variant mvpo --variant 'mvpo:lambda_L=0' --variant 'mvpo:form=paper' > runs/alignment-trained/$n.auc.txt 2>&1 || true
done
echo DONE
