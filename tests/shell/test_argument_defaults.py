"""`X=$2` then `if [ -z "$X" ]; then X=3; fi`: with no arguments given, X is the guard's value, the same
default as `X=${2:-3}` (marked as a default an argument overrides); a condition on anything else stays
undecided."""

import pytest

from plint.reading.shell.model import Word


def piece(result, name):
    (p,) = result.variables[name].value
    return p


@pytest.mark.parametrize(
    "guard",
    [
        'if [ -z "$STAGE" ]; then STAGE=3; fi',
        'if [ "$STAGE" == "" ]; then\n    STAGE=3\nfi',
        'if [ "$STAGE" = "" ]; then STAGE=3; fi',
        'if [ "" = "$STAGE" ]; then STAGE=3; fi',
        "if [[ -z $STAGE ]]; then STAGE=3; fi",
        'if [[ $STAGE == "" ]]; then STAGE=3; fi',
        'if test -z "$STAGE"; then STAGE=3; fi',
        'test "$STAGE" = "" && STAGE=3',
        '[ -z "$STAGE" ] && STAGE=3',
    ],
)
def test_guard_on_an_unset_positional_parameter_is_its_default(run, guard):
    r = run(f"STAGE=$2\n{guard}\ncmd --zero_stage $STAGE\n")
    braced = run("STAGE=${2:-3}\ncmd --zero_stage $STAGE\n")
    got, expected = piece(r, "STAGE"), piece(braced, "STAGE")
    assert (
        (got.text, got.origin, got.default_of)
        == (expected.text, expected.origin, expected.default_of)
        == ("3", "literal", "2")
    )
    assert r.commands[-1].words[-1].text == "3" and not r.commands[-1].conditions


def test_a_given_argument_overrides_the_guard(run):
    r = run(
        'STAGE=$2\nif [ "$STAGE" == "" ]; then STAGE=3; fi\n',
        positional=[Word.of("out", origin="env"), Word.of("1", origin="env")],
    )
    assert (piece(r, "STAGE").text, piece(r, "STAGE").origin) == ("1", "env")


def test_guard_on_a_value_beyond_the_parameter_keeps_it(run):
    r = run('STAGE="x$2"\nif [ "$STAGE" == "" ]; then STAGE=3; fi\n')  # never empty: the guard is false
    assert [p.text for p in r.variables["STAGE"].value] == ["x", None]


def test_branch_that_assigns_something_else_stays_undecided(run):
    r = run('STAGE=$2\nif [ "$STAGE" == "" ]; then Z=3; fi\n')
    assert piece(r, "Z").text is None and set(piece(r, "Z").alternatives) == {"3", "<unset>"}


def test_comparison_with_a_word_stays_undecided(run):
    r = run('STAGE=$2\nif [ "$STAGE" == "2" ]; then STAGE=3; fi\n')
    assert piece(r, "STAGE").text is None and set(piece(r, "STAGE").alternatives) == {"3", "${2}"}


def test_condition_on_another_variable_stays_unknown(run):
    r = run('STAGE=$2\nif [ -z "$OTHER" ]; then STAGE=3; fi\n')
    p = piece(r, "STAGE")
    assert p.text is None and set(p.alternatives) == {"3", "${2}"}


def test_not_empty_comparison_keeps_the_unset_parameter(run):
    r = run('STAGE=$2\nif [ "$STAGE" != "" ]; then STAGE=3; fi\n')
    p = piece(r, "STAGE")
    assert p.text is None and p.reason == "positional parameter $2 is not given"


def test_empty_comparison_on_an_unset_variable_is_like_minus_z(run):
    # the same as `[ -z "$NODES" ]` (issue 26): the guard's value stands, the environment may override it
    r = run('if [ "$NODES" = "" ]; then NODES=4; fi\n')
    assert piece(r, "NODES").text == "4"


@pytest.mark.parametrize(
    "guard",
    [
        'if [ -n "${6}" ]; then\n    BATCH=$6;\nfi',
        'if [ ! -z "$6" ]; then BATCH="$6"; fi',
        'if [ "$6" != "" ]; then BATCH=${6}; fi',
        '[ -n "$6" ] && BATCH=$6',
    ],
)
def test_a_guard_that_assigns_the_argument_it_tests_keeps_the_default(run, guard):
    # failed before: the test of $6 was undecided and BATCH either ${6} or 16 (MegaBlocks' exp/ scripts)
    r = run(f"BATCH=16\n{guard}\ncmd --micro-batch-size $BATCH\n")
    braced = run("BATCH=${6:-16}\ncmd --micro-batch-size $BATCH\n")
    got, expected = piece(r, "BATCH"), piece(braced, "BATCH")
    assert (
        (got.text, got.origin, got.default_of)
        == (expected.text, expected.origin, expected.default_of)
        == (
            "16",
            "literal",
            "6",
        )
    )
    assert r.commands[-1].words[-1].text == "16" and not r.commands[-1].conditions


def test_a_given_argument_overrides_a_guard_that_assigns_it(run):
    given = [Word.of(v, origin="env") for v in ("a", "b", "c", "d", "e", "32")]
    r = run('BATCH=16\nif [ -n "$6" ]; then BATCH=$6; fi\n', positional=given)
    assert (piece(r, "BATCH").text, piece(r, "BATCH").origin) == ("32", "env")


def test_a_test_of_an_argument_the_branch_does_not_assign_stays_undecided(run):
    r = run('BATCH=16\nif [ -n "$6" ]; then BATCH=$5; fi\n')
    assert piece(r, "BATCH").text is None


def test_a_branch_that_launches_with_the_argument_stays_undecided(run):
    # both launches are read, each a way through (the argument may be given): the test is no default's guard
    r = run('if [ -n "$1" ]; then\n  CKPT=$1\n  torchrun a.py --load $CKPT\nelse\n  torchrun b.py\nfi\n')
    assert [c.words[1].text for c in r.commands if c.words[0].text == "torchrun"] == ["a.py", "b.py"]
