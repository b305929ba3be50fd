"""A script generated with known values, in the styles real launch files use, reads back to exactly those values."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plint.checking.check import check_paths

FLAGS = {  # layout field -> Megatron flag
    "parallel.tp": "--tensor-model-parallel-size",
    "parallel.pp": "--pipeline-model-parallel-size",
    "batch.micro": "--micro-batch-size",
    "batch.global": "--global-batch-size",
    "model.num_layers": "--num-layers",
    "model.hidden_size": "--hidden-size",
    "model.num_attention_heads": "--num-attention-heads",
    "model.seq_length": "--seq-length",
}
STYLES = ("inline", "variable", "default", "arith", "array", "string")


@st.composite
def launches(draw):
    gpus = draw(st.sampled_from([1, 2, 4, 8]))
    nodes = draw(st.integers(1, 4))
    tp = draw(st.sampled_from([d for d in (1, 2, 4, 8) if gpus % d == 0]))
    pp = draw(st.sampled_from([d for d in (1, 2, 4) if (gpus * nodes // tp) % d == 0]))
    dp = gpus * nodes // (tp * pp)
    micro = draw(st.integers(1, 4))
    values = {
        "parallel.tp": tp,
        "parallel.pp": pp,
        "batch.micro": micro,
        "batch.global": micro * dp * draw(st.integers(1, 16)),
        "model.num_layers": pp * draw(st.integers(1, 12)),
        "model.hidden_size": 128 * draw(st.integers(1, 64)),
        "model.num_attention_heads": tp * draw(st.integers(1, 8)),
        "model.seq_length": draw(st.sampled_from([1024, 2048, 4096, 8192])),
    }
    styles = {k: draw(st.sampled_from(STYLES)) for k in values}
    node_style = draw(st.sampled_from(["inline", "variable", "default"]))
    return gpus, nodes, values, styles, node_style


def render(gpus, nodes, values, styles, node_style):
    lines = ["#!/bin/bash", "set -euo pipefail", "export CUDA_DEVICE_MAX_CONNECTIONS=1"]
    nnodes = {"inline": str(nodes), "variable": "$NNODES", "default": "${NNODES_IN:-%d}" % nodes}[node_style]
    if node_style == "variable":
        lines.append(f"NNODES={nodes}")
    args, array, string = [], [], []
    for i, (field, value) in enumerate(values.items()):
        flag, style = FLAGS[field], styles[field]
        var = f"V{i}"
        if style == "inline":
            args.append(f"{flag} {value}")
        elif style == "variable":
            lines.append(f"{var}={value}")
            args.append(f'{flag} "${var}"')
        elif style == "default":
            args.append(f"{flag} ${{{var}:-{value}}}")
        elif style == "arith":
            a = next(d for d in (8, 4, 2, 1) if value % d == 0)
            lines.append(f"{var}=$(( {value // a} * {a} ))")
            args.append(f"{flag} ${var}")
        elif style == "array":
            array.append(f"    {flag} {value}")
        else:
            string.append(f"    {flag} {value} \\")
    lines.append("ARR=(\n" + "\n".join(array) + "\n)")
    lines.append('STR="\\\n' + "\n".join(string) + '\n"')
    master = "localhost" if nodes == 1 else "node001"
    lines.append(f"DIST=(--nproc_per_node {gpus} --nnodes {nnodes} --master_addr {master})")
    lines.append('torchrun "${DIST[@]}" pretrain_gpt.py ${ARR[@]} $STR ' + " ".join(args) + " 2>&1 | tee log.txt")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(launches())
def test_generated_launch_reads_back(tmp_path_factory, case):
    gpus, nodes, values, styles, node_style = case
    path = tmp_path_factory.mktemp("gen") / "launch.sh"
    path.write_text(render(*case))
    (result,) = check_paths([path])
    (layout,) = result.layouts
    assert layout.value("cluster.nnodes") == nodes
    assert layout.value("cluster.world_size") == gpus * nodes
    for field, value in values.items():
        got = layout.get(field)
        assert got is not None and got.value == value, (field, styles[field], path.read_text())
        if styles[field] in ("inline", "variable", "default", "array", "string"):
            line = got.span.line
            written = path.read_text().splitlines()[line - 1]
            assert str(value) in written, (field, styles[field], line, written)
    assert layout.value("parallel.dp") == gpus * nodes // (values["parallel.tp"] * values["parallel.pp"])
    # random shapes may truly not fit in memory (PL401); every other error would be a misreading
    assert not [d for d in result.diagnostics if d.severity == "error" and d.code != "PL401"]
