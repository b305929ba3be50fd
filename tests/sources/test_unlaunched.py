"""Training commands that yield no launch: which count, and why plint says it did not use them."""

import pytest

from plint.reading.read import read_path


def unused(tmp_path, text: str):
    path = tmp_path / "launch.sh"
    path.write_text(text)
    reading = read_path(path)
    return reading, [(u.span.line, u.why) for u in reading.unused_launches]


TRAIN = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2"


@pytest.mark.parametrize(
    "text",
    [
        f"#!/bin/bash\n# {TRAIN}\n",  # a comment
        f'#!/bin/bash\necho "run: {TRAIN}"\n',  # an echo string
        f"#!/bin/bash\nprintf '%s\\n' {TRAIN}\n",
        "#!/bin/bash\npython prepare_data.py --input raw.jsonl\n",  # not a training entry point
        "#!/bin/bash\nsrun hostname\n",  # a scheduler alone is no training
        "#!/bin/bash\npython train_tokenizer.py --vocab 32000\n",  # a train*.py without trainer flags
    ],
)
def test_mentions_do_not_count(tmp_path, text):
    assert unused(tmp_path, text)[1] == []


def test_a_function_never_called(tmp_path):
    _, found = unused(tmp_path, f"#!/bin/bash\ntrain() {{\n  {TRAIN}\n}}\n")
    assert found == [(3, "it is inside function train, which the script never calls")]


def test_a_dead_branch(tmp_path):
    _, found = unused(tmp_path, f'#!/bin/bash\nDEBUG=0\nif [ "$DEBUG" = 1 ]; then\n  {TRAIN}\nfi\n')
    assert found[0][0] == 4 and "branch plint found is never taken" in found[0][1] and "line 3" in found[0][1]


def test_after_exit(tmp_path):
    _, found = unused(tmp_path, "#!/bin/bash\necho usage\nexit 0\ndeepspeed --num_gpus 8 train.py --deepspeed\n")
    assert found == [(4, "the script exits before it (`exit` at line 3)")]


def test_after_an_exit_inside_a_test_the_script_fails(tmp_path):
    # HabanaAI/Megatron-LM's DeepSeek example: its defaults fail its own check, so bash exits before it builds the
    # launch string (it was said to be a string plint could not follow)
    text = f'#!/bin/bash\nLAYERS=61\nPP=2\nif [[ $(( LAYERS % PP )) -ne 0 ]]; then\n  exit 1\nfi\nCMD="{TRAIN}"\n$CMD\n'
    assert unused(tmp_path, text)[1] == [(7, "the script exits before it (`exit` at line 5)")]
    # an exit on one way only (an unknown test) ends nothing: the launch is read
    reading, found = unused(tmp_path, text.replace("LAYERS=61", "LAYERS=$N_LAYERS"))
    assert reading.layouts and not found


def test_megatron_entry_point_with_every_flag_in_arrays_counts(tmp_path):
    """dianaonutu/Megatron-LM-Snellius-venv's jobs: `COMMAND="Megatron-LM/pretrain_gpt.py ${MODEL_ARGS[@]} ..."` run
    by `srun "$LAUNCH_SCRIPT" $COMMAND`, after an `exit` on an empty placeholder: Megatron's own entry point names a
    training run without a written flag (fail before: a silent file)."""
    text = (
        '#!/bin/bash\nexport VENV_PATH=\nif [ -z "$VENV_PATH" ]; then\n  exit 1\nfi\nARGS=(--num-layers 2)\n'
        'COMMAND="Megatron-LM/pretrain_gpt.py ${ARGS[@]}"\nsrun --label "$LAUNCH_SCRIPT" $COMMAND\n'
    )
    assert unused(tmp_path, text)[1] == [(7, "the script exits before it (`exit` at line 4)")]
    # a training-named script of no known trainer still needs a trainer flag
    assert unused(tmp_path, text.replace("Megatron-LM/pretrain_gpt.py", "train_tokenizer.py"))[1] == []


def test_a_command_string_run_whose_script_plint_cannot_read(tmp_path):
    """sfantao/lumi-megatron-lm-scripts' Vega job: `cmd="srun ... singularity exec ... /ceph/.../start_training.sh"`
    then `$cmd`, the script at a path outside the tree with no tail of it inside: PL005 says plint ran the string and
    could not read its script (fail before: a silent file, `start_training.sh` not being named for training)."""
    text = (
        '#!/bin/bash\ncmd="srun -l singularity exec --nv /img.sif /ceph/home/u/proj/scripts/start_training.sh"\n'
        "echo $cmd\n$cmd\n"
    )
    assert unused(tmp_path, text)[1] == [
        (
            2,
            "plint ran it ($cmd, line 4), but the script it runs cannot be read: no such file, and no tail of its "
            "path is a file of the checked tree",
        )
    ]


def test_behind_an_unknown_word(tmp_path):
    # either the launcher reads through the unknown word (a wrapper held in a variable), or PL005's facts name it:
    # never a silent file
    reading, found = unused(tmp_path, "#!/bin/bash\n$LAUNCHER pretrain_gpt.py --tensor-model-parallel-size 2\n")
    assert reading.layouts or (found[0][0] == 2 and "$LAUNCHER" in found[0][1] and "--env LAUNCHER=" in found[0][1])


def test_why_unused_names_the_variable():
    from plint.reading.sources.unlaunched import _why_unused

    why = _why_unused(["${LAUNCHER}", "pretrain_gpt.py", "--num-layers", "2"], 1)
    assert "${LAUNCHER}" in why and "--env LAUNCHER=..." in why
    assert "behind `nsys`" in _why_unused(["nsys", "profile", "torchrun", "train.py"], 2)


def test_python_module_launchers_count(tmp_path):
    _, found = unused(
        tmp_path, "#!/bin/bash\nf() {\n  python3 -u -m torch.distributed.run --nproc_per_node 2 finetune.py\n}\n"
    )
    assert [line for line, _ in found] == [3]


def test_a_file_with_a_launch_records_nothing(tmp_path):
    reading, found = unused(tmp_path, f"#!/bin/bash\n{TRAIN}\ntrain() {{\n  {TRAIN}\n}}\n")
    assert reading.layouts and found == []


def test_pl005_names_each_command_then_counts_the_rest(tmp_path):
    from plint.checking.check import check_paths

    path = tmp_path / "launch.sh"
    path.write_text("#!/bin/bash\nexit 0\n" + "".join(f"{TRAIN} --seed {i}\n" for i in range(5)))
    (result,) = check_paths([path])
    found = [d for d in result.diagnostics if d.code == "PL005"]
    assert [d.line for d in found] == [3, 4, 5, 6]
    assert "exits before it" in found[0].message and found[-1].message.startswith("no training launch found: 2 more")


def test_a_command_string_never_run(tmp_path):
    _, found = unused(tmp_path, f'#!/bin/bash\nif [ "$1" = a ]; then X=1; fi\nCMD="{TRAIN}"\neval "$X"\n')
    assert found == [
        (
            3,
            "it is a command string held in $CMD, and plint could not follow it to a command that "
            "runs it (eval of a value it cannot know, or never run)",
        )
    ]


def test_command_lookup_is_no_launch(tmp_path):
    assert unused(tmp_path, '#!/bin/bash\nif [[ ! -x "$(command -v deepspeed)" ]]; then exit 1; fi\n')[1] == []


def test_installing_a_launcher_is_no_launch(tmp_path):
    text = '#!/bin/bash\nif [ -n "$X" ]; then\n  python3 -m pip install deepspeed\nfi\n'
    assert unused(tmp_path, text)[1] == []


def test_a_data_tool_run_under_srun_is_no_launch_and_draws_no_pl005(tmp_path):
    """MLCommons' GPT-3 reference tokenizes C4 with `srun ... bash -c "python .../preprocess_data_for_megatron.py
    ..."` (fail before: read as a training launch of an unknown trainer, one GPU)."""
    from plint.checking.check import check_paths

    job = tmp_path / "preprocess.sh"
    job.write_text(
        '#!/bin/bash\n#SBATCH --nodes=1\nsrun --container-image img bash -c "python /workspace/NeMo/scripts/'
        'preprocess_data_for_megatron.py --input x.json --output-prefix out --workers 128"\n'
        "srun python tools/merge_datasets.py --input a --output-prefix b\n"
    )
    (result,) = check_paths([job])
    assert result.layouts == [] and [d.code for d in result.diagnostics] == []
    job.write_text("#!/bin/bash\nsrun python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2\n")
    (result,) = check_paths([job])
    assert len(result.layouts) == 1  # a training script under srun is still a launch


def test_a_training_script_plint_cannot_find(tmp_path):
    # Oneflow-Inc/OneAutoTest's benchmark lists: `bash examples/megatron_args_pretrain_gpt2.sh 1 8 ...`, a copy
    # of the script in another checkout
    _, found = unused(
        tmp_path,
        "# 1n8g\nbash examples/megatron_args_pretrain_gpt2.sh 1 8 0 127.0.0.1 8 1\n./scripts/run_finetune.sh\n"
        "bash setup_env.sh\nbash $UNSET/pretrain.sh\n",
    )
    assert [line for line, _ in found] == [2, 3, 5]
    assert "it runs the script megatron_args_pretrain_gpt2.sh, which plint cannot read: no such file" in found[0][1]
    assert "its path is not known statically ($UNSET is not set" in found[2][1]


def test_a_training_script_that_is_there_is_read(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "pretrain_gpt.sh").write_text("echo nothing here\n")
    assert unused(tmp_path, "bash examples/pretrain_gpt.sh\n")[1] == []


def test_a_shells_options_stand_before_the_training_script(tmp_path):
    _, found = unused(tmp_path, "bash -x examples/pretrain_gpt.sh 8\n")
    assert [line for line, _ in found] == [1] and "pretrain_gpt.sh, which plint cannot read" in found[0][1]


def test_a_launch_bash_cannot_run_is_an_error_and_the_no_launch_note_says_why(tmp_path):
    # quangvinh2110/Megatron-DeepSpeed-Training: ENV_ARGS="WANDB_DISABLED=true ..."; $ENV_ARGS torchrun ...
    from plint.checking.check import check_paths

    script = tmp_path / "run.sh"
    script.write_text(
        '#!/bin/bash\nENV_ARGS="WANDB_DISABLED=true NCCL_DEBUG=INFO"\n'
        "$ENV_ARGS torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --tensor-model-parallel-size 2\n"
    )
    (result,) = check_paths([script], root=str(tmp_path))
    codes = {d.code: d for d in result.diagnostics}
    assert codes["PL001"].severity == "error" and codes["PL001"].line == 3
    assert "`WANDB_DISABLED=true` as a command name" in codes["PL001"].message
    assert "bash cannot run it: bash runs `WANDB_DISABLED=true` as a command name" in codes["PL005"].message
    assert not result.layouts
