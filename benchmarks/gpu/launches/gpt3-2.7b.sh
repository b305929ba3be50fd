#!/bin/bash
# GPT-3 2.7B (all 32 layers) on one GPU with selective recomputation and the default dropout (../README.md)
set -euo pipefail
MEGATRON=${MEGATRON:-/workspace/megatron-lm}
torchrun --nproc-per-node 1 --nnodes 1 --master-port "${PORT:-29500}" "$MEGATRON/pretrain_gpt.py" \
    --num-layers 32 --hidden-size 2560 --num-attention-heads 32 \
    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 50257 \
    --micro-batch-size 2 --global-batch-size 16 --recompute-activations \
    --bf16 --use-distributed-optimizer --transformer-impl local \
    --no-gradient-accumulation-fusion --no-masked-softmax-fusion --no-rope-fusion --no-persist-layer-norm \
    --mock-data --tokenizer-type NullTokenizer \
    --train-iters 10 --lr 1.0e-4 --min-lr 1.0e-5 --lr-decay-style cosine --lr-warmup-iters 2 \
    --log-interval 1 --eval-iters 0 --eval-interval 1000
