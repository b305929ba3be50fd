"""Assignments, parameter expansion, quoting, word splitting, arrays and arithmetic, with provenance."""

from plint.reading.shell.model import Piece, Var
from shell_helpers import argv, var


def text(result, name):
    """A scalar variable's value at the end, None when unknown."""
    v = result.variables[name]
    return None if any(not p.known for p in v.value) else "".join(p.text for p in v.value)


def items(result, name):
    return ["".join(p.text or "?" for p in item) for item in result.variables[name].items]


def words(result, name, index=0):
    cmd = [c for c in result.commands if c.name == name][index]
    return cmd.words[1:]


def where(span):
    return (span.line, span.col, span.end_line, span.end_col)


# ---- assignments and declarations ------------------------------------------------------------------


def test_assignments_apply_in_order(run):
    r = run("A=1\nB=$A\nA=2\nC=$A$B\n")
    assert (text(r, "A"), text(r, "B"), text(r, "C")) == ("2", "1", "21")


def test_export_with_value_and_bare_name(run):
    r = run("B=7\nexport A=1 B\nC=3\n")
    assert r.variables["A"].exported and r.variables["B"].exported and not r.variables["C"].exported
    assert text(r, "B") == "7"


def test_declare_flags(run):
    r = run(
        "declare -a ARR=(x y)\ndeclare -x X=1\ndeclare -i N=3+4*2\ndeclare -r R=5\nR=6\nunset R\ndeclare -ix M=2**3\n"
    )
    assert items(r, "ARR") == ["x", "y"]
    assert r.variables["X"].exported
    assert text(r, "N") == "11"  # an integer variable's value is arithmetic
    assert text(r, "R") == "5"  # bash refuses to reassign or unset a readonly variable
    assert text(r, "M") == "8" and r.variables["M"].exported


def test_readonly_and_unset(run):
    r = run("readonly C=3\nX=1\nY=2\nZ=3\nunset X Y\nunset -v Z\nf() { :; }\nunset -f f\nf\n")
    assert text(r, "C") == "3"
    assert not {"X", "Y", "Z"} & set(r.variables)
    assert [c.name for c in r.commands] == ["f"]  # no longer a function: recorded as a plain command


def test_local_is_restored_after_the_function(run):
    r = run("A=outer\nf() { local A=inner B; B=2; X=$A; }\nf\n")
    assert text(r, "A") == "outer" and text(r, "X") == "inner" and "B" not in r.variables


def test_prefix_assignments_belong_to_the_command_not_the_shell(run):
    r = run("X=5\nCUDA_VISIBLE_DEVICES=0,1 OMP=$X python train.py\necho $CUDA_VISIBLE_DEVICES\n")
    cmd = r.commands[0]
    assert cmd.name == "python"
    assert {k: "".join(p.text for p in v.value) for k, v in cmd.assignments.items()} == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "OMP": "5",
    }
    assert "CUDA_VISIBLE_DEVICES" not in r.variables
    assert r.commands[1].words[1].text is None


def test_command_env_is_a_snapshot_with_exported_flags(run):
    r = run("export A=1\nB=2\ncmd\nB=3\n")
    env = r.commands[0].env
    assert env["A"].exported and not env["B"].exported
    assert "".join(p.text for p in env["B"].value) == "2"


# ---- parameter expansion ---------------------------------------------------------------------------


def test_defaults_and_alternatives(run):
    r = run(
        'E=""\nS=set\n'
        "a=${U:-d} b=${E:-d} c=${E-d} d=${U-d} e=${S:+alt} f=${E:+alt} g=${U+alt}\n"
        "h=${V:=assigned} i=${W=also}\n: ${Z:=colon}\n"
    )
    got = {n: text(r, n) for n in "abcdefghi"}
    assert got == {"a": "d", "b": "d", "c": "", "d": "d", "e": "alt", "f": "", "g": "", "h": "assigned", "i": "also"}
    assert (text(r, "V"), text(r, "W"), text(r, "Z")) == ("assigned", "also", "colon")


def test_error_if_unset_is_unknown_with_its_message(run):
    r = run("A=${NEED:?set NEED}\nB=ok\nC=${B:?never}\n")
    assert r.variables["A"].value[0].text is None and "NEED" in r.variables["A"].value[0].reason
    assert text(r, "C") == "ok"


def test_length_trim_replace_and_case(run):
    r = run(
        "X=model.tar.gz\nP=path/to/file.json\nM=MiXeD\n"
        "a=${#X} b=${X#*.} c=${X##*.} d=${X%.*} e=${X%%.*} f=${X/a/A} g=${X//a/A} "
        "h=${M,,} i=${M^^} j=${P##*/} k=${P%/*} l=${X/tar/zip} m=${X:0:5}\n"
    )
    got = {n: text(r, n) for n in "abcdefghijklm"}
    assert got == {
        "a": "12",
        "b": "tar.gz",
        "c": "gz",
        "d": "model.tar",
        "e": "model",
        "f": "model.tAr.gz",
        "g": "model.tAr.gz",
        "h": "mixed",
        "i": "MIXED",
        "j": "file.json",
        "k": "path/to",
        "l": "model.zip.gz",
        "m": "model",
    }


def test_operators_on_unknown_or_unset_values_are_unknown(run):
    r = run("a=${NOPE#x} b=${#NOPE} c=$(hostname) d=${c%%.*}\n")
    for name in "ab":
        piece = r.variables[name].value[0]
        assert piece.text is None and piece.name == "NOPE"
    assert r.variables["d"].value[0].text is None


def test_unset_variable_is_named_unknown(run):
    r = run("cmd $MASTER_ADDR ${MASTER_PORT}\n")
    for word, name in zip(r.commands[0].words[1:], ["MASTER_ADDR", "MASTER_PORT"]):
        piece = word.unknowns[0]
        assert piece.name == name
        assert piece.reason == f"${name} is not set in the script and has no default"
        assert piece.span.line == 1


def test_run_time_specials_are_unknown(run):
    r = run("cmd $RANDOM $$ $! $?\n")
    assert all(w.text is None for w in r.commands[0].words[1:])
    assert [w.unknowns[0].name for w in r.commands[0].words[1:]] == ["RANDOM", "$", "!", "?"]


def test_seeded_environment(run):
    env = {"NNODES": Var("NNODES", (Piece("4", None, "env"),), exported=True)}
    r = run("A=$NNODES\nB=${NNODES:-1}\n", env=env)
    assert text(r, "A") == "4" and r.variables["A"].value[0].origin == "env"
    assert text(r, "B") == "4"


# ---- provenance -------------------------------------------------------------------------------------


def test_default_value_keeps_its_position_through_variables(run):
    r = run('TP=${TP:-4}\nARGS="--x 1"\nOPTS="$ARGS --tp $TP"\ntorchrun train.py $OPTS\n')
    tp = words(r, "torchrun")[-1]
    assert tp.text == "4"
    piece = tp.pieces[0]
    assert where(piece.span) == (1, 10, 1, 11) and piece.exact and piece.default_of == "TP"
    assert where(tp.site) == (4, 19, 4, 24)  # the word $OPTS in the command
    flag = words(r, "torchrun")[1]
    assert flag.text == "--x" and where(flag.value_span) == (2, 7, 2, 10)


def test_quote_removal_keeps_exact_spans_and_escapes_do_not(run):
    r = run('cmd "--lr" \'1e-4\' --name\\ x "a\\"b"\n')
    lr, value, name, quoted = words(r, "cmd")
    assert where(lr.value_span) == (1, 6, 1, 10) and lr.pieces[0].exact
    assert where(value.value_span) == (1, 13, 1, 17)
    assert name.text == "--name x"
    assert quoted.text == 'a"b'


def test_arithmetic_piece_points_at_the_expansion(run):
    r = run("N=2\ncmd --world $((N * 8))\n")
    piece = words(r, "cmd")[1].pieces[0]
    assert piece.text == "16" and piece.origin == "derived" and not piece.exact
    assert where(piece.span) == (2, 13, 2, 23)


# ---- quoting and word splitting ---------------------------------------------------------------------


def test_double_quotes_backslash_newline_single_quotes_and_ansi_c(run):
    r = run("A=\"one \\\n  two\"\nB='x \\\n y'\nC=$'tab\\there'\nD=\"\\$HOME \\` \\\\ \\q\"\n")
    assert text(r, "A") == "one   two"  # backslash-newline is removed inside double quotes
    assert text(r, "B") == "x \\\n y"  # nothing is special inside single quotes
    assert text(r, "C") == "tab\there"
    assert text(r, "D") == "$HOME ` \\ \\q"


def test_string_append_both_ways(run):
    r = run('X="--a 1"\nX="$X --b"\nX+=" --c"\ncmd $X\n')
    assert [w.text for w in words(r, "cmd")] == ["--a", "1", "--b", "--c"]


def test_splitting_keeps_per_character_provenance(run):
    r = run('ARGS="--hidden-size 1024   --num-layers 24"\ntorchrun x.py $ARGS\n')
    got = [(w.text, where(w.value_span)) for w in words(r, "torchrun")[1:]]
    assert got == [
        ("--hidden-size", (1, 7, 1, 20)),
        ("1024", (1, 21, 1, 25)),
        ("--num-layers", (1, 28, 1, 40)),
        ("24", (1, 41, 1, 43)),
    ]


def test_empty_unquoted_vanishes_and_quoted_empty_stays(run):
    r = run('E=""\nS="  "\ncmd a $E "$E" $S "$S" $UNSETX b\n')
    got = [w.text for w in words(r, "cmd")]
    assert got == ["a", "", "  ", None, "b"]


# ---- arrays -----------------------------------------------------------------------------------------


def test_multiline_array_with_comments_append_and_index_assignment(run):
    r = run(
        'A=(\n  --a 1   # first\n  # a whole comment line\n  "--fp8-format hybrid"\n)\n'
        'A+=(--b)\nA[1]=2\nA[$((1+1))]="--fp8 e4m3"\n'
    )
    assert items(r, "A") == ["--a", "2", "--fp8 e4m3", "--b"]


def test_array_expansions(run):
    r = run(
        'A=(--a "--fp8-format hybrid" --c)\ni=1\n'
        'q "${A[@]}"\nu ${A[@]}\nu2 ${A[*]}\nj "${A[*]}"\n'
        "e=${A[i]} f=${A[$i]} n=${#A[@]} z=$A m=${A[-1]}\n"
    )
    assert [w.text for w in words(r, "q")] == ["--a", "--fp8-format hybrid", "--c"]
    assert [w.text for w in words(r, "u")] == ["--a", "--fp8-format", "hybrid", "--c"]
    assert [w.text for w in words(r, "u2")] == ["--a", "--fp8-format", "hybrid", "--c"]
    assert [w.text for w in words(r, "j")] == ["--a --fp8-format hybrid --c"]
    assert {n: text(r, n) for n in "efnzm"} == {
        "e": "--fp8-format hybrid",
        "f": "--fp8-format hybrid",
        "n": "3",
        "z": "--a",
        "m": "--c",
    }


def test_quoted_all_elements_of_nothing_is_no_word(run):
    # bash: "${A[@]}" of an empty array and "$@" without arguments expand to no word at all, while "" and
    # "$EMPTY" stay one empty word; so `"${PROFILE[@]}" torchrun ...` with PROFILE=() runs torchrun
    r = run(
        'A=()\nE=""\nq x "${A[@]}" y\n"${A[@]}" torchrun x.py\ne "" "$E" "${A[@]}"""\nf() { g "$@"; }\nf\nf a "" b\n'
    )
    assert [w.text for w in words(r, "q")] == ["x", "y"]
    assert [c.name for c in r.commands if c.name == "torchrun"] == ["torchrun"]
    assert [w.text for w in words(r, "e")] == ["", "", ""]
    assert [[w.text for w in c.words[1:]] for c in r.commands if c.name == "g"] == [[], ["a", "", "b"]]


def test_array_element_provenance(run):
    r = run('A=(\n  --tp 2\n)\ntorchrun x.py "${A[@]}"\n')
    tp, two = words(r, "torchrun")[1:]
    assert where(tp.value_span) == (2, 3, 2, 7) and where(two.value_span) == (2, 8, 2, 9)


# ---- arithmetic -------------------------------------------------------------------------------------


def test_arithmetic_ternary_nested_and_positional(run):
    r = run("N=3\nA=$(( N > 2 ? N * 2 : 1 ))\nB=$(( $N + ${N} ))\nC=$(( (A + 1) % 4 ))\nD=$((E = 5, E * 2))\n")
    assert (text(r, "A"), text(r, "B"), text(r, "C"), text(r, "D"), text(r, "E")) == ("6", "6", "3", "10", "5")


def test_arithmetic_refusal_of_digit_separators(run):
    r = run("S=$((1_000))\ncmd\n")
    assert text(r, "S") is None  # bash exits at the failed expansion; nothing after it sees a value
    problem = next(p for p in r.problems if "1_000" in p.message)
    assert problem.span.line == 1


def test_arithmetic_on_unknown_names_the_variable(run):
    r = run("W=$(( GPUS * 8 ))\n")
    piece = r.variables["W"].value[0]
    assert piece.text is None and piece.name == "GPUS" and "GPUS" in piece.reason


def test_slices_of_positional_parameters_and_arrays(run):
    r = run('A=(a "b c" d e)\nf() { cmd "${@:2}"; cmd ${@:1:2}; }\nf x "y z" w\ncmd "${A[@]:1:2}" ${A[@]: -1}\n')
    got = [[w.text for w in c.words[1:]] for c in r.commands if c.name == "cmd"]
    assert got == [["y z", "w"], ["x", "y", "z"], ["b c", "d", "e"]]


# ---- a $(...) pipeline of text producers -------------------------------------------------------------


def test_a_sed_pipeline_substitution_keeps_known_and_unknown_pieces(run):
    r = run('CMD="  python   train.py --tp 2  --data ${DATA}  "\nCMD=$(echo "$CMD" | sed -e \'s/  */ /g\')\n')
    pieces = r.variables["CMD"].value
    assert "".join(p.text if p.known else "<?>" for p in pieces) == " python train.py --tp 2 --data <?> "
    unknown_piece = next(p for p in pieces if not p.known)
    assert unknown_piece.name == "DATA"  # the unset variable, still named, not "the output of $(...)"
    assert next(p for p in pieces if p.known and "2" in p.text).span.line == 1  # provenance of the literal


def test_a_substitution_pipeline_drops_trailing_newlines(run):
    r = run("A=$(printf '%s\\n' 'x y' | sed 's/y/z/')\n")
    assert text(r, "A") == "x z"


def test_a_pipeline_with_a_command_plint_cannot_run_stays_unknown(run):
    r = run(
        "A=$(echo 'a b' | awk '{print toupper($1)}')\nB=$(echo 'a b' | sed 's/\\(a\\)/c/')\n"
        "C=$(echo 'a b' | sed 's/[ab]/c/')\n"
    )
    assert text(r, "A") is None
    assert text(r, "B") is None  # a group: sed's output is not evaluated
    assert "output of" in r.variables["B"].value[0].reason
    assert text(r, "C") == "c b"  # a bracket expression is, as GNU sed writes it


def test_pwd_variable_is_the_working_directory_pwd_prints(run, tmp_path):
    """Bash sets $PWD itself at start-up (it is not read from the environment): the same folder `$(pwd)`
    gives, so `--deepspeed_config ${PWD}/configs/ds.json` names the file `cat > configs/ds.json` wrote
    (corpus 4: awslabs' pretrain_gpt_103b.sbatch)."""
    r = run('A=$(pwd)\nB=$PWD\nC="${PWD}/configs/ds.json"\n')
    assert var(r, "B") == var(r, "A") == str(tmp_path)
    assert var(r, "C") == f"{tmp_path}/configs/ds.json"


def test_pwd_set_by_the_script_wins(run):
    r = run("PWD=/work/run\nB=$PWD\n")
    assert var(r, "B") == "/work/run"


def test_pattern_operators_apply_to_each_element(run):
    # bash(1): with @ or *, the removal, substitution or case change applies to each element in turn
    r = run(
        'A=(a.z bz c)\nset -- x1 y1\necho "${A[@]/z/Q}" "${A[@]%.z}" "${A[@]/#/--}" ${A[@]^^} "${@/1/2}" "${A[*]/z/Q}"\n'
    )
    assert argv(r, "echo") == ["echo", "a.Q", "bQ", "c", "a", "bz", "c", "--a.z", "--bz", "--c", "A.Z", "BZ", "C"] + [
        "x2",
        "y2",
        "a.Q bQ c",
    ]


def test_an_empty_pattern_anchored_at_either_end_adds_the_string(run):
    r = run("x=abc\necho ${x/%/-} ${x/#a/b} ${x/b} ${x//b/} ${x/#/--}\n")
    assert argv(r, "echo") == ["echo", "abc-", "bbc", "ac", "ac", "--abc"]


def test_an_underscore_variable_as_a_default_is_a_variable(run):
    """`${CAP:-$_hep_cap}`: tree-sitter-bash reads `$_hep_cap` there as a literal word; bash expands the variable
    (LLaVA-OneVision-2-Megatron-Bridge's GB200 job, where the literal made `(( CAP >= _hep_cap ))` a false PL001)."""
    r = run('_cap=$(( 10192 / 64 * 64 ))\nexport CAP="${CAP:-$_cap}"\nD=${D:-$_unset}\n(( CAP >= _cap )) && OK=1\n')
    assert text(r, "CAP") == "10176" and text(r, "OK") == "1"
    assert text(r, "D") is None  # an unset variable, as `$_unset` anywhere: not the text "$_unset"
    assert not r.problems


def test_an_arithmetic_default_tree_sitter_reads_as_a_subshell(run):
    # orangeaico/Megatron-LM's pattern: ${STEPS:-$(((SIZE + B - 1) / B))}, where tree-sitter-bash tries `$( (...`
    r = run(
        "N=5\nS=${S:-$(((N + 4 - 1) / 4))}\nT=${T:-$(( (N + 4 - 1) / 4))}\n"
        'echo $S $T "${U:-$(((N + 4 - 1) / 4))}" "${V:-$(( (N + 4 - 1) * 4))}"\n'
    )
    assert argv(r, "echo") == ["echo", "2", "2", "2", "32"]


def test_patterns_bash_expands_first_are_not_read_as_text(run):
    # review: `${H//$SEP/ }` and the like gave their unexpanded pattern's result as a known value
    r = run(
        "SEP=,; H=a,b,c; e=a; f=x.a; p=a/b/c; x=abc; y=abc; z=abc.sh\n"
        'echo ${H//$SEP/ } "${f%.$e}" "${f/\'x\'/Z}" "${p//\\//_}" "${x^^b}" "${y/b/[&]}" "${z%.sh}" "${z^^}"\n'
    )
    assert argv(r, "echo") == ["echo", "${H}", "${f}", "${f}", "${p}", "${x}", "${y}", "abc", "ABC.SH"]


def test_elements_keep_their_words_through_defaults_and_operators(run):
    r = run(
        'A=(--a --b); x=(x y); B=(ab "" ef); G=([0]=a [5]=b [6]=c); E=()\n'
        'echo "${A[@]:-}" "${A[@]-}" "${x[@]#?}" "${B[@]^^}" "${G[@]: -3}" "${E[@]:-dflt}"\n'
    )
    assert argv(r, "echo") == ["echo", "--a", "--b", "--a", "--b", "", "", "AB", "", "EF", "b", "c", "dflt"]


def test_awk_prints_a_field_count_or_a_field(run):
    # Tele-AI/TeleTron: GPUS_PER_NODE=$(echo $CUDA_VISIBLE_DEVICES | awk -F"," '{print NF}'); as bash and awk print
    r = run(
        "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n"
        "G=$(echo $CUDA_VISIBLE_DEVICES | awk -F\",\" '{print NF}')\nH=$(echo \"a b  c\" | awk '{print $2}')\n"
        "I=$(echo \"x:y\" | awk -F: '{print $2}')\nJ=$(echo \"\" | awk -F, '{print NF}')\n"
        'K=$(echo $CUDA_VISIBLE_DEVICES | awk -F, \'{print $1+1}\')\necho $G $H $I "$J" "$K"\n'
    )
    assert argv(r, "echo") == ["echo", "8", "b", "y", "0", "${K}"]  # an awk program beyond a print is unknown
