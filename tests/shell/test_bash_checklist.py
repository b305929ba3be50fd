"""The bash manual as a checklist (issue 26): each way a script tests, defaults a variable or builds a
command, alone. Those marked "was unread" failed before issue 26; the others guard what already worked."""

import pytest

from shell_helpers import argv, var


def items(result, name):
    return ["".join(p.text or "?" for p in item) for item in result.variables[name].items]


# ---- defaults: a guard that sets the variable it tests is a default, like ${X:-d} -----------------------


@pytest.mark.parametrize(
    "script",
    [
        '[ -z "$TP" ] && TP=4\n',  # was unread
        '[[ -z "$TP" ]] && TP=4\n',  # was unread
        '[ -n "$TP" ] || TP=4\n',  # was unread
        'if [ -z "$TP" ]; then TP=4; fi\n',  # was unread
        'if [[ ! -n "$TP" ]]; then\n  TP=4\nfi\n',  # was unread
        'test -z "$TP" && TP=4\n',  # was unread
        "if [ -z ${TP+x} ]; then TP=4; fi\n",
        ": ${TP:=4}\n",
        "TP=${TP:-4}\n",
        "TP=${TP-4}\n",
    ],
)
def test_default_idioms(run, script):
    assert var(run(script), "TP") == "4"


def test_a_guard_on_another_variable_stays_undecided(run):
    r = run('[ -z "$MODE" ] && TP=4\n')
    assert var(r, "TP") is None


def test_a_guard_never_overrides_what_the_script_set(run):
    assert var(run('TP=2\n[ -z "$TP" ] && TP=4\n'), "TP") == "2"


# ---- tests: [ ] and [[ ]] with their operators ------------------------------------------------------------


@pytest.mark.parametrize(
    "condition, expected",
    [
        ('[ "$M" = llama -o "$M" = gpt ]', "4"),  # was read as false: the grammar nests -o wrongly
        ('[ "$M" = gpt -a "$S" = 7b ]', "4"),  # was read as false
        ('[ "$M" = llama -a "$S" = 7b ]', "2"),
        ('[ ! "$M" = llama ]', "4"),  # was read as false
        ('[ "$M" = llama ] || [ "$S" = 7b ]', "4"),
        ("[[ $M == llama || $S == 7b ]]", "4"),
        ("[[ $M == gpt && $S == 7b ]]", "4"),
        ("[[ ! $M == llama ]]", "4"),  # was read as false: the grammar binds ! to $M
        ("[[ $S =~ ^[0-9]+b$ ]]", "4"),
        ("[[ $M == g* ]]", "4"),
        ("[[ $M == l* ]]", "2"),
        ("(( N > 1 ))", "4"),
        ("(( N > 1 && N < 4 ))", "4"),
        ("[ $N -ge 2 -a $N -le 8 ]", "4"),  # was read as false
    ],
)
def test_conditions(run, condition, expected):
    r = run(f"M=gpt; S=7b; N=2\nif {condition}; then TP=4; else TP=2; fi\n")
    assert var(r, "TP") == expected


# ---- commands built from text --------------------------------------------------------------------------


def test_read_d_empty_takes_a_whole_heredoc(run):  # was unread
    r = run("read -r -d '' CMD <<EOF\ntrain.py \\\n  --tp 4 \\\n  --pp 2\nEOF\ntorchrun $CMD\n")
    assert argv(r, "torchrun") == ["torchrun", "train.py", "--tp", "4", "--pp", "2"]


def test_read_splits_a_here_string(run):  # was unread
    r = run('read -r A B REST <<< "4 2 x y"\n')
    assert (var(r, "A"), var(r, "B"), var(r, "REST")) == ("4", "2", "x y")


def test_read_from_unknown_input_is_unknown(run):
    assert var(run("read -r TP\n"), "TP") is None


def test_cat_heredoc_substitution(run):  # was unread
    r = run("CMD=$(cat <<EOF\ntrain.py --tp 4\nEOF\n)\ntorchrun $CMD\n")
    assert argv(r, "torchrun") == ["torchrun", "train.py", "--tp", "4"]


@pytest.mark.parametrize(
    "script, expected",
    [
        ('printf -v TP "%d" 4\n', "4"),  # was unread
        ('X=4; printf -v TP "%s" "$X"\n', "4"),
        ('printf -v NAME "gpt-%s-tp%02d" 7b 4\n', None),  # NAME below
    ],
)
def test_printf_v(run, script, expected):
    r = run(script)
    if expected is None:
        assert var(r, "NAME") == "gpt-7b-tp04"
    else:
        assert var(r, "TP") == expected


def test_mapfile_from_a_here_string(run):  # was unread
    r = run('mapfile -t SIZES <<< "4\n2"\nTP=${SIZES[0]}\n')
    assert var(r, "TP") == "4" and items(r, "SIZES") == ["4", "2"]


def test_array_built_in_a_loop(run):
    r = run('ARGS=()\nfor kv in "tp 4" "pp 2"; do\n  set -- $kv\n  ARGS+=(--$1 $2)\ndone\ntorchrun x.py "${ARGS[@]}"\n')
    assert argv(r, "torchrun") == ["torchrun", "x.py", "--tp", "4", "--pp", "2"]
