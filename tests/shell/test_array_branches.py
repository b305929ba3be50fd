"""Arrays an undecided if/case leaves (plint.reading.shell.fields.merged_array): what every branch agrees on is
known, and the number of elements only where every branch left as many."""

from tests.shell.shell_helpers import argv

UNDECIDED = 'if [ "$MODE" = big ]; then\n'


def _words(result, name: str = "echo") -> list[str | None]:
    return argv(result, name)[1:]


def _unknown_note(result, name: str = "echo", position: int = 1) -> str:
    cmd = next(c for c in result.commands if c.words and c.words[0].text == name)
    piece = next(p for p in cmd.words[position].pieces if not p.known)
    return piece.reason or ""


def test_branches_of_different_lengths_leave_the_count_unknown(run):
    r = run(
        UNDECIDED + "  GPUS=(0 1 2 3)\nelse\n  GPUS=(0 1 2 3 4 5 6 7)\nfi\necho ${#GPUS[@]} ${GPUS[2]} ${GPUS[5]}\n"
    )
    words = _words(r)
    # bash prints 4 or 8: plint says which branch it depends on, never the 1 of one merged word
    assert words[0] == "${GPUS}" and words[1] == "2" and words[2] == "${GPUS}"
    assert 'depends on if [ "$MODE" = big ] (line 1)' in _unknown_note(r)


def test_branches_of_one_length_keep_the_count_and_the_items_they_agree_on(run):
    r = run(
        UNDECIDED
        + "  G=(0 1 2 3)\n  A=(--fp16 x)\nelse\n  G=(4 5 6 7)\n  A=(--bf16 x)\nfi\necho ${#G[@]} ${A[1]} ${A[0]}\n"
    )
    assert _words(r) == ["4", "x", "${A}"]


def test_an_array_set_in_one_branch_only_is_uncounted(run):
    r = run(UNDECIDED + "  EXTRA=(--fp16 --bf16)\nfi\necho ${#EXTRA[@]}\n")
    assert _words(r) == ["${EXTRA}"]


def test_appending_to_an_uncounted_array_keeps_it_uncounted(run):
    r = run(UNDECIDED + "  A=(a)\nelse\n  A=(a b)\nfi\nA+=(c)\nA[9]=d\necho ${#A[@]} ${A[0]} ${A[3]}\n")
    assert _words(r) == ["${A}", "a", "${A}"]


def test_keyed_branches_merge_element_by_element(run):
    r = run(
        "declare -A C=([tp]=1 [pp]=2)\n" + UNDECIDED + "  C[tp]=4\nfi\necho ${C[pp]} ${#C[@]} ${C[tp]}\n"
        "declare -A D=([tp]=1)\n" + UNDECIDED + "  D[pp]=4\nfi\necho ${#D[@]} ${D[tp]}\n"
    )
    assert argv(r, "echo", 0)[1:] == ["2", "2", "${C}"]
    assert argv(r, "echo", 1)[1:] == ["${D}", "1"]


def test_a_slice_reaching_past_what_the_branches_agree_on_is_unknown(run):
    r = run(UNDECIDED + '  B=(p q r)\nelse\n  B=(p q r s)\nfi\necho "${B[@]:1:2}" "${B[@]:2}"\n')
    assert _words(r) == ["q", "r", "${B}"]


def test_an_unquoted_unknown_output_in_an_array_literal_leaves_it_uncounted(run):
    # at-aaims/forge's LSF jobs: nodes=($(cat $LSB_DJOB_HOSTFILE | sort | uniq)); nnodes=${#nodes[@]}
    r = run(
        "nodes=($(cat $LSB_DJOB_HOSTFILE | sort | uniq))\nH=($(hostname) x)\nA=(a b)\nA+=($(ls) c)\n"
        'Q=("$(ls)" z)\necho ${#nodes[@]} ${#H[@]} ${#A[@]} ${A[1]} ${A[2]} ${#Q[@]}\n'
    )
    words = _words(r)
    assert words[0] == "${nodes}" and "known only at run time" in _unknown_note(r, position=1)
    assert words[1:] == ["2", "${A}", "b", "${A}", "2"]  # a host name is one word; a quoted output is one


def test_an_uncounted_array_stays_uncounted_through_merges_copies_and_writes(run):
    # review of 40bc18c/316a99e, each checked against bash 5.2: wrong known values before
    r = run(
        "nodes=($(cat $HOSTFILE))\n" + UNDECIDED + "  nodes+=(x)\nelse\n  nodes+=(x y)\nfi\necho ${nodes[1]}\n"
        'n5=("${nodes[@]}" extra)\necho ${#n5[@]} ${n5[1]}\n'
        "n3=($(cat $HOSTFILE))\nn3+=([7]=x)\necho ${n3[1]}\n"
        "Q=(a $UNSET_THING b)\necho ${#Q[@]}\n"
    )
    assert [argv(r, "echo", i)[1:] for i in range(4)] == [["${nodes}"], ["${n5}", "${n5}"], ["${n3}"], ["${Q}"]]


def test_branches_of_different_kinds_merge_as_arrays(run):
    r = run(
        UNDECIDED
        + "  C=(a b c)\nelse\n  C=([0]=a [5]=b)\nfi\necho ${#C[@]} ${C[0]}\n"
        + UNDECIDED
        + "  D=(a b c)\nelse\n  D=a\nfi\necho ${#D[@]} ${D[0]}\n"
    )
    assert argv(r, "echo", 0)[1:] == ["${C}", "a"] and argv(r, "echo", 1)[1:] == ["${D}", "a"]


def test_appending_a_word_to_an_array_appends_to_its_first_element(run):
    r = run('A=(a b); A+=x\nG=([2]=p [5]=q); G+=z\nE=(); E+=w\necho "${A[@]}" ${#A[@]} "${G[@]}" "${!G[@]}" ${#E[@]}\n')
    assert _words(r) == ["ax", "b", "2", "z", "p", "q", "0", "2", "5", "1"]  # as bash 5.2 prints them
