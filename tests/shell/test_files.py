"""Sourced and child scripts, command strings parsed again, substitutions, and files the script writes."""

import os
import re
import shutil
import subprocess

import pytest

from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.reading.shell.files import lookup_file, resolve_path
from plint.reading.shell.model import MARKER, Piece, Var, Word, unknown
from plint.source import SourceFile


def text(result, name):
    v = result.variables[name]
    return None if any(not p.known for p in v.value) else "".join(p.text for p in v.value)


def named(result, name):
    return [c for c in result.commands if c.name == name]


def where(span):
    return (os.path.basename(span.path), span.line, span.col)


def virtual(result, name):
    return next(v for k, v in result.virtual_files.items() if os.path.basename(k) == name)


# ---- source ----------------------------------------------------------------------------------------


def test_source_relative_to_the_sourcing_file_with_its_own_spans(run, tmp_path):
    r = run(
        ". ./conf/model.sh\ntorchrun x.py --tp $TP --pp $PP\n",
        files={"conf/model.sh": "source common.sh\nTP=${TP:-8}\n", "conf/common.sh": "PP=2\n"},
    )
    tp, pp = named(r, "torchrun")[0].words[3], named(r, "torchrun")[0].words[5]
    assert (tp.text, where(tp.value_span)) == ("8", ("model.sh", 2, 10))
    assert (pp.text, where(pp.value_span)) == ("2", ("common.sh", 1, 4))
    assert r.files_read == [str(tmp_path / "conf/model.sh"), str(tmp_path / "conf/common.sh")]


def test_source_cycle_and_missing_file(run):
    r = run(
        "source a.sh\nsource ./nowhere.sh\ncmd $A $B\n",
        files={"a.sh": "A=1\nsource b.sh\n", "b.sh": "B=2\nsource a.sh\n"},
    )
    assert named(r, "cmd")[0].argv() == ["cmd", "1", "2"]
    problem = next(p for p in r.problems if "nowhere.sh" in p.message)
    assert problem.kind == "unresolved" and "cannot read sourced file" in problem.message
    assert problem.span.line == 2


def test_sourced_file_with_arguments(run):
    r = run("source lib.sh 16\ncmd $GBS\n", files={"lib.sh": "GBS=$1\n"})
    assert named(r, "cmd")[0].argv() == ["cmd", "16"]


# ---- positional parameters and $0 -------------------------------------------------------------------


def test_positional_parameters_given(run):
    args = [Word.of(str(i)) for i in range(1, 12)]
    r = run('cmd $1 ${10} $# "$@"\nshift 2\ncmd2 $1 $#\nset -- a "b c"\ncmd3 $# "$@" $*\n', positional=args)
    assert named(r, "cmd")[0].argv()[1:4] == ["1", "10", "11"]
    assert len(named(r, "cmd")[0].words) == 4 + 11
    assert named(r, "cmd2")[0].argv() == ["cmd2", "3", "9"]
    assert named(r, "cmd3")[0].argv() == ["cmd3", "2", "a", "b c", "a", "b", "c"]


def test_positional_parameters_not_given_are_unknown_until_set(run):
    r = run('cmd $1 $# "$@"\nset -- x\ncmd2 $1 $2\n')
    assert named(r, "cmd")[0].argv() == ["cmd", None, None, None]
    assert named(r, "cmd2")[0].argv() == ["cmd2", "x"]


def test_script_path_and_pure_substitutions(run, tmp_path):
    script = str(tmp_path / "main.sh")
    r = run(
        'A=$0\nB=${BASH_SOURCE[0]}\nC=$(dirname "$0")\nD=$(dirname "${BASH_SOURCE[0]}")\n'
        'E=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\nF=$(cd "$(dirname "$0")/.." && pwd)\n'
        'G=$(pwd)\nH=$(basename "$0")\nI=$(basename /x/y.json .json)\nJ=$(echo a  b)\n'
        'K=$(printf %s "v")\nL=`basename /p/q`\n'
    )
    got = {n: text(r, n) for n in "ABCDEFGHIJKL"}
    assert got == {
        "A": script,
        "B": script,
        "C": str(tmp_path),
        "D": str(tmp_path),
        "E": str(tmp_path),
        "F": str(tmp_path.parent),
        "G": str(tmp_path),
        "H": "main.sh",
        "I": "y",
        "J": "a b",
        "K": "v",
        "L": "q",
    }


def test_other_substitutions_are_never_run(run, tmp_path):
    flag = tmp_path / "ran"
    r = run(f"X=$(touch {flag})\nY=`touch {flag}`\nH=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n")
    assert not flag.exists()
    piece = r.variables["H"].value[0]
    assert piece.text is None and "$(scontrol show hostnames" in piece.reason and "run time" in piece.reason


def test_hostname_output_is_one_word_and_never_run(run):
    # failed before: no piece said its unknown text was one word (a hostfile line of it one host)
    r = run(
        "A=$(hostname)\nB=`hostname -s`\nC=$(hostname -I)\nD=$(hostname | tr a-z A-Z)\nE=$(scontrol show hostnames)\n"
    )
    words = {name: r.variables[name].value[0] for name in "ABCDE"}
    assert all(p.text is None for p in words.values())
    assert [name for name, p in words.items() if p.one_word] == ["A", "B"]  # -I may print several addresses


# ---- command strings parsed a second time ----------------------------------------------------------


def test_eval_keeps_original_positions(run):
    r = run('TP=2\nCMD="torchrun --nproc_per_node 8 \\\n  train.py --tp $TP"\neval "$CMD"\neval $CMD\n')
    evals = [c for c in r.commands if c.via == "eval"]
    assert len(evals) == 2 and all(c.parent.name == "eval" for c in evals)
    for cmd in evals:
        assert cmd.argv() == ["torchrun", "--nproc_per_node", "8", "train.py", "--tp", "2"]
        assert where(cmd.words[1].value_span) == ("main.sh", 2, 15)
        assert where(cmd.words[4].value_span) == ("main.sh", 3, 12)
        assert where(cmd.words[5].value_span) == ("main.sh", 1, 4)


def test_eval_word_built_from_several_places_keeps_each_part(run):
    r = run('N=3\nCMD="torchrun --nnodes=$N"\nCMD="$CMD --node_rank=\\$SLURM_NODEID"\neval "$CMD"\n')
    inner = next(c for c in r.commands if c.via == "eval")
    nnodes, rank = inner.words[1], inner.words[2]
    assert [(p.text, where(p.span)) for p in nnodes.pieces] == [
        ("--nnodes=", ("main.sh", 2, 15)),
        ("3", ("main.sh", 1, 3)),
    ]
    assert rank.pieces[0].text == "--node_rank=" and rank.pieces[1].name == "SLURM_NODEID"


def test_eval_assignments_change_the_shell(run):
    r = run("eval 'X=5'\ncmd $X\n")
    assert named(r, "cmd")[0].argv() == ["cmd", "5"]


def test_bash_c_after_other_words_with_escaped_variables(run):
    r = run(
        'GPUS=8\nsrun --ntasks-per-node=1 bash -c "torchrun --nproc_per_node $GPUS '
        "--node_rank \\$SLURM_PROCID x.py\"\nsh -c 'cmd $0 $1' zero one\n"
    )
    inner = next(c for c in r.commands if c.name == "torchrun")
    assert inner.via == "bash -c" and inner.parent.name == "srun"
    assert inner.argv()[:3] == ["torchrun", "--nproc_per_node", "8"]
    rank = inner.words[4].unknowns[0]
    assert rank.name == "SLURM_PROCID" and rank.span.line == 2
    assert where(inner.words[3].value_span) == ("main.sh", 2, 67)  # --node_rank
    assert named(r, "cmd")[0].argv() == ["cmd", "zero", "one"]


def test_bash_c_sees_only_exported_variables(run):
    r = run("export A=1\nB=2\nbash -c 'cmd $A $B'\n")
    assert named(r, "cmd")[0].argv() == ["cmd", "1", None]


# ---- child scripts -----------------------------------------------------------------------------------


def test_bash_file_and_srun_bash_file(run):
    r = run(
        "export A=1\nB=2\nbash child.sh one\nsrun -N 2 bash ./child.sh two\n./child.sh three\n",
        files={"child.sh": "cmd $A $B $1 $0\n"},
    )
    cmds = named(r, "cmd")
    assert [c.argv()[1:4] for c in cmds] == [["1", None, "one"], ["1", None, "two"], ["1", None, "three"]]
    assert all(c.via == "bash FILE" for c in cmds)
    assert [c.parent.name for c in cmds] == ["bash", "srun", "./child.sh"]
    assert cmds[0].argv()[4].endswith("child.sh")
    assert where(cmds[0].words[0].value_span) == ("child.sh", 1, 1)


def test_a_commands_own_assignments_reach_the_script_it_starts(run):
    # bash exports `NAME=value` prefixes to the command they precede (eth-cscs's `GBS=... sbatch run.sh` sweep)
    r = run(
        "B=2\nGBS=8 bash child.sh\nGBS=16 sbatch job.sh\nbash child.sh\nTP=4 bash -c 'cmd c $TP'\n",
        files={"child.sh": ': "${GBS:=1536}"\ncmd $GBS $B\n', "job.sh": "#!/bin/bash\ncmd j ${GBS:-1536}\n"},
    )
    assert [c.argv()[1:] for c in named(r, "cmd")] == [["8", None], ["j", "16"], ["1536", None], ["c", "4"]]


def test_a_loop_over_seq_runs_once_a_number(run):
    r = run("for i in $(seq 0 2); do cmd $((16*2**i)); done\nfor j in $(seq 3); do cmd j$j; done\n")
    assert [c.argv()[1] for c in named(r, "cmd")] == ["16", "32", "64", "j1", "j2", "j3"]


def test_expr_arithmetic_is_known_from_its_words(run):
    """expr(1): one word per operand and operator, * / % before + -, / toward zero; anything else unknown."""
    r = run(
        "NNODES=4\nGBS=$(expr $NNODES \\* 4)\ncmd $GBS $(expr 1 + 2 \\* 3) `expr 7 / -2` $(expr 7 % 0)"
        " $(expr length abc) $(expr $UNSET + 1)\n"
    )
    (c,) = named(r, "cmd")
    assert c.argv()[1:] == ["16", "7", "-3", None, None, None]


def test_sbatch_file_gets_child_env(run, tmp_path):
    seen = []

    def child_env(command, submitter, child):
        seen.append((command.name, os.path.basename(child.path)))
        return {"SLURM_NNODES": Var("SLURM_NNODES", (Piece("4", None, "derived"),), exported=True)}

    r = run(
        "export GBS=64\nsbatch --nodes=4 -p batch job.sh arg\n",
        files={"job.sh": "#!/bin/bash\n#SBATCH -N 4\nsrun cmd $SLURM_NNODES $GBS $1\n"},
        child_env=child_env,
    )
    srun = named(r, "srun")[0]
    assert srun.via == "sbatch" and srun.parent.name == "sbatch"
    assert srun.argv() == ["srun", "cmd", "4", "64", "arg"]
    assert seen == [("sbatch", "job.sh")]


def test_sbatch_heredoc_and_wrap(run):
    seen = []

    def child_env(command, submitter, child):
        seen.append(child)
        return {}

    r = run(
        "export TP=2\nsbatch -N 2 <<EOF\n#!/bin/bash\n#SBATCH --gpus-per-node=8\n"
        'srun torchrun x.py --tp $TP --rank \\$SLURM_PROCID\nEOF\nsbatch --wrap "cmd hi"\n',
        child_env=child_env,
    )
    torchrun = named(r, "srun")[0]
    assert torchrun.via == "sbatch" and torchrun.argv()[:5] == ["srun", "torchrun", "x.py", "--tp", "2"]
    assert torchrun.words[-1].unknowns[0].name == "SLURM_PROCID"
    assert where(torchrun.words[3].value_span) == ("main.sh", 5, 20)
    body = seen[0]  # the heredoc as a file whose lines are the script's
    assert body.line_text(4) == "#SBATCH --gpus-per-node=8" and body.line_text(1).strip() == ""
    assert named(r, "cmd")[0].via == "sbatch"


# ---- heredocs and files written ----------------------------------------------------------------------


def test_heredoc_expands_variables_defaults_and_arithmetic(run):
    r = run(
        'GBS=64\nMBS=2\ncat <<EOF > ds.json\n{\n  "train_batch_size": $GBS,\n'
        '  "grad_acc": $(( GBS / MBS / 4 )),\n  "zero": ${ZERO:-1},\n  "host": "$(hostname)"\n}\nEOF\n'
    )
    vf = virtual(r, "ds.json")
    rendered = vf.content.render()
    assert (
        re.sub(f"{MARKER}\\d+{MARKER}", "?", rendered)
        == '{\n  "train_batch_size": 64,\n  "grad_acc": 8,\n  "zero": 1,\n  "host": "?"\n}\n'
    )
    key = rendered.index('"train_batch_size"')
    assert where(vf.content.locate(key, key + 18)) == ("main.sh", 5, 3)
    value = rendered.index("64")
    assert where(vf.content.locate(value, value + 2)) == ("main.sh", 1, 5)
    assert vf.written_by.line == 3


def test_heredoc_forms(run):
    r = run(
        "X=1\ncat > a.txt <<'EOF'\n$X\nEOF\ncat >b.txt <<\"EOF\"\n$X\nEOF\ncat <<\\EOF >c.txt\n$X\nEOF\n"
        "cat <<-EOF > d.txt\n\t\tv=$X\n\tEOF\ntee e.txt <<EOF >/dev/null\nt=$X\nEOF\n"
    )
    assert [virtual(r, n).content.render() for n in ("a.txt", "b.txt", "c.txt", "d.txt", "e.txt")] == [
        "$X\n",
        "$X\n",
        "$X\n",
        "v=1\n",
        "t=1\n",
    ]


def test_echo_printf_and_append(run):
    r = run('N=3\necho "layers $N" > f.txt\necho more >> f.txt\nprintf "%s\\n" "p $N" > g.txt\n')
    assert virtual(r, "f.txt").content.render() == "layers 3\nmore\n"
    assert virtual(r, "g.txt").content.render() == "p 3\n"


def test_sed_templates(run):
    files = {"tpl.json": '{"bs": BATCH, "stage": STAGE, "lr": LR}\n'}
    r = run(
        'GBS=128\nsed "s/BATCH/${GBS}/" tpl.json | sed "s/STAGE/${ZERO:-2}/" > a.json\n'
        "sed -e 's/BATCH/1/g' -e 's|STAGE|3|' tpl.json > b.json\n"
        "cp b.json c.json\nsed -i 's/LR/0.1/' c.json\nsed -i \"s/1/$GBS/\" c.json\n",
        files=files,
    )
    a = virtual(r, "a.json").content
    assert a.render() == '{"bs": 128, "stage": 2, "lr": LR}\n'
    i = a.render().index("128")
    assert where(a.locate(i, i + 3)) == ("main.sh", 1, 5)
    j = a.render().index('"lr"')
    assert where(a.locate(j, j + 4)) == ("tpl.json", 1, 31)
    assert virtual(r, "b.json").content.render() == '{"bs": 1, "stage": 3, "lr": LR}\n'
    assert virtual(r, "c.json").content.render() == '{"bs": 128, "stage": 3, "lr": 0.1}\n'


def test_resolve_path_and_lookup_file(run, tmp_path):
    (tmp_path / "disk.json").write_text("{}\n")
    r = run('cat <<EOF > out/../ds.json\n{"a": 1}\nEOF\ncat <<EOF > "$RUN_DIR/cfg.json"\n{}\nEOF\n')
    assert resolve_path(r, "ds.json") == str(tmp_path / "ds.json") in r.virtual_files
    assert resolve_path(r.source, Word.of("./x/../ds.json")) == str(tmp_path / "ds.json")
    assert lookup_file(r, "ds.json").render() == '{"a": 1}\n'
    assert lookup_file(r, "disk.json").render() == "{}\n"
    assert lookup_file(r, "absent.json") is None
    # a path with an unknown part is keyed by its known rendering, on both sides
    partly_known = Word((unknown("$RUN_DIR is not set", "RUN_DIR"), Piece("/cfg.json")))
    assert resolve_path(r, partly_known) == "${RUN_DIR}/cfg.json" in r.virtual_files
    assert lookup_file(r, partly_known).render() == "{}\n"
    assert resolve_path(r, "") is None


# ---- pipelines, lists, groups -----------------------------------------------------------------------


def test_every_simple_command_once_in_order(run):
    r = run(
        "X=1\ntorchrun a.py 2>&1 | tee log.txt\nprep & wait\n( X=2; sub $X )\n{ grp $X; } > o.log\n"
        "a && b || c\nif true; then d; fi | e\ncmd $X\n"
    )
    assert [c.name for c in r.commands] == [
        "torchrun",
        "tee",
        "prep",
        "wait",
        "sub",
        "grp",
        "a",
        "b",
        "c",
        "true",
        "d",
        "e",
        "cmd",
    ]
    assert named(r, "cmd")[0].argv() == ["cmd", "1"]  # the subshell's assignment did not leak
    assert (named(r, "tee")[0].site.line, named(r, "tee")[0].site.col) == (2, 22)


def test_evaluate_with_a_custom_reader(tmp_path):
    seen = []

    def read(path):
        seen.append(path.name)
        return SourceFile(str(path), "V=from_reader\n") if path.name == "v.sh" else None

    script = tmp_path / "main.sh"
    r = evaluate(SourceFile(str(script), "source v.sh\n"), EvalOptions(read_file=read))
    assert text(r, "V") == "from_reader" and seen == ["v.sh"]


def test_sbatch_options_with_unknown_values_are_skipped(run):
    r = run(
        'sbatch --job-name=run-$(date +%s) --output "$LOGS/%j.out" --nodes=2 job.sh\n',
        files={"job.sh": "srun hostname\n"},
    )
    assert named(r, "srun")[0].via == "sbatch"


def test_scripts_on_stdin(run):
    r = run("X=1\nexport Y=2\nbash <<< \"cmd1 \\$Y\"\nbash -s -- a <<'EOF'\ncmd2 $1 $Y $X\nEOF\n")
    assert named(r, "cmd1")[0].argv() == ["cmd1", "2"] and named(r, "cmd1")[0].via == "bash FILE"
    cmd2 = named(r, "cmd2")[0]
    assert cmd2.argv() == ["cmd2", "a", "2", None]
    assert where(cmd2.words[0].value_span) == ("main.sh", 5, 1)


def test_only_stdout_redirections_write_files(run):
    r = run("echo out 2> err.log > out.log\necho more &>> out.log\necho e 2>> err.log\n")
    assert virtual(r, "out.log").content.render() == "out\nmore\n"
    assert not [k for k in r.virtual_files if k.endswith("err.log")]


def test_a_script_copied_is_not_run_by_the_copy(run):
    # orangeaico/Megatron-LM's conversion job keeps a copy of the training script with its logs
    r = run(
        "cp /workspace/examples/train_big.sh logs/\nmv ./old_train.sh ./archive/\n", files={"old_train.sh": "cmd no\n"}
    )
    assert named(r, "cmd") == []


def test_a_script_run_where_plint_cannot_follow_is_the_copy_this_script_wrote(run):
    # c00cjz00/LLAMA-on-HPC: the job copies its recipe into the app's folder, then runs it in a container there
    r = run(
        "cp multi.sh local/app/examples/multi_node_demo.sh\n"
        "singularity exec --pwd $HOME/.local/app/examples img.sif bash -c 'bash multi_node_demo.sh'\n",
        files={"multi.sh": "cmd 8\n", "local/app/examples/.keep": ""},
    )
    (copied,) = named(r, "cmd")
    assert copied.argv() == ["cmd", "8"] and copied.words[1].pieces[0].origin == "assumed"
    assert any("multi_node_demo.sh is not where bash would look" in p.message for p in r.problems)


def test_assignments_before_source_and_a_function_last_as_long_as_it(run):
    r = run(
        "f() { cmd f ${GBS:-4}; }\nGBS=64 source child.sh\ncmd after ${GBS:-none}\nGBS=32 f\nGBS=1\nGBS=2 . ./child.sh\n"
        "cmd after2 $GBS\n",
        files={"child.sh": "cmd child ${GBS:-4}\n"},
    )
    got = [c.argv()[1:] for c in named(r, "cmd")]
    assert got == [["child", "64"], ["after", "none"], ["f", "32"], ["child", "2"], ["after2", "1"]]


def test_srun_runs_a_bare_script_name_from_the_working_directory(run):
    # spyysalo/lumi-llm-scaling: `srun launch.sh $CMD`; slurmstepd execs a name not on PATH from the job's folder
    r = run(
        'CMD="pretrain_gpt.py --num-layers 2"\nsrun --label launch.sh $CMD\n', files={"launch.sh": 'python -u "$@"\n'}
    )
    (python,) = named(r, "python")
    assert python.argv() == ["python", "-u", "pretrain_gpt.py", "--num-layers", "2"] and python.via == "bash FILE"


def test_a_login_shell_runs_a_command_string(run):
    # celestial-d/LLM-trl on Polaris: `mpiexec -n $NNODES -ppn 1 bash -lc "$LAUNCHER"`, -c in a cluster of options
    r = run("LAUNCHER='cmd one'\nmpiexec -n 2 -ppn 1 bash -lc \"$LAUNCHER\"\nsh -ec 'cmd two'\n")
    assert [c.argv() for c in named(r, "cmd")] == [["cmd", "one"], ["cmd", "two"]]


def test_shell_options_that_take_a_value_stand_before_the_command_string(run):
    r = run("bash -o pipefail -c 'cmd one'\nbash +x -c 'cmd two'\nbash -eo pipefail -c 'cmd three'\n")
    assert [c.argv() for c in named(r, "cmd")] == [["cmd", "one"], ["cmd", "two"], ["cmd", "three"]]


def test_a_pure_command_with_its_output_sent_to_dev_null(run, tmp_path):
    # slime's scripts: `$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)`; was unknown (a redirect)
    r = run(
        'A=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)\n'
        "B=$(cd /x >/dev/null 2>&1 && pwd)\nC=$(echo hi 2>/dev/null)\nD=$(echo hi >/dev/null)\n"
        "E=$(echo hi > out.txt)\n"
    )
    got = {n: text(r, n) for n in "ABCDE"}
    assert got == {"A": str(tmp_path), "B": "/x", "C": "hi", "D": "", "E": None}


# sed patterns with bracket expressions and GNU's `\+` / `\?` (OpenSQZ/MegatronApp's drivers rewrite a launch script
# in place with `sed -i "s/^PIPELINE_PARALLEL=[0-9]\+/PIPELINE_PARALLEL=2/"` before running it)
SED_CASES = [
    r"s/^PIPELINE_PARALLEL=[0-9]\+/PIPELINE_PARALLEL=2/",
    r"s/^VPP=[0-9]\+/VPP=4/",
    r"s/[^,]*,/X,/",
    r"s/[[:digit:]]\+x/N/g",
    r"s/a\?b/B/g",
    r"s/[]a]/R/g",
    r"s/[\]/S/g",
    r"s/[a-c][0-9]*/T/",
]
SED_TEXT = "PIPELINE_PARALLEL=12\nVPP=3\nab,cd,ef\n12x 7x b ab ]a\\ c42\n"


@pytest.mark.parametrize("expression", SED_CASES)
def test_sed_brackets_and_gnu_repetitions_as_gnu_sed_writes_them(run, expression, tmp_path):
    r = run(f"sed -i '{expression}' f.txt\n", files={"f.txt": SED_TEXT})
    got = virtual(r, "f.txt").content
    assert got.render() == _gnu_sed(expression, SED_TEXT, tmp_path)


def _gnu_sed(expression: str, text: str, tmp_path) -> str:
    if shutil.which("sed") is None:
        pytest.skip("needs sed")
    path = tmp_path / "gnu.txt"
    path.write_text(text)
    subprocess.run(["sed", "-i", expression, str(path)], check=True)
    return path.read_text()


def test_a_bracket_expression_plint_does_not_translate_leaves_the_file_unknown(run):
    r = run("sed -i 's/[[.a.]]/b/' f.txt\n", files={"f.txt": "a\n"})
    assert not virtual(r, "f.txt").content.pieces[0].known
