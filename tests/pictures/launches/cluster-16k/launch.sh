#!/bin/bash
# A 16,384-GPU run (2,048 nodes of 8 H100) for the pictures' tests: TP8 x CP2 (the tp-cp group of 16
# leaves the node), PP16 with 4 virtual stages, DP64.
GPUS_PER_NODE=8
NNODES=2048
torchrun --nnodes $NNODES --nproc-per-node $GPUS_PER_NODE --node-rank 0 \
    --master-addr head-0 --master-port 29500 \
    pretrain_gpt.py \
    --tensor-model-parallel-size 8 \
    --context-parallel-size 2 \
    --pipeline-model-parallel-size 16 \
    --num-layers-per-virtual-pipeline-stage 2 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --num-layers 128 \
    --hidden-size 16384 \
    --ffn-hidden-size 53248 \
    --num-attention-heads 128 \
    --group-query-attention --num-query-groups 8 \
    --swiglu --untie-embeddings-and-output-weights \
    --seq-length 8192 --max-position-embeddings 8192 \
    --micro-batch-size 1 --global-batch-size 2048 \
    --bf16 \
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt \
    --data-path corpus_text_document
