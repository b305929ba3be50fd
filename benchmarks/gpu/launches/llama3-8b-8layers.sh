#!/bin/bash
# Llama 3 8B's layers (8 of its 32) on one GPU, read by plint and run on the device (../README.md)
set -euo pipefail
MEGATRON=${MEGATRON:-/workspace/megatron-lm}
torchrun --nproc-per-node 1 --nnodes 1 --master-port "${PORT:-29500}" "$MEGATRON/pretrain_gpt.py" \
    --num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm \
    --position-embedding-type rope --rotary-base 500000 --untie-embeddings-and-output-weights \
    --disable-bias-linear --attention-dropout 0.0 --hidden-dropout 0.0 \
    --seq-length 4096 --max-position-embeddings 4096 --vocab-size 128256 \
    --micro-batch-size 1 --global-batch-size 4 \
    --bf16 --use-distributed-optimizer --transformer-impl local \
    --no-gradient-accumulation-fusion --no-masked-softmax-fusion --no-rope-fusion --no-persist-layer-norm \
    --mock-data --tokenizer-type NullTokenizer \
    --train-iters 10 --lr 1.0e-4 --min-lr 1.0e-5 --lr-decay-style cosine --lr-warmup-iters 2 \
    --log-interval 1 --eval-iters 0 --eval-interval 1000
