#!/bin/bash
# A 128-GPU run (16 nodes of 8 H100) for the pictures' tests: TP16 spans two nodes (PL201 says so; the
# picture draws each group of 16 as one outline across both), PP4 with 2 virtual stages, DP2.
torchrun --nnodes 16 --nproc-per-node 8 --node-rank 0 --master-addr head-0 --master-port 29500 \
    pretrain_gpt.py \
    --tensor-model-parallel-size 16 \
    --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 4 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --num-layers 32 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 \
    --group-query-attention --num-query-groups 8 --swiglu --untie-embeddings-and-output-weights \
    --seq-length 4096 --max-position-embeddings 4096 \
    --micro-batch-size 1 --global-batch-size 16 \
    --bf16 \
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt \
    --data-path corpus_text_document
