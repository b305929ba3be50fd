"""Loops over the script's arguments: with none given they run no time; with `--env 1=...` they run."""

import pytest

from plint.reading.shell.arguments import getopts_step, only_about_arguments
from plint.reading.shell.model import Word

LOOP = """TP=2
PP=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --tp) TP=$2; shift 2 ;;
        --pp=*) PP=${1#*=}; shift ;;
        *) shift ;;
    esac
done
"""


def text(result, name):
    v = result.variables[name]
    return None if any(not p.known for p in v.value) else "".join(p.text for p in v.value)


def args(*texts):
    return [Word.of(t, origin="env") for t in texts]


def test_while_loop_over_no_arguments_keeps_the_values_before_it(run):
    r = run(LOOP)
    assert (text(r, "TP"), text(r, "PP")) == ("2", "1")
    assert r.variables["TP"].value[0].origin == "literal"
    assert not any(c.conditions for c in r.commands)


def test_while_loop_runs_over_given_arguments(run):
    r = run(LOOP, positional=args("--tp", "4", "--pp=2"))
    assert (text(r, "TP"), text(r, "PP")) == ("4", "2")
    assert r.variables["TP"].value[0].origin == "env"


@pytest.mark.parametrize(
    "loop",
    [
        'for arg in "$@"; do case $arg in --tp=*) TP=${arg#*=} ;; esac; done',
        "for arg; do case $arg in --tp=*) TP=${arg#*=} ;; esac; done",
        'while [ -n "$1" ]; do TP=$1; shift; done',
        "while (( $# )); do TP=$1; shift; done",
        'while getopts "t:p:" opt; do case $opt in t) TP=$OPTARG ;; esac; done',
    ],
)
def test_other_argument_loops_run_no_time_without_arguments(run, loop):
    r = run("TP=2\n" + loop + "\n")
    assert text(r, "TP") == "2"


def test_for_over_arguments_runs_when_given(run):
    r = run('TP=2\nfor arg in "$@"; do case $arg in --tp=*) TP=${arg#*=} ;; esac; done\n', positional=args("--tp=8"))
    assert text(r, "TP") == "8"


def test_getopts_reads_given_arguments(run):
    script = (
        'TP=2; PP=1; SP=0\nwhile getopts ":t:p:s" opt; do\n  case $opt in\n    t) TP=$OPTARG ;;\n'
        "    p) PP=$OPTARG ;;\n    s) SP=1 ;;\n  esac\ndone\nshift $((OPTIND - 1))\n"
    )
    r = run(script, positional=args("-t", "4", "-sp2", "rest"))
    assert (text(r, "TP"), text(r, "PP"), text(r, "SP")) == ("4", "2", "1")
    assert r.variables["TP"].value[0].origin == "env"


def test_function_given_unknown_arguments_keeps_them_not_given(run):
    r = run('parse() {\n  while [[ $# -gt 0 ]]; do TP=$1; shift; done\n}\nTP=2\nparse "$@"\n')
    assert text(r, "TP") == "2"


def test_loop_on_other_unknowns_still_merges(run):
    r = run('TP=2\nwhile [ -n "$UNSET_THING" ]; do TP=$1; shift; done\n')
    assert text(r, "TP") is None


def test_a_branch_on_an_argument_stays_undecided(run):
    r = run('case "$1" in short) SEQ=4096 ;; long) SEQ=16384 ;; esac\n')
    assert text(r, "SEQ") is None


@pytest.mark.parametrize(
    "optstring, words, optind, offset, expected",
    [
        ("t:", ["-t", "4"], 1, 0, (0, "t", "4", 3, 0)),
        ("t:", ["-t4"], 1, 0, (0, "t", "4", 2, 0)),
        ("ab", ["-ab"], 1, 0, (0, "a", None, 1, 2)),
        ("ab", ["-ab"], 1, 2, (0, "b", None, 2, 0)),
        ("ab", ["--", "-a"], 1, 0, (1, "?", None, 2, 0)),
        ("ab", ["file"], 1, 0, (1, "?", None, 1, 0)),
        (":a", ["-x"], 1, 0, (0, "?", "x", 2, 0)),
        ("t:", ["-t", None], 1, 0, (0, "t", None, 3, 0)),  # bash takes the next word, whatever it holds
        ("t:", [None, "4"], 1, 0, (None, None, None, 1, 0)),  # an unknown word may or may not be an option
    ],
)
def test_getopts_step(optstring, words, optind, offset, expected):
    step = getopts_step(optstring, words, optind, offset)
    assert (step.status, step.name, step.optarg, step.optind, step.offset) == expected
    assert step.unknown_optarg == (None in words and expected[0] == 0)  # a value word of unknown text


def test_only_about_arguments():
    assert only_about_arguments(["positional parameter $1 is not given"])
    assert not only_about_arguments(["positional parameter $1 is not given", "$X is not set"])
    assert not only_about_arguments([])


def test_script_that_exits_without_arguments_is_read_with_the_loop_undecided(tmp_path):
    from plint.reading.read import read_path

    path = tmp_path / "launch.sh"
    path.write_text(
        'MODEL=""\nGPUS=8\nwhile [[ $# -gt 0 ]]; do case $1 in --model) MODEL=$2; shift 2 ;; '
        "--gpus) GPUS=$2; shift 2 ;; *) shift ;; esac; done\n"
        'if [ -z "$MODEL" ]; then echo "--model is required"; exit 1; fi\n'
        "torchrun --nproc_per_node $GPUS train.py --model $MODEL\n"
    )
    (layout,) = read_path(path).layouts  # with no arguments bash exits; the launch is still read
    assert layout.fields["cluster.gpus_per_node"].value is None  # an option may set it


def test_no_arguments_option_off_merges_the_loop(run):
    r = run(LOOP, no_arguments=False)
    assert text(r, "TP") is None and not r.argument_loops
    assert run(LOOP).argument_loops


CHILD = """if [ "$#" -ne 3 ]; then echo "usage: $0 TP PP MICRO"; exit 1; fi
TP=$1
PP=$2
MICRO=$3
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP \\
    --pipeline-model-parallel-size $PP --micro-batch-size $MICRO
"""


def _launch_option(result, flag):
    (command,) = [c for c in result.commands if c.words and c.words[0].text == "torchrun"]
    texts = [w.text for w in command.words]
    return texts[texts.index(flag) + 1]


def test_an_unquoted_unknown_argument_makes_the_count_and_the_words_after_it_unknown(run):
    # bash makes `$NUM_GPUS` no argument when it is empty (3 in all: the check passes and $3 is 1) and one or more
    # otherwise (the check fails): $# and every parameter after it are unknown, those before it are read
    r = run("bash child.sh 4 2 $NUM_GPUS 1\n", files={"child.sh": CHILD})
    assert _launch_option(r, "--tensor-model-parallel-size") == "4"
    assert _launch_option(r, "--pipeline-model-parallel-size") == "2"
    assert _launch_option(r, "--micro-batch-size") is None


def test_quoted_or_known_arguments_keep_their_count(run):
    r = run('bash child.sh 4 "$NUM_GPUS" 1\n', files={"child.sh": CHILD})  # one argument, whatever it holds
    assert _launch_option(r, "--micro-batch-size") == "1"
    r = run("bash child.sh 4 2 1 $NUM_GPUS\n", files={"child.sh": CHILD})  # 3 or more: the check may fail
    assert _launch_option(r, "--micro-batch-size") == "1"
    exits = run("bash child.sh 4 2 1 0\n", files={"child.sh": CHILD})  # 4 arguments: the check fails
    assert [c.words[0].text for c in exits.commands] == ["bash", "echo", "exit"]


GETOPTS_CHILD = """H=0
while getopts ":c:H:" opt; do
  case $opt in
    c) C="$OPTARG" ;;
    H) H="$OPTARG" ;;
  esac
done
torchrun --nproc_per_node 8 pretrain_gpt.py --hidden-size $H
"""


def test_getopts_takes_the_next_word_as_the_value_whatever_it_holds(run):
    # mauryaavinash95/Megatron-DeepSpeed: the PBS job picks H by node count (unknown) and passes `-H $H`: the child's
    # getopts gives H that value, not its default 0 (which drew a false PL506 "--hidden-size is 0")
    parent = 'if [[ $(wc -l < $PBS_NODEFILE) == 1 ]]; then H=2560; else H=4096; fi\nbash child.sh -c 0 -H "$H"\n'
    hidden = _launch_option(run(parent, files={"child.sh": GETOPTS_CHILD}), "--hidden-size")
    assert hidden is None  # 2560 or 4096, not 0
    assert _launch_option(run("bash child.sh -H 512\n", files={"child.sh": GETOPTS_CHILD}), "--hidden-size") == "512"


def test_getopts_over_a_word_that_may_be_none_or_several_leaves_the_options_unknown(run):
    r = run("bash child.sh -c 0 -H $(cat hidden.txt)\n", files={"child.sh": GETOPTS_CHILD})
    assert _launch_option(r, "--hidden-size") is None


def test_a_getopts_loop_goes_on_past_options_that_repeat_their_defaults(run):
    # the loop stopped once an iteration's body changed nothing (`-c 0` with C=0 already): the condition had moved
    # OPTIND, so the next option (-H 2560) was never read and --hidden-size kept its default 0 (a false PL506)
    child = "C=0\n" + GETOPTS_CHILD
    assert _launch_option(run("bash child.sh -c 0 -H 2560\n", files={"child.sh": child}), "--hidden-size") == "2560"


ENV_CHILD = "PP=${PP_SIZE:-2}\nMBS=${MBS:-4}\ntorchrun --pipeline-model-parallel-size $PP --micro-batch-size $MBS\n"


@pytest.mark.parametrize(
    "parent, expected",
    [
        # cppmega's presets: `exec env NAME=value ... bash "$(dirname "$0")/body.sh"` (was: the body's own defaults)
        ('exec env PP_SIZE=1 MBS=8 bash "$(dirname "$0")/child.sh"\n', ("1", "8")),
        ("env PP_SIZE=1 bash -c 'bash child.sh'\n", ("1", "4")),
        ("PP_SIZE=1 MBS=8 bash child.sh\n", ("1", "8")),  # prefixes, as before
        ("env -i PP_SIZE=1 bash child.sh\n", ("2", "4")),  # a cleared environment plint does not rebuild: not followed
        ("env PP_SIZE=1 echo hi; bash child.sh\n", ("2", "4")),  # env's variables are for its command only
    ],
)
def test_env_gives_its_variables_to_the_script_it_runs(run, parent, expected):
    r = run(parent, files={"child.sh": ENV_CHILD})
    assert (_launch_option(r, "--pipeline-model-parallel-size"), _launch_option(r, "--micro-batch-size")) == expected
