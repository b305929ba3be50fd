"""Constructs met in repositories nobody working on plint had read (issue 26), each alone.

Fixtures under fixtures/launches cover the larger cases (ds-config-from-repo-root, deepspeed-json-alone,
accelerate-deepspeed-options, hf-trainer-fsdp-torchrun); these are the small ones a finding or one
field shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json


def _check(folder: Path, name: str, text: str) -> dict:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (result,) = check_paths([path])
    return file_json(result)


def test_an_unset_deepspeed_config_path_is_said(tmp_path):
    got = _check(
        tmp_path,
        "launch.sh",
        "deepspeed --num_gpus 2 train.py --deepspeed $DS_CONFIG_PATH --per_device_train_batch_size 2 --bf16\n",
    )
    messages = [d["message"] for d in got["diagnostics"] if d["code"] == "PL002"]
    assert any("DeepSpeed config path is unknown" in m for m in messages), messages
    assert got["layout"]["parallel"]["zero_stage"] is None


def test_a_missing_deepspeed_config_is_said(tmp_path):
    got = _check(
        tmp_path,
        "launch.sh",
        "deepspeed --num_gpus 2 train.py --deepspeed configs/zero2.json --per_device_train_batch_size 2 --bf16\n",
    )
    messages = [d["message"] for d in got["diagnostics"] if d["code"] == "PL002"]
    assert any("configs/zero2.json is neither in the repository" in m for m in messages), messages


def test_an_unknown_script_without_a_precision_flag_has_no_default_precision(tmp_path):
    got = _check(tmp_path, "launch.sh", "torchrun --nproc_per_node 2 finetune.py --per_device_train_batch_size 4\n")
    layout = got["layout"]
    assert layout["trainer"] == "unknown"
    assert layout["precision"] is None
    assert layout["provenance"]["precision"]["origin"] == "unresolved"


def test_a_config_alone_gets_no_auto_warnings(tmp_path):
    got = _check(
        tmp_path,
        "zero3.json",
        '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto",'
        ' "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}\n',
    )
    assert got["layout"]["parallel"]["zero_stage"] == 3
    assert got["layout"]["precision"] is None
    assert [d["code"] for d in got["diagnostics"]] == []


GPT = (
    "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 "
    "--hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
    "--micro-batch-size 2 --global-batch-size 64 --train-iters 1000 --bf16 "
)


def _finding(got: dict, code: str) -> dict:
    return next(d for d in got["diagnostics"] if d["code"] == code)


def test_a_choice_a_fork_defines_warns_and_names_the_fork(tmp_path):
    got = _check(tmp_path, "launch.sh", GPT + "--tokenizer-type TokenizerFromFile\n")
    found = _finding(got, "PL506")
    assert found["severity"] == "warning" and "bigcode-project/Megatron-LM accepts it" in found["message"]


def test_a_choice_no_fork_defines_stays_an_error(tmp_path):
    got = _check(tmp_path, "launch.sh", GPT + "--tokenizer-type TokenizerFromNowhere\n")
    assert _finding(got, "PL506")["severity"] == "error"


def test_a_choice_an_earlier_release_accepted_warns_and_names_the_releases(tmp_path):
    """MindSpeed-LLM's Qwen3 MoE launch: --moe-token-dispatcher-type alltoall_seq, which Megatron-LM 0.10 to 0.12
    listed; against the assumed newest release it is a guess, not an error."""
    got = _check(tmp_path, "launch.sh", GPT + "--num-experts 8 --moe-token-dispatcher-type alltoall_seq\n")
    found = _finding(got, "PL506")
    assert found["severity"] == "warning"
    assert "Megatron-LM 0.10, Megatron-LM 0.11, Megatron-LM 0.12 accept it" in found["message"]


def test_a_choice_the_configured_release_rejects_stays_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.plint]\nmegatron = "0.19"\n')
    got = _check(tmp_path, "launch.sh", GPT + "--num-experts 8 --moe-token-dispatcher-type alltoall_seq\n")
    assert _finding(got, "PL506")["severity"] == "error"


SSH_LOOP = """\
NNODES=`wc -l ${HOSTFILE} | cut -d " " -f1`
i=0
for ip in `cat ${HOSTFILE}`
do
    ssh $ip eval \\
        "cd ${PWD} && export WANDB_MODE=offline && \\
         torchrun --nnodes=${NNODES} --node_rank=${i} --nproc_per_node=8 --master_port=20001 \\
             finetune.py --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --fp16" &
    i=$((i+1))
done
"""


def test_a_launch_run_over_ssh_in_a_string_is_read(tmp_path):
    """FlagAI-Open/Aquila2's finetune.sh: `ssh $ip eval "cd ... && torchrun ..."` for each host of a hostfile. ssh
    joins its command's words and the remote shell parses them again: plint reads the launch inside."""
    layout = _check(tmp_path, "finetune.sh", SSH_LOOP)["layout"]
    assert layout["launcher"] == "torchrun"
    assert layout["entrypoint"] == "finetune.py"
    assert layout["cluster"]["gpus_per_node"] == 8
    assert layout["cluster"]["nnodes"] is None  # the hostfile's line count, known only at run time
    assert layout["batch"]["micro"] == 4 and layout["precision"] == "fp16"


@pytest.mark.parametrize(
    "ssh",
    [
        "ssh node1",
        "ssh -p 22 node1",
        "ssh -p22 -tt node1",
        "ssh -o StrictHostKeyChecking=no -i key node1",
        "ssh -- node1",
    ],
)
def test_ssh_options_and_destination_are_passed_over(tmp_path, ssh):
    got = _check(tmp_path, "launch.sh", f"{ssh} torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 2\n")
    assert got["layout"]["launcher"] == "torchrun" and got["layout"]["cluster"]["gpus_per_node"] == 4


def test_an_ssh_login_without_a_command_launches_nothing(tmp_path):
    assert _check(tmp_path, "launch.sh", "ssh -p 22 node1\nssh -t node2 nvidia-smi\n")["layout"] is None


PDSH = """\
DIR=$(cd "$(dirname "$0")" && pwd)
HOST_LIST=${HOST_LIST:-"10.0.0.1,10.0.0.2"}
IFS=',' read -r -a NODES <<< "${HOST_LIST}"
pdsh OPTIONS "
  export NNODES=${#NODES[@]}
  LOCAL_IP=\\$(hostname -I | awk '{print \\$1}')
  bash ${DIR}/train.sh
"
"""
TRAIN = "torchrun --nnodes $NNODES --nproc_per_node 8 train.py --per_device_train_batch_size 4 --bf16\n"


@pytest.mark.parametrize(
    "options", ['-w "ssh:${HOST_LIST}"', "-R ssh -w ${HOST_LIST}", "-f 2 -N -w${HOST_LIST}", "-w ${HOST_LIST} --"]
)
def test_a_launch_pdsh_runs_on_every_host_is_read(tmp_path, options):
    """kingbackyang/Megatron-LM-witch: `pdsh -w "ssh:$HOSTS" "export NNODES=...; bash train.sh"`. pdsh joins its
    command's words as ssh does and each host's shell parses the string: plint reads the launch inside."""
    (tmp_path / "train.sh").write_text(TRAIN)
    layout = _check(tmp_path, "launch.sh", PDSH.replace("OPTIONS", options))["layout"]
    assert layout["launcher"] == "torchrun" and layout["cluster"]["nnodes"] == 2
    assert layout["cluster"]["world_size"] == 16 and layout["batch"]["micro"] == 4


def test_pdsh_without_a_command_launches_nothing(tmp_path):
    assert _check(tmp_path, "launch.sh", "pdsh -w node[1-2]\npdsh -w node1 -l me\n")["layout"] is None


def test_a_deepspeed_config_with_another_suffix_is_read_as_json(tmp_path):
    """FlagAI-Open/Aquila2 keeps its DeepSpeed config as finetune/7B/ds_zero2.config: checked alone, plint read it
    as a shell script and said nothing. A file whose suffix is neither JSON's nor a shell script's is read by
    what it holds; a shell script under such a name stays one."""
    got = _check(
        tmp_path, "ds_zero2.config", '{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": 2}\n}\n'
    )
    assert got["layout"]["parallel"]["zero_stage"] == 2
    shell = _check(tmp_path, "run.conf", "{ echo start; }\ntorchrun --nproc_per_node 2 train.py --bf16\n")
    assert shell["layout"]["launcher"] == "torchrun"


def _fixed(tmp_path, extra: str) -> str:
    from plint.fixing.fix import fix_paths

    path = tmp_path / "launch.sh"
    path.write_text(GPT + extra + "\n")
    fix_paths([path])
    return path.read_text()


def test_a_misspelt_flag_is_renamed_under_an_assumed_release(tmp_path):
    fixed = _fixed(tmp_path, "--lr-decay-styl cosine")
    assert "--lr-decay-style cosine" in fixed and "--lr-decay-styl " not in fixed


def test_a_fork_flag_is_not_renamed_under_an_assumed_release(tmp_path):
    # Pai-Megatron-Patch's own --rotary-scale-factor is close to core --rotary-scaling-factor: no typo
    assert "--rotary-scale-factor 4" in _fixed(tmp_path, "--rotary-scale-factor 4")


def test_comment_keys_at_the_top_of_a_deepspeed_config_are_no_error(tmp_path):
    got = _check(
        tmp_path,
        "ds.json",
        '{"_comment": "ZeRO-2 for 8 GPUs", "comment": "tuned on A100", "//": "x",\n'
        ' "train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,\n'
        ' "zero_optimization": {"stage": 2, "_comment": "overlap on"}, "bf16": {"enabled": true}}\n',
    )
    found = [(d["code"], d["message"]) for d in got["diagnostics"]]
    # inside zero_optimization (pydantic, extra="forbid") a comment key is still rejected
    assert found == [("PL504", next(m for c, m in found if "zero_optimization._comment" in m))]


def test_a_fork_pipeline_split_flag_turns_the_layer_check_into_a_warning(tmp_path):
    shape = GPT.replace("--num-layers 24", "--num-layers 30").replace(
        "--tensor-model-parallel-size 2", "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4"
    )
    plain = _check(tmp_path / "plain", "launch.sh", shape + "\n")
    assert _finding(plain, "PL103")["severity"] == "error"
    forked = _check(tmp_path / "fork", "launch.sh", shape + "--pipeline-layers-split 7,8,8,7\n")
    found = _finding(forked, "PL103")
    assert found["severity"] == "warning" and "--pipeline-layers-split" in found["message"]


def test_an_entry_script_above_the_launch_is_found_outside_git(tmp_path, monkeypatch):
    # a checkout without .git (a release tarball): the working directory is the checked tree, so the entry
    # script one folder above the launch is read and makes it Megatron-DeepSpeed (it was 'deepspeed')
    (tmp_path / "pretrain_gpt2.py").write_text(
        "from megatron import get_args\nfrom megatron.training import "
        "pretrain\n\nif __name__ == '__main__':\n    pretrain()\n"
    )
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "launch.sh").write_text(
        "deepspeed --num_nodes 1 --num_gpus 1 pretrain_gpt2.py --model-parallel-size 1 --num-layers 24 "
        "--hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --batch-size 4 --fp16 --deepspeed\n"
    )
    monkeypatch.chdir(tmp_path)
    (result,) = check_paths([Path("examples/launch.sh")])
    assert file_json(result)["layout"]["trainer"] == "megatron-deepspeed"


ARGS = (
    "pretrain_gpt.py --tensor-model-parallel-size 4 --num-layers 24 --hidden-size 1024 --num-attention-heads 16 "
    "--seq-length 2048 --micro-batch-size 1 --global-batch-size 64 --train-iters 10 --bf16"
)


@pytest.mark.parametrize(
    "files",
    [
        # a wrapper function of the script that ends in the launcher with "$@" (read before issue 26 too)
        {
            "launch.sh": 'run() {\n  export NCCL_DEBUG=WARN\n  srun --nodes 2 --ntasks-per-node 8 python "$@"\n}\nrun '
            + ARGS
            + "\n"
        },
        # a site launcher that takes the command as a string (read before issue 26 too)
        {
            "launch.sh": 'bash scripts/launcher.sh "python ' + ARGS + '"\n',
            "scripts/launcher.sh": 'CMD="$1"\nsrun --nodes 2 --ntasks-per-node 8 bash -c "$CMD"\n',
        },
        # a wrapper script run by its path, ending in exec python "$@" (was not followed: PL005)
        {
            "launch.sh": "srun --nodes 2 --ntasks-per-node 8 scripts/run_python.sh " + ARGS + "\n",
            "scripts/run_python.sh": 'export NCCL_DEBUG=WARN\nexec python -u "$@"\n',
        },
    ],
    ids=["function", "command-string", "script-by-path"],
)
def test_the_arguments_are_followed_into_the_repository(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("#!/bin/bash\n" + text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    layout = file_json(result)["layout"]
    assert (layout["cluster"]["world_size"], layout["parallel"]["tp"], layout["parallel"]["dp"]) == (16, 4, 4)


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("${MEGATRON}/pretrain_gpt.py", ("pretrain_gpt.py", "derived")),
        ("${TRAIN_FILE}", (None, "unresolved")),
        ("pretrain_${KIND}.py", (None, "unresolved")),
        ("${ROOT}/train_${KIND}.py", (None, "unresolved")),
    ],
)
def test_an_entry_script_named_at_run_time_is_unknown_unless_its_file_name_is_written(tmp_path, entry, expected):
    # failed before: a word wholly known only at run time (liquid's `TRAIN_SCRIPT=${TRAIN_FILE}`, set after it)
    # was printed as the entry script's derived name, "${TRAIN_FILE}"
    layout = _check(tmp_path, "launch.sh", f"#!/bin/bash\ntorchrun --nproc_per_node 8 {entry} --lr 1e-4\n")
    layout = layout["layout"]
    assert (layout["entrypoint"], layout["provenance"]["entrypoint"]["origin"]) == expected


def test_options_appended_under_six_unknown_conditions_say_which_flags_they_may_hold(tmp_path):
    # 2**6 ways through six `if [ ! -z "$X" ]; then options="$options --flag"; fi`: the zero-bubble fork's
    # examples build their options so (fail before: past 16 spellings the tail could hold any flag, so every
    # trainer default, cp and the ffn size among them, was unknown)
    appends = "".join(f'if [ ! -z "$X{i}" ]; then options="$options --opt-{i}"; fi\n' for i in range(5))
    text = (
        '#!/bin/bash\noptions="--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 '
        '--max-position-embeddings 128 --micro-batch-size 1"\n'
        f'{appends}if [ -z "$FP32" ]; then options="$options --fp16"; fi\n'
        "torchrun --nproc_per_node 8 pretrain_gpt.py $options\n"
    )
    layout = _check(tmp_path, "launch.sh", text)["layout"]
    assert (layout["parallel"]["cp"], layout["model"]["ffn_hidden_size"]) == (1, 1024)
    note = layout["provenance"]["precision"]["note"]
    assert "may hold --fp16, --opt-0, --opt-1, --opt-2, --opt-3, --opt-4 " in note


@pytest.mark.parametrize("lookup", ["command -v deepspeed || true", "which deepspeed", "type -P deepspeed"])
def test_a_launcher_found_on_path_by_the_script_is_that_launcher(tmp_path, lookup):
    # liuhanzuo/MiniLLM: `DEEPSPEED_BIN=${DEEPSPEED_BIN:-$(command -v deepspeed || true)}`, then `"$DEEPSPEED_BIN"
    # --hostfile ...` when it is not empty: the launch runs the deepspeed bash finds (assumed installed)
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}\n')
    got = _check(
        tmp_path,
        "launch.sh",
        f'D=${{D:-$({lookup})}}\nif [[ -n "$D" ]]; then\n  "$D" --num_gpus 4 train.py --deepspeed ds.json\n'
        'else\n  echo "no deepspeed"; exit 1\nfi\n',
    )["layout"]
    assert (got["launcher"], got["cluster"]["world_size"], got["parallel"]["zero_stage"]) == ("deepspeed", 4, 2)
    assert got["provenance"]["launcher"]["origin"] == "assumed"


def test_a_launcher_looked_up_by_a_variable_name_is_that_launcher(tmp_path):
    # thu-pacman/SmartMoE-AE: `export SCHEDULER_EXEC='srun'`, then `$(which $SCHEDULER_EXEC) $exec_args ./job.sh`
    (tmp_path / "job.sh").write_text(
        "#!/bin/bash\npython pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 256 "
        "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1\n"
    )
    got = _check(
        tmp_path,
        "launch.sh",
        '#!/bin/bash\nSCHED=\'srun\'\nargs=" -N 2"\nargs+=" --ntasks-per-node=8"\n$(which $SCHED) $args ./job.sh\n',
    )["layout"]
    assert (got["launcher"], got["cluster"]["world_size"], got["parallel"]["tp"]) == ("srun", 16, 2)


def test_a_profiler_option_whose_value_is_known_only_at_run_time_still_wraps_the_launch(tmp_path):
    # oroikono/Megatron-LM-new-attention: `nsys profile ... --output=$NSYS_OUT python -m torch.distributed.run ...`
    # with NSYS_OUT under $SLURM_JOB_ID's folder: the option was taken for the program, and no launch was read
    got = _check(
        tmp_path,
        "launch.sh",
        "LOG_DIR=$MEGATRON_DIR/logs/p-$SLURM_JOB_ID\nNSYS_OUT=$LOG_DIR/nsight\n"
        "nsys profile --sample=none --trace=cuda,nvtx --output=$NSYS_OUT \\\n"
        "  python -m torch.distributed.run --nproc_per_node=4 pretrain_gpt.py --num-layers 2\n",
    )["layout"]
    assert (got["launcher"], got["cluster"]["world_size"], got["entrypoint"]) == ("torchrun", 4, "pretrain_gpt.py")
