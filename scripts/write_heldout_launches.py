"""Write the held-out production launches of benchmarks/heldout/launches.yaml under fixtures/good-heldout/.

    python scripts/write_heldout_launches.py [path/to/launches.yaml]

Each entry is a tuned, published training run that is neither calibration data nor in fixtures/good: its
values were read by hand from the source the entry names (repository, commit, path, recipe or table row) and
labelled before plint ran on it. It becomes fixtures/good-heldout/<id>/launch.sh (fixtures/advised/<id>/ for an
entry under `advised:`, whose finding an expert agrees with) (a multi-node torchrun
launch of pretrain_gpt.py with the model shape, layout, batch and precision written as Megatron-LM flags), a
.plint.toml naming its GPU and network, and, for a Megatron-DeepSpeed run, its ds_config.json. The values
are the publications'; the files are ours. tests/test_good_launches.py holds the labels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "heldout" / "launches.yaml"
OUT = ROOT / "fixtures" / "good-heldout"
ADVISED = ROOT / "fixtures" / "advised"  # the entries under `advised:`, whose finding an expert agrees with


def _lines(entry: dict, models: dict[str, str]) -> list[str]:
    """The trainer flags of one launch, a group a line."""
    seq = entry["seq_length"]
    groups = [
        models[entry["model"]],
        f"--seq-length {seq} --max-position-embeddings {seq}",
        entry["layout"],
        entry.get("data_parallel") or "",
        entry.get("recipe_flags") or "",
        entry["batch"],
        entry["precision"],
    ]
    return [" ".join(group.split()) for group in groups if group.strip()]


def _quoted(line: str) -> str:
    """A flag line as bash words: a value with a shell metacharacter ('type:transformer|embedding') quoted."""
    return " ".join(f"'{word}'" if any(c in word for c in "|&;<>()$`*?") else word for word in line.split())


def launch(entry: dict, models: dict[str, str]) -> str:
    source = entry["source"]
    flags = "\n".join(f"    {_quoted(line)} \\" for line in _lines(entry, models))
    measured = f"\n# Measured: {source['measured']}" if source.get("measured") else ""
    recipe = f" ({source['recipe']})" if source.get("recipe") else ""
    return (
        f"#!/bin/bash\n# {entry['id']}: {source['repo']} {source['commit']}\n# {source['path']}{recipe}{measured}\n"
        "# Written as a launch by scripts/write_heldout_launches.py (values from the source, labelled by hand:\n"
        "# benchmarks/heldout/launches.yaml).\n"
        "set -euo pipefail\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        + "".join(f"export {name}={value}\n" for name, value in (entry.get("env") or {}).items())
        + "\n"
        f'torchrun --nnodes {entry["nodes"]} --nproc_per_node {entry["gpus_per_node"]} --node_rank "$SLURM_NODEID" '
        '--rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:29500" \\\n'
        f"    pretrain_gpt.py \\\n{flags}\n    --train-iters 100000 --lr 1.0e-4\n"
    )


def config(entry: dict) -> str:
    return (
        f'gpu = "{entry["gpu"]}"\nassume = {{ SLURM_NODEID = 0, MASTER_ADDR = "node0" }}\n'
        f"inter-node-bandwidth-gbps = {entry['nic_gbps']:g}\n"
    )


def main(argv: list[str]) -> int:
    data = yaml.safe_load((Path(argv[0]) if argv else DATA).read_text())
    for entry, out in [(e, OUT) for e in data["launches"]] + [(e, ADVISED) for e in data.get("advised") or []]:
        folder = out / entry["id"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "launch.sh").write_text(launch(entry, data["models"]))
        (folder / ".plint.toml").write_text(config(entry))
        if entry.get("ds_config"):
            (folder / "ds_config.json").write_text(json.dumps(entry["ds_config"], indent=2) + "\n")
    advised = len(data.get("advised") or [])
    print(
        f"wrote {len(data['launches'])} launches to {OUT.relative_to(ROOT)}, {advised} to {ADVISED.relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
