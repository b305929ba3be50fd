"""Launches of trainers plint does not know, read for what they are (the fifteenth corpus, written here): a
DeepSpeed trainer's own model-parallel flags, a script that lies beside Megatron-LM but takes none of its flags, a
DeepSpeed config carrying the trainer's own keys, and wrapper scripts that forward their (absent) arguments."""

from plint.checking.check import check_paths

TRAIN = (
    "torchrun --nnodes 1 --nproc-per-node 4 cli/train.py --max_seq_len 2048 --train_steps 10 "
    "--pipe_parallel_size 1 --model_parallel_size {mp} --deepspeed_config ds.json\n"
)
CONFIG = (
    '{"train_micro_batch_size_per_gpu": 1, "train_batch_size": 32, "lora": {"r": 8}, "warmup": 100,\n'
    ' "zero_optimisation": {"stage": 1}, "reduce_bucket_size": 5e8}\n'
)


def _check(tmp_path, files: dict[str, str], main: str):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / main], root=str(tmp_path))
    return result


def test_a_trainers_own_model_parallel_size_leaves_dp_unknown(tmp_path):
    # fail before: "dp = world size (no model parallelism)" = 4 beside --model_parallel_size 4
    result = _check(tmp_path, {"run.sh": TRAIN.format(mp=4), "ds.json": CONFIG}, "run.sh")
    dp = result.layouts[0].get("parallel.dp")
    assert dp.value is None and "--model_parallel_size 4" in dp.note
    one = _check(tmp_path, {"run.sh": TRAIN.format(mp=1)}, "run.sh")
    assert one.layouts[0].value("parallel.dp") == 4  # a model-parallel size of 1 is none


def test_deepspeed_keys_near_none_are_warnings_and_misspellings_errors(tmp_path):
    # fail before: "lora" and "warmup" (the trainer's own keys, read from the same file) were errors
    result = _check(tmp_path, {"run.sh": TRAIN.format(mp=1), "ds.json": CONFIG}, "run.sh")
    found = {d.message.split('"')[1]: d.severity for d in result.diagnostics if d.code == "PL504"}
    assert found == {
        "lora": "warning",
        "warmup": "warning",
        "zero_optimisation": "error",
        "reduce_bucket_size": "error",
    }
    misplaced = next(d for d in result.diagnostics if "reduce_bucket_size" in d.message)
    assert 'a key of "zero_optimization"' in misplaced.message


def test_a_script_beside_megatron_given_none_of_its_flags_is_no_megatron_launch(tmp_path):
    # fail before: trainer megatron, and tp 1, micro 1, global 2 printed as Megatron's defaults
    line = (
        "mpirun -np 2 --map-by ppr:1:node python /work/lab/Megatron-LM/run_simple_mcore_train_loop.py --timestamp 1\n"
    )
    result = _check(tmp_path, {"job.sh": line}, "job.sh")
    assert result.layouts[0].value("trainer") == "unknown" and result.layouts[0].value("parallel.tp") is None
    flagged = line.replace("--timestamp 1", "--tensor-model-parallel-size 2 --num-layers 2 --train-iters 5")
    assert _check(tmp_path, {"job.sh": flagged}, "job.sh").layouts[0].value("trainer") == "megatron"


SUBMIT = """#!/bin/bash
SIZE=$1
shift
TP=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --iters) ITERS=$2; shift 2;;
    --tp) TP=$2; shift 2;;
    *) exit 1;;
  esac
done
torchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2 --hidden-size 64 \\
    --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32 --train-iters $ITERS
"""


def test_a_wrapper_run_with_no_arguments_forwards_none(tmp_path):
    # fail before: `$*` of the wrapper was an unknown argument, and the loop over the submitter's left tp unknown
    for forwarded in ("$*", '"$@"'):
        files = {"submit.sh": SUBMIT, "short.sh": f"#!/bin/bash\nbash submit.sh 1 --iters 2500 {forwarded}\n"}
        layout = _check(tmp_path, files, "short.sh").layouts[0]
        assert (layout.value("parallel.tp"), layout.value("parallel.dp")) == (1, 4)
