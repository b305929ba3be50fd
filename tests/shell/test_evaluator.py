"""Each construct of issue 2's list, evaluated statically."""

import os
import shutil
import subprocess

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from shell_helpers import argv, var  # noqa: E402
from plint.reading.shell.model import Piece, Var, Word


def test_assignment_order_and_environment(run):
    env = {"NNODES": Var("NNODES", (Piece("8", None, "env"),), exported=True)}
    r = run("NNODES=1\nNNODES=${NNODES:-8}\nA=$NNODES\n", env=env)
    assert var(r, "A") == "1"  # the script's assignment comes first; the environment never wins
    r = run("A=${NNODES:-2}\n", env=env)
    assert var(r, "A") == "8"


def test_export_local_readonly_declare(run):
    r = run("export A=1 B\nB=2\nreadonly C=3\ndeclare -x D=4\ndeclare -a ARR=(x y)\nf() { local A=9; E=$A; }\nf\n")
    assert var(r, "A") == "1" and var(r, "E") == "9"
    assert r.variables["A"].exported and r.variables["D"].exported
    assert var(r, "C") == "3"
    assert [p.text for item in r.variables["ARR"].items for p in item] == ["x", "y"]


def test_parameter_expansion_operators(run):
    r = run(
        'X=abc.tar.gz\nE=""\n'
        "a=${U:-d1} b=${E:-d2} c=${E-d3} d=${U:=d4} e=${X:+alt} f=${#X}\n"
        ": ${G:=seven}\n"
        "g=${X#*.} h=${X##*.} i=${X%.*} j=${X%%.*} k=${X/a/A} l=${X//./_} m=${X^^}\n"
    )
    got = {n: var(r, n) for n in "abcdefghijklm"}
    assert got == {
        "a": "d1",
        "b": "d2",
        "c": "",
        "d": "d4",
        "e": "alt",
        "f": "10",
        "g": "tar.gz",
        "h": "gz",
        "i": "abc.tar",
        "j": "abc",
        "k": "Abc.tar.gz",
        "l": "abc_tar_gz",
        "m": "ABC.TAR.GZ",
    }
    assert var(r, "U") == "d4" and var(r, "G") == "seven"


def test_unset_variable_is_unknown_not_empty(run):
    r = run("torchrun --nnodes $NNODES x.py\n")
    word = r.commands[0].words[2]
    assert word.text is None
    assert "NNODES is not set" in word.unknowns[0].reason


def test_arithmetic_with_ternary_and_refusal(run):
    r = run("N=2\nG=8\nW=$((N*G))\nP=$(( N > 1 ? 2 : 1 ))\nS=$((1_000_000))\n")
    assert var(r, "W") == "16" and var(r, "P") == "2"
    # bash stops the script here, so S never holds a usable value: unknown, with the failure as reason
    assert var(r, "S") is None
    assert "fails in bash" in r.variables["S"].value[0].reason
    problem = next(p for p in r.problems if p.kind == "shell-error")
    assert "value too great for base" in problem.message and problem.span.line == 5


def test_arrays(run):
    r = run(
        'A=(--a 1 "--fp8-format hybrid" # comment\n  --b)\nA+=(--c 3)\n'
        'cmd "${A[@]}"\ncmd ${A[@]}\ncmd "${A[*]}"\nN=${#A[@]}\nF=${A[0]}\n'
    )
    assert argv(r, "cmd", 0)[1:] == ["--a", "1", "--fp8-format hybrid", "--b", "--c", "3"]
    assert argv(r, "cmd", 1)[1:] == ["--a", "1", "--fp8-format", "hybrid", "--b", "--c", "3"]
    assert argv(r, "cmd", 2)[1:] == ["--a 1 --fp8-format hybrid --b --c 3"]
    assert var(r, "N") == "6" and var(r, "F") == "--a"


def test_quoted_string_with_continuations_append_and_splitting(run):
    r = run(
        'ARGS=" \\\n  --num-layers 24 \\\n  --hidden-size 1024"\nARGS="$ARGS --bf16"\nARGS+=" --x"\n'
        'E=""\ncmd $ARGS $E "$E"\n'
    )
    assert argv(r, "cmd")[1:] == ["--num-layers", "24", "--hidden-size", "1024", "--bf16", "--x", ""]


def test_provenance_follows_the_value_to_where_it_was_written(run):
    r = run("TP=${TP:-4}\nX=$TP\ncmd --tp $X\n")
    word = r.commands[0].words[2]
    assert word.text == "4"
    assert (word.value_span.line, word.value_span.col) == (1, 10)
    assert (word.site.line, word.site.col) == (3, 10)


def test_if_elif_case_known(run):
    r = run(
        'M=gpt\nif [ "$M" == "llama" ]; then A=1; elif [[ $M == g* && -n $M ]]; then A=2; else A=3; fi\n'
        'case "$M" in llama|mistral) B=x ;; gpt) B=y ;; *) B=z ;; esac\n'
        '[ -z "$T" ] && T=4 || T=5\n'
    )
    assert var(r, "A") == "2" and var(r, "B") == "y"
    # the guard sets the $T it tests: a default, as ${T:-4} would be, with no environment (issue 26)
    assert r.variables["T"].value[0].text == "4"


def test_unknown_condition_merges_and_names_alternatives(run):
    r = run('if [ "$1" = big ]; then L=32; else L=16; fi\ntorchrun x.py --num-layers $L\n')
    piece = r.variables["L"].value[0]
    assert piece.text is None and set(piece.alternatives) == {"32", "16"}
    assert "positional parameter $1" in piece.reason
    r = run('if [ "$1" = big ]; then torchrun a.py; else torchrun b.py; fi\n')
    assert len(r.commands) == 2 and all(c.conditions for c in r.commands)


def test_conditional_append_keeps_the_common_start(run):
    # `OPTS="$OPTS --fp16"` in an if on an unknown condition: the start both ways share stays known (with its
    # spans), only the tail is unknown, and the tail's alternatives compose over later appends
    r = run(
        'OPTS="--tensor-model-parallel-size 2 --micro-batch-size 4"\n'
        'if [ "$USE_FP16" = 1 ]; then OPTS="$OPTS --fp16"; fi\n'
        'if [ -n "$CKPT" ]; then OPTS="${OPTS} --recompute-activations"; fi\n'
        "torchrun x.py $OPTS\n"
    )
    pieces = r.variables["OPTS"].value
    assert pieces[0].text == "--tensor-model-parallel-size 2 --micro-batch-size 4"
    tail = pieces[-1]
    assert tail.text is None and set(tail.alternatives) == {
        " --fp16 --recompute-activations",
        " --recompute-activations",
        " --fp16",
        "",
    }
    assert "$CKPT" in tail.reason and '; and on if [ "$USE_FP16" = 1 ]' in tail.reason  # both conditions named
    # the unknown tail starts with a blank (or is empty): word splitting leaves the known words whole
    assert argv(r, "torchrun") == [
        "torchrun",
        "x.py",
        "--tensor-model-parallel-size",
        "2",
        "--micro-batch-size",
        "4",
        "${OPTS}",
    ]


def test_conditional_append_keeps_a_start_known_only_at_run_time(run):
    # the start both ways share may hold a value known only at run time (`$PP` from nvidia-smi): it is the same
    # value either way, so the flags after it stay known (fail before: the whole value became the tail, as in
    # the zero-bubble fork's examples/pretrain_offload.sh, and every flag after --pipeline-model-parallel-size
    # was unknown)
    r = run(
        "PP=$(nvidia-smi -L | wc -l)\n"
        'OPTS="--pipeline-model-parallel-size $PP --hidden-size 4096"\n'
        'if [ -n "$FP16" ]; then OPTS="$OPTS --fp16"; fi\n'
        "torchrun x.py $OPTS\n"
    )
    words = argv(r, "torchrun")
    assert words[2:6] == ["--pipeline-model-parallel-size", "${PP}", "--hidden-size", "4096"]
    tail = r.variables["OPTS"].value[-1]
    assert tail.text is None and set(tail.alternatives) == {" --fp16", ""}


def test_merged_alternatives_show_unknown_parts_by_name(run):
    r = run('if [ -n "$RESUME" ]; then LOAD="--load $RESUME --no-load-optim"; fi\n')
    assert set(r.variables["LOAD"].value[0].alternatives) == {"--load ${RESUME} --no-load-optim", "<unset>"}


def test_for_loops_and_functions(run):
    r = run(
        "for s in 1 2; do cmd --size $s; done\nfor ((i=0; i<3; i++)); do :; done\n"
        'build() { echo "--layers $1"; OUT="--tp $2"; }\nbuild 24 8\n'
    )
    assert [argv(r, "cmd", i)[2] for i in range(2)] == ["1", "2"]
    assert all(c.in_loop for c in r.commands if c.name == "cmd")
    assert var(r, "OUT") == "--tp 8"


def test_source_relative_to_the_script(run):
    r = run(
        'DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\nsource "$DIR/conf/a.sh"\n. ./conf/b.sh\n',
        files={"conf/a.sh": "TP=8\n", "conf/b.sh": "PP=${PP:-2}\n"},
    )
    assert var(r, "TP") == "8" and var(r, "PP") == "2"
    assert r.variables["TP"].value[0].span.path.endswith(os.path.join("conf", "a.sh"))
    r = run("source missing.sh\n")
    assert any("cannot read sourced file" in p.message for p in r.problems)


def test_appending_to_what_an_unread_sourced_file_may_have_set_keeps_its_part_unknown(run):
    """llm-jp/ft-llm-2026's qsub_train.sh: `source ${TASK_DIR}/params.sh` (not readable: TASK_DIR comes with the
    job) and then `ALL_PARAMS+=(--log-interval 1)`: the array the file defines, with one more flag, not that one
    flag alone (before: a command line of the three flags the script itself appends)."""
    r = run(
        'source ${TASK_DIR}/params.sh\nALL_PARAMS+=(--log-interval 1)\nOPTS+=" --bf16"\nNEW=(--seed 1)\n'
        'cmd "${ALL_PARAMS[@]}"\n'
    )
    (params,) = [c for c in r.commands if c.name == "cmd"]
    first = params.words[1].pieces[0]
    assert not first.known and "may have been set by sourced file ${TASK_DIR}/params.sh" in first.reason
    assert argv(r, "cmd")[-2:] == ["--log-interval", "1"]
    assert var(r, "OPTS") is None  # unknown, then " --bf16"
    assert [[p.text for p in item] for item in r.variables["NEW"].items] == [["--seed"], ["1"]]  # `=` needs no file
    r = run('source ./env.sh\nALL_PARAMS+=(--log-interval 1)\ncmd "${ALL_PARAMS[@]}"\n', files={"env.sh": "X=1\n"})
    assert argv(r, "cmd") == ["cmd", "--log-interval", "1"]  # the file was read: it set no ALL_PARAMS


def test_positional_parameters(run):
    r = run("A=$1\nB=${2:-two}\nN=$#\nshift\nC=$1\n", positional=[Word.of("one"), Word.of("uno")])
    assert var(r, "A") == "one" and var(r, "B") == "uno" and var(r, "N") == "2" and var(r, "C") == "uno"
    r = run("A=$1\nB=${1:-d}\n")
    assert var(r, "A") is None and var(r, "B") == "d"


def test_eval_and_bash_c_are_parsed_again_with_original_positions(run):
    r = run(
        'TP=2\nCMD="torchrun --nproc_per_node 8 x.py --tp $TP"\neval $CMD\n'
        'srun -N 2 bash -c "python y.py --rank \\$SLURM_PROCID --tp $TP"\n'
    )
    inner = next(c for c in r.commands if c.via == "eval")
    assert inner.argv() == ["torchrun", "--nproc_per_node", "8", "x.py", "--tp", "2"]
    flag = inner.words[4]
    assert (flag.value_span.line, flag.value_span.col) == (2, 39)
    assert inner.words[5].value_span.line == 1  # the value still points at TP=2
    py = next(c for c in r.commands if c.via == "bash -c")
    assert py.parent.name == "srun"
    assert py.words[3].text is None and py.words[3].unknowns[0].name == "SLURM_PROCID"


def test_a_value_merged_over_branches_keeps_its_words_when_parsed_again(run):
    # OPTS ends in --ckpt or in --ckpt --moe (EP unknown): parsed again by bash -c, the flag before the run-time
    # tail is a word of its own, as word splitting keeps it in the command run directly (LOLA's job script)
    r = run(
        'OPTS="--layers 2"\nOPTS="${OPTS} --ckpt"\nif [[ $EP -gt 1 ]]; then\nOPTS="${OPTS} --moe"\nfi\n'
        'CMD="x.py ${OPTS} --last 1"\nsrun bash -c "python $CMD"\npython $CMD\n'
    )
    again, direct = (c for c in r.commands if c.words and c.words[0].text == "python")
    assert again.via == "bash -c" and [w.display() for w in again.words][:5] == [
        "python",
        "x.py",
        "--layers",
        "2",
        "--ckpt",
    ]
    assert [w.display() for w in again.words][6:] == ["--last", "1"]
    assert [w.display() for w in direct.words][:5] == ["python", "x.py", "--layers", "2", "--ckpt"]


def test_heredocs_and_sed_write_virtual_files(run, tmp_path):
    r = run(
        'GBS=64\ncat <<EOF > ds.json\n{"train_batch_size": $GBS, "x": $((GBS*2))}\nEOF\n'
        'cat > raw.json <<\'EOF\'\n{"a": "$GBS"}\nEOF\n'
        "cat <<-EOF > tabs.txt\n\tindented $GBS\n\tEOF\n"
        'sed "s/BATCH/${GBS}/g" tpl.json | sed -e "s|STAGE|3|" > out.json\n',
        files={"tpl.json": '{"b": BATCH, "s": STAGE}\n'},
    )
    files = {os.path.basename(k): v.content.render() for k, v in r.virtual_files.items()}
    assert files["ds.json"] == '{"train_batch_size": 64, "x": 128}\n'
    assert files["raw.json"] == '{"a": "$GBS"}\n'
    assert files["tabs.txt"] == "indented 64\n"
    assert files["out.json"] == '{"b": 64, "s": 3}\n'
    vf = next(v for k, v in r.virtual_files.items() if k.endswith("ds.json"))
    span = vf.content.locate(0, 1)
    assert (span.line, span.col) == (3, 1)


def test_command_substitution_is_never_executed(run, tmp_path):
    marker = tmp_path / "ran"
    r = run(
        f"N=$(touch {marker}; echo 8)\nH=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)\n"
        "D=$(dirname /a/b/c.sh)\nB=$(basename /x/y.json .json)\n"
    )
    assert not marker.exists()
    assert var(r, "N") is None and "known only at run time" in r.variables["H"].value[0].reason
    assert var(r, "D") == "/a/b" and var(r, "B") == "y"


def test_syntax_error_still_yields_the_launch(run):
    r = run("#!/bin/bash\nCKPT=<Specify path>\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tp 2\n")
    # was kind "syntax": bash -n fails here only because of the slot, which issue 12 (point 8) reads as an
    # unfilled value (PL002), not a syntax error of the script
    assert any(p.kind == "unresolved" and p.span.line == 2 for p in r.problems)
    assert any(c.name == "torchrun" for c in r.commands)
    r = run("#!/bin/bash\nCKPT=/ckpt\nif true; then\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tp 2\n")
    assert any(p.kind == "syntax" for p in r.problems)
    assert any(c.name == "torchrun" for c in r.commands)


def test_valid_script_with_a_tree_sitter_error_node_is_not_an_error(run):
    # a trailing backslash before EOF gives tree-sitter an ERROR node; bash -n accepts it
    r = run("torchrun --nproc_per_node 8 x.py \\\n")
    assert not [p for p in r.problems if p.kind == "syntax"]


def test_runaway_loops_stop(run):
    r = run("while true; do X=$((X+1)); done\nf() { f; }\nf\ntorchrun x.py\n", max_steps=2000)
    assert r.commands  # it terminated


def test_child_scripts_see_only_exported_variables(run):
    r = run("export A=1\nB=2\nbash child.sh arg1\n", files={"child.sh": "cmd $A $B $1\n"})
    child = next(c for c in r.commands if c.name == "cmd")
    assert child.argv()[1] == "1" and child.argv()[2] is None and child.argv()[3] == "arg1"
    assert child.via == "bash FILE"


def test_arithmetic_over_branch_alternatives_and_named_unknowns(run):
    r = run('if [ "$1" = big ]; then NODES=2; else NODES=1; fi\nW=$((8*NODES))\nX=$((8*$SLURM_NNODES))\n')
    w, x = r.variables["W"].value[0], r.variables["X"].value[0]
    assert w.text is None and set(w.alternatives) == {"8", "16"}
    assert x.text is None and "$SLURM_NNODES is not set" in x.reason and x.name == "SLURM_NNODES"


def test_alternate_value_of_an_unknown_variable_names_both_ways(run):
    r = run("VP=$1\ncmd ${VP:+--num-layers-per-virtual-pipeline-stage $VP}\n")
    (word,) = [w for w in r.commands[0].words[1:]]
    alts = word.unknowns[0].alternatives
    assert alts[0] == "<unset>" and alts[1] == "--num-layers-per-virtual-pipeline-stage ${1}" and len(alts) == 2


def test_conditional_array_append_keeps_the_shared_items(run):
    r = run('ARGS=(--num-layers 2)\nif [ -n "$FP8" ]; then ARGS+=(--fp8-format hybrid); fi\ncmd "${ARGS[@]}"\n')
    items = r.variables["ARGS"].items
    assert [p.text for it in items[:2] for p in it] == ["--num-layers", "2"]
    assert set(items[2][0].alternatives) == {"--fp8-format hybrid", ""}
    assert argv(r, "cmd")[:3] == ["cmd", "--num-layers", "2"]


def test_arithmetic_over_an_assumed_value_is_assumed(run):
    result = run("N=$(nvidia-smi -L | wc -l)\nW=$((N * 4))\nK=$((3 * 4))\n", assume={"N": "8"})
    assert [(p.text, p.origin) for p in result.variables["W"].value] == [("32", "assumed")]
    assert [(p.text, p.origin) for p in result.variables["K"].value] == [("12", "derived")]


BASH = shutil.which("bash")

DISCARDED = [
    # an expansion bash refuses abandons the top-level command it stands in: the rest of its line, the loop,
    # the function call, the if, the brace group; `(( ))` and `let` only fail; a sourced file, an `eval` or
    # `bash -c` string and a subshell each have a top level of their own
    'A="<x>"\nfor i in 1 2; do echo loop$i; B=$(($A * 4)); echo after$i; done\necho afterloop\n',
    'A="<x>"\ng() { echo g1; f; echo g2; }\nf() { C=$(($A * 2)); echo f2; }\ng\necho afterg\n',
    'A="<x>"\nif true; then D=$((A + 1)); echo inif; fi\necho afterif\n{ E=$(($A)); echo brace; }\necho end\n',
    'A="<x>"\necho a; X=$(($A)); echo b\necho c\n',
    'A="<x>"\n(( A + 1 )); echo status\nlet "B = A + 1"; echo let\nC=$((1 / 0)); echo div\necho end\n',
    "echo one; (X=$((1/0)); echo sub); echo two\necho three\n",
    "eval 'echo e1; X=$((1/0)); echo e2'; echo same\necho next\n",
    "f() { eval 'echo e1; X=$((1/0)); echo e2'; echo aftereval; }\nf\necho end\n",
    "bash -c 'echo c1; X=$((1/0)); echo c2'\necho next\n",
    "if [ $((1/0)) -gt 0 ]; then echo body; fi\necho after\n",
    "true | { X=$((1/0)); echo in; }; echo same\ntrue | Y=$((1/0)); echo same2\necho next\n",
]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("script", DISCARDED)
def test_what_runs_after_an_expansion_bash_refuses_is_what_bash_runs(run, script):
    """The echo commands plint reads as run are those bash 5.2 runs (checked against the real bash)."""
    real = subprocess.run([BASH, "-c", script], capture_output=True, text=True).stdout.split()
    r = run(script)
    read = [c.words[1].text for c in r.commands if c.words and c.words[0].text == "echo" and len(c.words) > 1]
    assert read == real


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_paths_through_a_pipeline_as_bash_gives_them(run, tmp_path):
    """`dirname "$0" | xargs realpath` (Eugene29's ViT jobs find their repository so): dirname, basename,
    realpath and readlink in a pipeline, and xargs handing them its input's words."""
    script = (
        "P=$(dirname ${BASH_SOURCE[0]} | xargs realpath)\nB=$(echo /a/b/c.sh | xargs basename)\n"
        "D=$(dirname /x/y/z | xargs dirname)\necho $P $B $D\n"
    )
    r = run(script)
    real = subprocess.run([BASH, str(tmp_path / "main.sh")], capture_output=True, text=True).stdout.split()
    assert [var(r, name) for name in ("P", "B", "D")] == real
    assert var(run("X=$(echo a b | xargs -n1 basename)\n"), "X") is None  # an xargs option: not read


NOT_COMMANDS = [
    # a word an expansion or quotes make is never an assignment: bash looks for a program of that name
    'ENV_ARGS="WANDB_DISABLED=true NCCL_DEBUG=INFO"\n$ENV_ARGS echo hidden; echo same\necho after\n',
    '"A=1" echo hidden; echo same\n',
    'E="X+=1"\n$E echo hidden\necho after\n',
    "X=1 Y=2 echo prefixed\n",  # a literal prefix is an assignment: the command runs
]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("script", NOT_COMMANDS)
def test_an_assignment_made_by_an_expansion_is_a_command_bash_cannot_find(run, script):
    """quangvinh2110/Megatron-DeepSpeed-Training: `$ENV_ARGS torchrun ...` with ENV_ARGS holding NAME=value words
    fails (127) and runs nothing; a literal prefix still runs. The echo commands plint reads as run are bash 5.2's,
    and each refused command is an error that names the word."""
    real = subprocess.run([BASH, "-c", script], capture_output=True, text=True).stdout.split()
    r = run(script)
    read = [c.words[1].text for c in r.commands if c.words and c.words[0].text == "echo" and len(c.words) > 1]
    assert read == real
    refused = [p for p in r.problems if p.kind == "shell-error" and "command not found (status 127)" in p.message]
    assert len(refused) == script.count("hidden")


def test_env_before_an_expanded_assignment_runs_the_command(run):
    r = run('A="X=1"\nenv $A echo shown\n')
    assert [w.text for w in r.commands[-1].words] == ["env", "X=1", "echo", "shown"] and not r.problems
