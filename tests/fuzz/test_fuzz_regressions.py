"""Each failure the fuzzer found (benchmarks/fuzz.py, seeds 0 and 1), reduced to its cause and checked the
fuzzer's way: every format and fix --diff, no traceback or internal error, JSON and SARIF valid, output
under 1 MB, no input file written."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_loader import check_in_worker, load_fuzz

fuzz = load_fuzz()
LAUNCH = b"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4\n"
MOE = (  # a whole model shape, so the cost model reads its MoE layers
    b"torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 "
    b"--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8 --num-experts 8"
)

CASES = {
    # a sourced script with an undecodable byte on a line bash -n rejects: the span's encode raised, and
    # the evaluator reported it as "plint could not evaluate the rest of the script (UnicodeEncodeError)"
    "undecodable-byte-in-a-bash-error": {
        "launch.sh": b"source conf.sh\n" + LAUNCH,
        "conf.sh": b"if true; then\nfi \xe6\n",
    },
    # 1,000 copies of a line bash rejects: 2.8 MB of SARIF before the report budget
    "a-thousand-refused-lines": {"launch.sh": b"T=300_000_000_000\n" + b"S=$(( T / 2 ))\n" * 1000 + LAUNCH},
    # 400 copies of a launch line: 400 layouts, 4.5 MB of JSON before the launch budget
    "a-launch-line-repeated": {"launch.sh": LAUNCH * 400},
    # a list where DeepSpeed wants a number, times a huge micro batch: a MemoryError (Hypothesis found it)
    "a-list-times-a-huge-batch": {
        "launch.sh": b"torchrun --nproc_per_node 8 pretrain_gpt.py --deepspeed "
        b"--deepspeed_config ds.json --num-layers 2\n",
        "ds.json": b'{"gradient_accumulation_steps": [[true], []], "train_micro_batch_size_per_gpu": 2755933772}',
    },
    # `$'\ud800'` made a lone surrogate that stopped the evaluator at its next encode (issue 30's fuzzer, seed 1
    # input 2852); bash writes the surrogate's three UTF-8 bytes
    "a-surrogate-escape-in-an-ansi-c-string": {
        "launch.sh": b"CMD=\"torchrun --nproc_per_node 8 pretra$'\\ud800'in_gpt.py\"\neval \"$CMD\"\nY=$'\\udfff'\n"
        + LAUNCH
    },
    # positional arguments doubling in a self-recursive function
    "arguments-doubling": {"launch.sh": b'f() { f "$@" "$@"; }\nf a\n' + LAUNCH},
    # seed 11 input 452: PL603 read a 4,301-digit --num_gpus with int(), past Python's 4,300-digit limit
    "a-gpu-count-past-pythons-digit-limit": {
        "launch.sh": b"export CUDA_VISIBLE_DEVICES=0,1,2,3\ndeepspeed --num_nodes 1 --num_gpus "
        + b"9" * 4301
        + b" pretrain_gpt.py --deepspeed --deepspeed_config ds.json\n",
        "ds.json": b'{"train_batch_size": 8}',
    },
    # --moe-layer-freq read by int() (4,400 digits) and a list repeated 999,999,999 times (a MemoryError)
    "a-moe-layer-pattern-past-any-model": {"launch.sh": MOE + b' --moe-layer-freq "([0]*2+[1]*999999999)"\n'},
    # seed 13 input 1019: PL401's smaller micro-batch searched 450,000,000 micro-batches one by one (12 s)
    "a-micro-batch-of-450-million": {
        "launch.sh": MOE.replace(b"--micro-batch-size 1", b"--micro-batch-size 450000000") + b"\n",
    },
    # PL102 listed every size of a ramp of 3 x 10^11 sizes (a Megatron-DeepSpeed launch, where the ramp runs)
    "a-ramp-of-300-billion-sizes": {
        "launch.sh": b'echo "{}" > ds.json\ndeepspeed --num_gpus 8 '
        + MOE.split(b" ", 3)[3].replace(b"--global-batch-size 8", b"--global-batch-size 300000000000")
        + b" --deepspeed --deepspeed_config ds.json --rampup-batch-size 1 1 1000\n"
    },
    "a-moe-layer-frequency-past-pythons-digit-limit": {"launch.sh": MOE + b" --moe-layer-freq " + b"7" * 4400 + b"\n"},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fuzz_finding_stays_fixed(tmp_path, name):
    for file, data in CASES[name].items():
        (tmp_path / file).write_bytes(data)
    answer = check_in_worker(tmp_path, "launch.sh")
    assert answer["problems"] == [], "\n".join(answer["problems"])[:4000]
    assert max(answer["sizes"].values()) < fuzz.MAX_OUTPUT


def test_a_fingerprint_of_a_message_quoting_undecodable_bytes():
    """Seed 0 case 267: a DeepSpeed key with an undecodable byte ("tr\\xbdain_batch_size") reached PL504's
    message; json, sarif and github output raised UnicodeEncodeError in the fingerprint."""
    from plint.diagnostics import Diagnostic
    from plint.report.common import fingerprint

    d = Diagnostic("PL504", "deepspeed-unknown-key", "error", 'unknown key "tr\udcbdain_batch_size"', "ds.json")
    assert len(fingerprint(d)) == 32 and fingerprint(d) != fingerprint(
        Diagnostic("PL504", "deepspeed-unknown-key", "error", 'unknown key "tr\udcbeain_batch_size"', "ds.json")
    )


def test_a_zero_stage_that_is_a_list_reads_as_no_sharding(tmp_path):
    """Found by the Hypothesis property after the sharding field landed: `"zero_optimization": []` made the
    stage a list, and the layout's sharding lookup raised TypeError (unhashable type)."""
    from plint.checking.check import check_paths

    (tmp_path / "ds.json").write_text('{"train_batch_size": null, "zero_optimization": []}')
    (tmp_path / "launch.sh").write_text("torchrun --nproc_per_node $GPUS pretrain_gpt.py --deepspeed_config ds.json\n")
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert result.layouts and result.layouts[0].value("parallel.sharding") is None


def test_a_node_of_a_hundred_million_gpus_is_not_drawn(tmp_path):
    """Found by the fuzzer (seed 2, case 6234): `torchrun --nproc_per_node 100000000` with a known model drew
    the markdown report's device grid cell by cell (24 GB, 5 minutes). The pictures refuse such counts."""
    from plint.checking.check import check_paths
    from plint.report.markdown import render

    (tmp_path / "launch.sh").write_text(
        "NNODES=2\ntorchrun --nproc_per_node 100000000 --nnodes $NNODES pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
        "--num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 "
        "--global-batch-size 1024 --bf16 --use-distributed-optimizer --train-iters 10\n"
    )
    run = check_paths([tmp_path / "launch.sh"])
    text = render(run.results)
    assert len(text) < 100_000 and "Device grid" not in text


def test_a_deepspeed_size_that_is_an_object_is_no_number(tmp_path):
    """Found by the fuzzer (seed 3, case 897): `"sequence_parallel_size": {}` in the DeepSpeed JSON reached
    the dp arithmetic as a dict (TypeError). Arithmetic takes whole numbers only; anything else is unresolved."""
    from plint.checking.check import check_paths

    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": {}}')
    (tmp_path / "launch.sh").write_text(
        "deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds_config.json\n"
    )
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert result.layouts and result.layouts[0].value("parallel.dp") is None


def test_nested_command_substitutions_are_each_expanded_once(tmp_path):
    """Found by the Hypothesis property in CI (2.6-3.5 CPU s, bound 2): `X=$($($(... echo 1)))` expanded a
    level's command twice (once to try it as a pure command, once for the unresolved piece's words), 2^depth
    expansions in all, until the work budget of 100,000 words stopped the file. Read once a level, 40
    levels is 40 expansions: the launch after it is read, and nothing runs out of budget."""
    from plint.checking.check import check_paths

    nested = "$(" * 40 + "echo 1" + ")" * 40
    (tmp_path / "launch.sh").write_text(f"X={nested}\nY=$($(echo echo 4))\n" + LAUNCH.decode().replace("8", "$Y", 1))
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert not any("plint's work budget" in d.message for d in result.diagnostics)
    assert result.layouts and result.layouts[0].value("cluster.gpus_per_node") == 4


@given(st.integers(1, 60), st.integers(1, 30), st.integers(1, 40), st.integers(1, 40))
def test_a_ramps_indivisible_sizes_are_counted_as_listing_them_would(start, step, steps, unit):
    """PL102 counts a ramp's sizes the micro-batch x dp does not divide from their congruence; it says what
    walking the sizes one by one says, on ramps small enough to walk."""
    from plint.rules.batch_arithmetic import _indivisible_sizes

    stop = start + step * steps
    bad = [b for b in range(start, stop, step) if b % unit]
    assert _indivisible_sizes(start, step, stop, unit) == (bad[:6], len(bad))
