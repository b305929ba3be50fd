"""A launch a branch chooses (`eval "$full_cmd"`, `$LAUNCHER ...`) is read once per way through it."""

from plint.reading.read import read_path
from plint.reading.shell.choices import forced_readings, hidden_choices, same_launch
from plint.reading.shell.evaluator import EvalOptions

MODEL = "--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --global-batch-size 64 --bf16"
EVAL_ON_ARGUMENT = f"""#!/bin/bash
if [ "$1" = "large" ]; then
    full_cmd="torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --micro-batch-size 1 {MODEL}"
elif [ "$1" = "medium" ]; then
    full_cmd="torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 2 {MODEL}"
else
    full_cmd="torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --micro-batch-size 4 {MODEL}"
fi
eval "$full_cmd"
"""


def tps(reading):
    return [layout.fields["parallel.tp"].value for layout in reading.layouts]


def test_each_arm_is_a_launch_and_no_arguments_comes_first(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(EVAL_ON_ARGUMENT)
    reading = read_path(path)
    assert tps(reading) == [1, 4, 2]
    assert reading.layouts[0].conditions == ("the script is run with no arguments",)
    assert reading.layouts[1].conditions == ('if [ "$1" = "large" ] (line 2) is true',)
    assert reading.layouts[0].fields["parallel.tp"].span.line == 7


def test_given_arguments_pick_one_arm(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(EVAL_ON_ARGUMENT)
    assert tps(read_path(path, env={"1": "medium"})) == [2]


def test_branch_on_the_environment_puts_the_else_arm_first(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(
        'case "$LAUNCHER_KIND" in\n  ds) L="deepspeed --num_gpus 8" ;;\n'
        '  *) L="torchrun --nproc_per_node 4" ;;\nesac\n'
        f"$L pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 1 {MODEL}\n"
    )
    reading = read_path(path)
    assert [layout.fields["launcher"].value for layout in reading.layouts] == ["torchrun", "deepspeed"]
    assert [layout.fields["cluster.gpus_per_node"].value for layout in reading.layouts] == [4, 8]


def test_values_merged_by_a_branch_stay_one_reading(tmp_path):
    # the launch is written once; only a value depends on the argument: one layout, that value unknown
    path = tmp_path / "launch.sh"
    path.write_text(
        f'case "$1" in short) MBS=2 ;; long) MBS=1 ;; esac\n'
        f"torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size $MBS {MODEL}\n"
    )
    reading = read_path(path)
    assert len(reading.layouts) == 1 and reading.layouts[0].fields["batch.micro"].value is None


def test_hidden_choices_and_forced_readings(run):
    r = run('if [ "$1" = a ]; then C="torchrun a.py"; else C="torchrun b.py"; fi\neval "$C"\n')
    (choice,) = hidden_choices(r)
    assert choice.on_arguments and choice.count == 2 and choice.fallback == 1
    assert forced_readings([choice]) == [{choice.key: 1}, {choice.key: 0}]
    forced = run(
        'if [ "$1" = a ]; then C="torchrun a.py"; else C="torchrun b.py"; fi\neval "$C"\n', choices={choice.key: 0}
    )
    assert [c.argv() for c in forced.commands if c.name == "torchrun"] == [["torchrun", "a.py"]]
    assert forced.chosen == ['if [ "$1" = a ] (line 1) is true']


def test_a_merge_that_hides_nothing_is_not_a_choice(run):
    r = run('if [ "$1" = a ]; then X=1; else X=2; fi\ntorchrun x.py --x $X\n')
    assert hidden_choices(r) == []


def test_same_launch_is_the_same_command_with_words_written_at_the_same_place(run):
    script = (
        'if [ "$1" = a ]; then L="torchrun --nproc_per_node 4"; else L="torchrun --nproc_per_node 8"; fi\n'
        "$L x.py --save /ckpt/$1 $1\n"
    )
    (choice,) = hidden_choices(run(script))
    forced = [next(c for c in run(script, choices={choice.key: i}).commands if c.name == "torchrun") for i in (0, 1)]
    no_arguments = next(c for c in run(script, positional=[]).commands if c.name == "torchrun")
    assert not same_launch(forced[0], forced[1])
    assert same_launch(no_arguments, forced[1]) and not same_launch(no_arguments, forced[0])


def test_two_branches_on_the_same_argument_give_one_layout_per_launch(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(
        'if [ "$1" = sft ]; then CFG=empty.json; else CFG=ds.json; fi\n'
        'if [ "$1" = sft ]; then task="deepspeed finetune.py"; else task="deepspeed pretrain_gpt.py"; fi\n'
        f'full_cmd="$task --tensor-model-parallel-size 2 --micro-batch-size 1 {MODEL}"\neval "$full_cmd"\n'
    )
    reading = read_path(path)
    # (a converter, `deepspeed convert.py`, trains nothing and is no launch: tests/sources/test_launchers.py)
    assert [str(layout.fields["entrypoint"].value) for layout in reading.layouts] == ["pretrain_gpt.py", "finetune.py"]


def test_options_default_to_no_choice():
    assert EvalOptions().choices == {}


LOOP_THEN_BRANCHED_STRING = f"""#!/bin/bash
for opt in $*; do
    if [[ $opt == --backend=* ]]; then backend=${{opt#*=}}
    elif [[ $opt == --bind=* ]]; then bind=${{opt#*=}}; fi
done
BACKEND=${{backend:-plain}}
if [[ "$BACKEND" == "plain" ]]; then
    RUN="python pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 1 {MODEL}"
elif [[ "$BACKEND" == "torchrun" ]]; then
    RUN="torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 --micro-batch-size 1 {MODEL}"
else
    exit 1
fi
if [[ $TRACE == "on" ]]; then
    RUN+=" --profile"
elif [[ $TRACE == "nsys" ]]; then
    RUN="nsys profile $RUN"
fi
if [[ "$BACKEND" == "plain" ]]; then
    $bind $LOCAL_RANK $RUN
else
    $RUN
fi
"""


def test_a_branch_after_an_argument_loop_is_read_arm_by_arm_with_no_arguments(tmp_path):
    # with no arguments the loop runs no time (BACKEND=plain); only the $TRACE branch (the environment's),
    # whose arms start $RUN differently, hides the command: its arms are read before plint falls back to reading the loop undecided, where
    # BACKEND, and so the whole command, would be unknown
    path = tmp_path / "launch.sh"
    path.write_text(LOOP_THEN_BRANCHED_STRING)
    reading = read_path(path)
    assert tps(reading)[0] == 2
    assert reading.layouts[0].fields["launcher"].value is None
