"""Associative arrays, indexed arrays with gaps and namerefs, as bash(1) defines them (plint.reading.shell.keyed);
and words tree-sitter splits, `[` without its `]`, commands whose words are only data."""

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.shell.shell_helpers import argv, var

# a sweep driver's model table (thunlp/Seq1F1B exp.sh's pattern, written here)
SWEEP = """declare -A config_7b=(
    [num_layers]=32
    [hidden]=4096
)
declare -A config_30b=([num_layers]=64 [hidden]="6144")
declare -A model_config_map=(["7b"]="config_7b" ["30b"]="config_30b")
for model in 30b; do
    config_name="${model_config_map[$model]}"
    declare -n config=$config_name
    echo run "${config[num_layers]}" "${config[hidden]}" $(( ${config[num_layers]} / 8 ))
done
"""


def test_a_model_table_through_a_nameref(run):
    assert argv(run(SWEEP), "echo") == ["echo", "run", "64", "6144", "8"]


def test_associative_lookups_defaults_and_counts(run):
    r = run(
        'declare -A cfg=([a]=1 [b]="two words")\ncfg[c]=3\nk=b\n'
        'echo ${cfg[a]} "${cfg[$k]}" ${cfg[c]} ${cfg[zz]:-dflt} "${cfg[q]}"z ${#cfg[@]}\n'
    )
    assert argv(r, "echo") == ["echo", "1", "two words", "3", "dflt", "z", "3"]


def test_an_associative_arrays_order_is_bashs_hash_order(run):
    r = run("declare -A two=([x]=1 [y]=2)\ndeclare -A one=([k]=v)\necho ${two[@]} ${!one[@]} ${one[@]}\n")
    assert argv(r, "echo") == ["echo", "2", "1", "k", "v"]  # bash 5.2 lists y before x


_KEY = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,11}", fullmatch=True)  # flag names as such tables hold them


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_KEY, min_size=1, max_size=30, unique=True), data=st.data())
def test_associative_keys_are_listed_as_the_real_bash_lists_them(run, keys, data):
    # a sweep's flag table looped over with `for key in ${!CFG[@]}` (haok1402/megatron-deepseek-v2-lite's pattern):
    # keys set, some unset and set again, listed with their values
    dropped = data.draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys) // 2))
    script = (
        "declare -A A=("
        + " ".join(f"[{k}]=v{k}" for k in keys[: len(keys) // 2])
        + ")\n"
        + "".join(f"A[{k}]=w{k}\n" for k in keys[len(keys) // 2 :])
        + "".join(f"unset 'A[{k}]'\n" for k in dropped)
        + "".join(f"A[{k}]=x{k}\n" for k in dropped[::2])
        + "echo ${!A[@]} : ${A[@]}\n"
    )
    real = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={}).stdout.split()
    assert argv(run(script), "echo")[1:] == real


def test_an_indexed_literal_with_subscripts_has_gaps(run):
    r = run('a=([2]=x [0]=y)\necho ${a[0]} ${a[1]}- ${a[2]} "${a[@]}" ${#a[@]} ${!a[@]}\n')
    assert argv(r, "echo") == ["echo", "y", "-", "x", "y", "x", "2", "0", "2"]


def test_an_element_past_the_end_leaves_a_gap(run):
    r = run("A=(p q)\nA[5]=7\necho ${A[@]} ${!A[@]} $((A[5] + ${#A[@]})) ${A[3]}-\n")
    assert argv(r, "echo") == ["echo", "p", "q", "7", "0", "1", "5", "10", "-"]


def test_a_nameref_writes_the_variable_it_names(run):
    r = run("declare -A cfg=([a]=1)\ndeclare -n ref=cfg\nref[d]=4\nx=5\ndeclare -n rx=x\nrx=6\necho ${cfg[d]} $x\n")
    assert argv(r, "echo") == ["echo", "4", "6"]


def test_unknown_keys_and_branches_leave_the_array_unknown(run):
    r = run(
        'declare -A cfg=([a]=1)\nif [ "$1" = x ]; then cfg[a]=5; fi\necho ${cfg[a]}\n'
        "declare -A m\nm[$UNSET]=1\necho ${m[a]}\ndeclare -n r=$UNSET\necho ${r[a]}\n"
    )
    assert argv(r, "echo", 0) == ["echo", "${cfg}"]
    assert argv(r, "echo", 1) == ["echo", "${m}"]
    assert argv(r, "echo", 2) == ["echo", "${r}"]


def test_a_word_tree_sitter_splits_at_a_dollar_is_one_word(run):
    r = run('TP=2; PP=4; G=8\nsbatch --export=ALL,TP=$TP,PP=$PP,G=$G --nodes 2 job.sh >out 2>&1\necho a$PP"b c" x\n')
    assert argv(r, "sbatch") == ["sbatch", "--export=ALL,TP=2,PP=4,G=8", "--nodes", "2", "job.sh"]
    assert argv(r, "echo") == ["echo", "a4b c", "x"]


def test_an_array_item_tree_sitter_splits_at_a_dollar_is_one_item(run):
    # tree-sitter-bash reads `$1/$2` as `$1/$` and `2`, and `$W/o/$R/$E` as `$W/o/$` and `R/$E`; bash 5.2 assigns
    # (/w/RID /w/o/RID/EXP 4 'q /w') to D and runs `torchrun /w/RID /w/o/RID/EXP 4 q /w`
    script = 'set -- /w RID EXP\nW=$1; R=$2; E=$3\nD=($1/$2 $W/o/$R/$E [3]=4 "q $1")\ntorchrun ${D[@]}\n'
    assert argv(run(script), "torchrun") == ["torchrun", "/w/RID", "/w/o/RID/EXP", "4", "q", "/w"]
    assert argv(run("set -- /w RID\necho $1/$2 $1/$23\n"), "echo") == ["echo", "/w/RID", "/w/RID3"]  # `$23` is ${2}3


def test_a_test_without_its_closing_bracket_fails(run):
    # bash: `[: missing ]` (status 2) whatever RECOMPUTE holds: the flags are never added
    r = run('opts=""\nif [ $RECOMPUTE -eq 1]; then opts="--recompute"; fi\necho "[$opts]"\n[ 1 -eq 1] || echo failed\n')
    assert argv(r, "echo", 0) == ["echo", "[]"] and argv(r, "echo", 1) == ["echo", "failed"]


def test_words_of_echo_start_no_script(run):
    files = {"run.sh": "echo ran\n"}
    r = run('cmd="nsys profile -o x bash ./run.sh"\necho $cmd\n$cmd\n', files)
    assert [c.words[0].text for c in r.commands].count("echo") == 2  # `echo $cmd` and run.sh's one echo


def test_read_splits_at_the_ifs_it_is_given(run):
    # fail before: `IFS=: read` split at blanks, T_H was "12:00:00", and `$((10#$T_H ...))` a false PL001
    r = run(
        'TIME=12:00:00\nIFS=: read -r T_H T_M T_S <<< "$TIME"\necho $T_H $T_M $T_S $((10#$T_H * 60 + 10#$T_M))\n'
        'IFS=, read -r a b <<< "1,2,3"\necho "$a" "$b"\nIFS= read -r line <<< "  x y  "\necho "[$line]"\n'
    )
    assert [argv(r, "echo", i) for i in range(3)] == [
        ["echo", "12", "00", "00", "720"],
        ["echo", "1", "2,3"],
        ["echo", "[  x y  ]"],
    ]


def test_review_cases_match_bash(run):
    # each line's expected words are bash 5.2's; before, plint gave the known, wrong values in the comments
    r = run(
        'IFS=, read -ra G <<< "0,1,2,3"; echo ${#G[@]} ${G[1]}\n'  # 2 1,2,3
        'IFS=: read a b <<< "x:y:"; echo "[$b]"\n'  # [y:]
        "for i in 1 2 3; do X[$i]=v$i; done; echo ${X[1]} ${!X[@]}\n"  # v1 at index 0
        "Y=(a b c); Y[-1]=C; echo ${Y[@]}\n"  # a b c C
        'declare -A CFG=(["7b"]=32 [13b]=40); CFG["70b"]=80; echo ${CFG[\'13b\']} ${CFG[70b]} $((CFG[7b] * 2))\n'
        "declare -A N; N[k]=v; N[k]+=w; echo ${N[k]}\n"  # w
        "Z=(a b c); Z+=([5]=f); Z+=(g); echo ${!Z[@]}\n"  # 0 1 2 3 4
        "declare -A M=([a]=1 [b]=2); unset 'M[a]'; echo [${M[a]}] ${#M[@]}\n"  # [1] 2
        'declare -A T=([a]=1 [b]=2); L=("${T[@]}"); echo ${#L[@]}\n'  # 1
        "B=([2]=x [0]=y); echo ${B[-1]}\n"  # (empty)
        "S=hello; echo ${!S[@]}\n"  # hello
    )
    assert [argv(r, "echo", i)[1:] for i in range(11)] == [
        ["4", "1"],
        ["[y]"],
        ["v1", "1", "2", "3"],
        ["a", "b", "C"],
        ["40", "80", "64"],
        ["vw"],
        ["0", "1", "2", "5", "6"],
        ["[]", "1"],
        ["2"],
        ["x"],
        ["0"],
    ]


def test_a_gapped_array_is_sliced_by_index(run):
    # bash: "${a[@]:3}" lists the elements whose index is 3 or more
    r = run('a=([2]=x [5]=y [7]=z)\necho "${a[@]:3}" "${a[@]:5:1}" "${a[@]:0:2}"\n')
    assert argv(r, "echo") == ["echo", "y", "z", "y", "x", "y"]


# `-v NAME` and `-v NAME[KEY]` through a nameref (Maurits-de-Groot/Megatron-MoE-ModelZoo-Minimal's runtime.conf checks
# its model table this way before it unpacks a row)
SET_TESTS = """declare -A table=([m1]=x [m2]="a b")
a=(1 2 3)
s=set
empty=
has() { local -n ref=$1; if [[ -v ref[$2] ]]; then r=yes; else r=no; fi; echo "$1[$2]" $r; }
has table m1
has table zz
has a 2
has a 5
[[ -v s ]] && echo s-set
[[ -v empty ]] && echo empty-set
[ -v a ] && echo a-set
[[ ! -v table[m2] ]] || echo m2-set
"""
SET_EXPECTED = [
    ["echo", "table[m1]", "yes"],
    ["echo", "table[zz]", "no"],
    ["echo", "a[2]", "yes"],
    ["echo", "a[5]", "no"],
    ["echo", "s-set"],
    ["echo", "empty-set"],
    ["echo", "a-set"],
    ["echo", "m2-set"],
]


def test_v_tests_a_variable_or_an_element_through_a_nameref(run):
    r = run(SET_TESTS)
    assert [argv(r, "echo", n) for n in range(len(SET_EXPECTED))] == SET_EXPECTED


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_v_answers_as_the_real_bash_does():
    out = subprocess.run(["bash", "-c", SET_TESTS], capture_output=True, text=True, check=True).stdout
    assert [line.split() for line in out.splitlines()] == [e[1:] for e in SET_EXPECTED]


def test_v_of_a_variable_the_script_never_sets_is_undecided(run):
    # it may come from the environment: neither branch is taken for sure
    r = run("if [[ -v SLURM_JOB_ID ]]; then x=1; else x=2; fi\necho $x\n")
    assert var(r, "x") is None
