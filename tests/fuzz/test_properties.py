"""Hypothesis properties of plint on hostile launches (issue 13): whatever the script or DeepSpeed JSON,
every format comes back without a traceback, JSON and SARIF parse (SARIF validates), output stays under
1 MB, and nothing in the checked folder is written. Each example runs in-process through the fuzzer's
own check (benchmarks/fuzz.py check_case), so a hook the fuzzer runs (--hook) can be added here too."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_loader import check_in_worker, load_fuzz

fuzz = load_fuzz()

NUMBERS = st.one_of(st.integers(-2, 64).map(str), st.sampled_from(fuzz.HUGE), st.integers(10**6, 10**30).map(str))
NAMES = st.sampled_from(["X", "TP", "PP", "GPUS", "NODES", "A"])
ASSIGNMENT = st.builds(
    lambda n, v: f"{n}={v}",
    NAMES,
    st.one_of(
        NUMBERS,
        st.sampled_from(['"$X$X"', '"${A[@]}"', "$((X*X))", "$(nproc)", "${NODES:-2}", '"$X $TP"', "${X//1/22}"]),
    ),
)
NESTING = st.builds(
    lambda k, kind: [
        "$(" * k + "echo 1" + ")" * k,
        "$" + "(" * k + "1" + ")" * k,
        "${Y:-" * k + "1" + "}" * k,
        "(" * k + "echo" + ")" * k,
    ][kind],
    st.integers(1, 3000),
    st.integers(0, 3),
)
CONSTRUCT = st.one_of(
    ASSIGNMENT,
    NESTING.map(lambda t: f"X={t}"),
    st.sampled_from(
        [
            'f() { X="$X$X"; f; }; f',
            'source "$0"',
            'E=\'eval "$E"\'; eval "$E"',
            'export E=\'ssh h eval "$E"\'; ssh h eval "$E"',
            "X=$(echo $X$X | cut -d x -f 1-3,2-)",
            "#PBS -l select=$X:mpiprocs=99999+100000:ncpus=0",
            "X=$(sort -u $PBS_NODEFILE | uniq | wc -l); Y=$(head -n $X < $PBS_NODEFILE)",
            'while true; do X="$X."; done',
            'A=("${A[@]}" "${A[@]}" x)',
            'cat > ds.json <<EOF\n{"train_micro_batch_size_per_gpu": $X}\nEOF',
            "export CUDA_DEVICE_MAX_CONNECTIONS=1",
            "#SBATCH --nodes=$X",
            "set -- $X $X $X",
        ]
    ),
)
FLAGS = st.lists(
    st.tuples(
        st.sampled_from(fuzz.LAUNCH_FLAGS),
        st.one_of(NUMBERS, st.sampled_from(["$X", "$TP", "ds.json", "hostfile", "w0:0,1"])),
    ),
    max_size=30,
)
LAUNCHER = st.sampled_from(
    [
        "torchrun --nproc_per_node $GPUS",
        "deepspeed --hostfile hostfile",
        "deepspeed",
        "python -m torch.distributed.run --nnodes $NODES",
        "srun python",
    ]
)


def _json_value(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "train_batch_size",
                    "train_micro_batch_size_per_gpu",
                    "gradient_accumulation_steps",
                    "zero_optimization",
                    "stage",
                    "bf16",
                    "enabled",
                    "offload_optimizer",
                    "x",
                ]
            ),
            children,
            max_size=5,
        ),
    )


DS_JSON = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(), st.sampled_from(["auto", "cpu", ""])
    ),
    _json_value,
    max_leaves=30,
)


@st.composite
def launches(draw) -> dict[str, bytes]:
    lines = ["#!/bin/bash"] + draw(st.lists(CONSTRUCT, max_size=8))
    flags = " ".join(f"{f} {v}" for f, v in draw(FLAGS))
    lines.append(f"{draw(LAUNCHER)} pretrain_gpt.py --deepspeed_config ds.json {flags}")
    hosts = draw(st.lists(st.tuples(st.sampled_from(["w0", "w1", "w2", "w0"]), NUMBERS), min_size=1, max_size=4))
    return {
        "launch.sh": "\n".join(lines).encode() + b"\n",
        "ds.json": json.dumps(draw(DS_JSON)).encode(),
        "hostfile": "".join(f"{h} slots={n}\n" for h, n in hosts).encode(),
    }


def _holds(tmp_path, files: dict[str, bytes], entry: str) -> None:
    case = tmp_path / "case"
    case.mkdir(exist_ok=True)
    for old in case.iterdir():
        old.unlink()
    for name, data in files.items():
        (case / name).write_bytes(data)
    answer = check_in_worker(case, entry)
    assert answer["problems"] == [], "\n".join(answer["problems"])[:4000]
    assert max(answer["sizes"].values()) < fuzz.MAX_OUTPUT


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(launches())
def test_hostile_launches_give_valid_bounded_output(tmp_path, files):
    _holds(tmp_path, files, "launch.sh")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(DS_JSON.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200))
def test_any_deepspeed_json_alone_gives_valid_bounded_output(tmp_path, data):
    _holds(tmp_path, {"ds_config.json": data}, "ds_config.json")
