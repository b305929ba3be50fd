#!/bin/bash
# The device check (README.md beside this file): Megatron-LM's own trainer on the launches in launches/, then
# attention kernels, then the shared kernel table, on one GPU. Run from the repository root with $OUT set and
# .gpu/ prepared (.gpu/mlm: Megatron-LM core_v0.16.1's megatron/ and pretrain_gpt.py with the megatron-core
# 0.16.1 wheel's helpers_cpp; .gpu/gpu_probe.py: ../shared/tools/gpu_probe.py). Every log ends in
# $OUT/probe.tar.gz; the summaries are copied beside it. Arguments name the stages to run (megatron,
# attention, kernels; all by default).
set -uo pipefail
stages=${*:-megatron attention kernels}
here=$(cd "$(dirname "$0")" && pwd)
logs=/tmp/probe
mkdir -p "$logs"
export PATH="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
{ nvidia-smi; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name())'; } >"$logs/machine.txt" 2>&1

export MEGATRON=$PWD/.gpu/mlm PLINT_PROBE=1 CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTHONPATH=$here/site:$MEGATRON${PYTHONPATH:+:$PYTHONPATH}
# helpers_cpp is the wheel's build of the dataset helpers; where make would rebuild it (no python3-config,
# no headers), Megatron's start-up compile is stood in for by a make that does nothing
if ! make -q -C "$MEGATRON/megatron/core/datasets" >/dev/null 2>&1; then
    mkdir -p /tmp/shim && printf '#!/bin/sh\nexit 0\n' >/tmp/shim/make && chmod +x /tmp/shim/make
    export PATH=/tmp/shim:$PATH
    echo "make stood in for" >>"$logs/machine.txt"
fi
port=29500
for launch in "$here"/launches/*.sh; do
    [[ $stages == *megatron* ]] || break
    name=$(basename "$launch" .sh)
    port=$((port + 1))
    start=$(date +%s)
    PORT=$port timeout 80 bash "$launch" >"$logs/$name.log" 2>&1
    rc=$?
    echo "$name rc=$rc wall_s=$(($(date +%s) - start))" >>"$OUT/runs.txt"
    if [ "$rc" -eq 0 ]; then
        grep -E "max allocated|PLINT_PROBE" "$logs/$name.log" | tail -2
    else
        grep -v -i "warn" "$logs/$name.log" | grep -m1 -A24 Traceback | tail -10 | cut -c1-300
    fi
done
[[ $stages == *attention* ]] && PYTHONPATH= timeout 45 python3 "$here/attention_probe.py" >"$OUT/attention.jsonl" 2>"$logs/attention.err"
[[ $stages == *kernels* ]] && PYTHONPATH= timeout 100 python3 .gpu/gpu_probe.py >"$OUT/kernels.jsonl" 2>"$logs/kernels.err"
cat "$OUT/runs.txt"
tar -czf "$OUT/probe.tar.gz" -C /tmp probe
cp "$logs/machine.txt" "$OUT/"
