"""#SBATCH directives in their spellings, sbatch/salloc options, and the SLURM_* variables a job implies
(src/sbatch/opt.c, src/common/slurm_opt.c, sbatch(1) OUTPUT ENVIRONMENT VARIABLES)."""

import pytest

from plint.reading.shell.model import Piece, Var, Word, unknown
from plint.source import SourceFile
from plint.reading.sources.slurm import RUN_TIME_VARIABLES, apply_options, implied_env, parse_options, read_directives


def job(text: str):
    return read_directives(SourceFile("job.sbatch", text))


def words(line: str):
    """Words of a plain command line, each with its exact span in a SourceFile."""
    src = SourceFile("cmd.sh", line)
    out, at = [], 0
    for token in line.split():
        at = line.index(token, at)
        span = src.span(len(line[:at].encode()), len(line[: at + len(token)].encode()))
        out.append(Word((Piece(token, span, "literal", True, source=src),), span))
        at += len(token)
    return out


def text_at(source_text, span):
    return source_text.encode()[span.start : span.end].decode()


@pytest.mark.parametrize(
    "line",
    [
        "#SBATCH -N 4",
        "#SBATCH -N4",
        "#SBATCH --nodes=4",
        "#SBATCH --nodes 4",
        "#SBATCH\t--nodes=4   # four nodes",
        "#SBATCH --nodes=4-4",
        '#SBATCH --nodes="4"',
        "#SLURM --nodes=4",
    ],
)
def test_node_count_spellings(line):
    assert job(f"#!/bin/bash\n{line}\n").nodes.value == 4


def test_long_options_may_be_abbreviated_when_unambiguous():
    j = job("#SBATCH --ntasks-per-no=8 --nod=4\n")  # --nod could be --nodes, --nodelist or --nodefile
    assert j.ntasks_per_node.value == 8 and j.nodes is None
    assert j.problems[0].message == "sbatch: unrecognized option '--nod=4'"


def test_tasks_per_node_is_the_other_spelling_of_ntasks_per_node():
    # slurm_opt.c: slurm_opt_tasks_per_node sets the same value as --ntasks-per-node; sbatch(1) to 18.08
    text = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --tasks-per-node=8\n"
    j = job(text)
    assert j.ntasks_per_node.value == 8 and text_at(text, j.ntasks_per_node.span) == "8"
    assert implied_env(j)["SLURM_NTASKS"].value[0].text == "16"
    assert job("#SBATCH --ntasks-per-node=4\n#SBATCH --tasks-per-node 8\n").ntasks_per_node.value == 8  # last wins
    assert job("#SBATCH --tasks-per-node=8\n#SBATCH --ntasks-per-node=4\n").ntasks_per_node.value == 4
    assert [o.name for o in parse_options(words("--tasks-per-node 8 python"), "srun").options] == ["ntasks-per-node"]


def test_value_spans_point_at_the_value():
    text = "#!/bin/bash\n#SBATCH -N2 --ntasks-per-node 8\n#SBATCH --gres=gpu:H100:8(S:0-1),nvme:1\n"
    j = job(text)
    assert (j.nodes.span.line, j.nodes.span.col) == (2, 11) and text_at(text, j.nodes.span) == "2"
    assert text_at(text, j.ntasks_per_node.span) == "8"
    assert text_at(text, j.gpus_per_node.span) == "8" and j.gpus_per_node.span.line == 3
    assert text_at(text, j.gpu_type.span) == "H100" and j.gpu_type.value == "h100"


@pytest.mark.parametrize(
    "line, per_node, kind",
    [
        ("--gres=gpu:8", 8, None),
        ("--gres=gpu:a100:4", 4, "a100"),
        ("--gres=gpu", 1, None),
        ("--gres=nvme:1,gpu:h100:8", 8, "h100"),
        ("--gres=gres/gpu:2", 2, None),
        ("--gres=gpu:nvidia_h100_80gb_hbm3:8", 8, "nvidia_h100_80gb_hbm3"),
        ("--gpus-per-node=8", 8, None),
        ("--gpus-per-node=H100:4", 4, "h100"),
        ("--gres=nvme:1", None, None),
    ],
)
def test_gpu_requests(line, per_node, kind):
    j = job(f"#SBATCH {line}\n")
    assert (j.gpus_per_node.value if j.gpus_per_node else None, j.gpu_type.value if j.gpu_type else None) == (
        per_node,
        kind,
    )


def test_gpus_constraint_and_type_precedence():
    j = job("#SBATCH --gpus=a100:16\n#SBATCH -C A100-80GB\n")
    assert j.gpus.value == 16 and j.gpu_type.value == "a100"  # the GPU request names the type
    j = job("#SBATCH --gres=gpu:8\n#SBATCH --constraint=A100-80GB\n")
    assert j.gpu_type.value == "a100-80gb" and j.constraint.value == "A100-80GB"


def test_other_options():
    j = job("#SBATCH -n 16 -c 12 --exclusive -p batch -J run1 -t 02:00:00 -A proj --gpus-per-task=1\n")
    assert (j.ntasks.value, j.cpus_per_task.value, j.exclusive.value, j.partition.value) == (16, 12, True, "batch")
    assert (j.job_name.value, j.time.value, j.account.value, j.gpus_per_task.value) == ("run1", "02:00:00", "proj", 1)
    assert [name for name, _, _ in j.directives] == [
        "ntasks",
        "cpus-per-task",
        "exclusive",
        "partition",
        "job-name",
        "time",
        "account",
        "gpus-per-task",
    ]


def test_node_ranges_are_unresolved_unless_min_equals_max():
    for spec in ("2-4", "2,4", "1-15:4"):
        j = job(f"#SBATCH --nodes={spec}\n")
        assert j.nodes.value is None and j.nodes.origin == "unresolved" and "range" in j.nodes.note


def test_what_is_not_a_directive():
    text = (
        "#!/bin/bash\n# SBATCH --nodes=64\n #SBATCH --nodes=32\n#SBATCH --nodes=2\n\n# note\necho hi\n"
        "#SBATCH --nodes=8\n"
    )
    assert job(text).nodes.value == 2
    assert job("echo hi\n#SBATCH --nodes=2\n") is None
    assert job("# SBATCH --nodes=2\n") is None


def test_last_directive_wins_and_comments_end_a_line():
    j = job("#SBATCH --nodes=2\n#SBATCH --nodes=4 # --nodes=8\n#SBATCH --job-name=a#b\n")
    assert j.nodes.value == 4 and j.job_name.value == "a"


def test_heterogeneous_jobs_keep_the_first_component():
    assert job("#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 8\n").nodes.value == 2


def test_sbatch_errors_become_problems():
    j = job("#SBATCH --nodes=2 foo\n")
    assert [p.message for p in j.problems] == ["Invalid directive found in batch script: foo"]
    j = job('#SBATCH --job-name="open\n')
    assert j.problems[0].kind == "syntax" and "Unmatched" in j.problems[0].message
    j = job("#SBATCH --no-such-option --nodes=2\n")
    assert j.nodes.value == 2 and j.problems[0].message == "sbatch: unrecognized option '--no-such-option'"


def test_getopt_rules():
    parsed = parse_options(words("-lK1 --kill-on-bad-exit 1 -N2 --exclusive python x.py"), "srun")
    assert [(o.name, o.value.text if o.value else None) for o in parsed.options] == [
        ("label", None),
        ("kill-on-bad-exit", "1"),
        ("kill-on-bad-exit", None),
    ]
    assert parsed.stop == 2  # an optional value binds only with `=`: the `1` is the program
    parsed = parse_options(words("--ntasks-per=4 -N 2 python"), "srun")  # ambiguous abbreviation
    assert [w.text for w in parsed.unknown] == ["--ntasks-per=4"] and parsed.stop == 3


def test_implied_environment():
    j = job("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n#SBATCH -c 6\n")
    env = implied_env(j)
    values = {k: v.value[0].text for k, v in env.items() if k not in RUN_TIME_VARIABLES}
    assert values == {
        "SLURM_JOB_NUM_NODES": "4",
        "SLURM_NNODES": "4",
        "SLURM_NTASKS": "32",
        "SLURM_NPROCS": "32",
        "SLURM_NTASKS_PER_NODE": "8",
        "SLURM_TASKS_PER_NODE": "8(x4)",
        "SLURM_GPUS_ON_NODE": "8",
        "SLURM_GPUS_PER_NODE": "8",
        "SLURM_CPUS_PER_TASK": "6",
    }
    assert all(v.value[0].origin == "derived" and v.exported for k, v in env.items() if k not in RUN_TIME_VARIABLES)
    assert env["SLURM_NNODES"].value[0].span.line == 1


def test_implied_environment_only_what_slurm_sets():
    values = implied_env(job("#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\n"))
    assert set(values) - set(RUN_TIME_VARIABLES) == {
        "SLURM_JOB_NUM_NODES",
        "SLURM_NNODES",
        "SLURM_GPUS_ON_NODE",
    }  # no task count asked
    ranged = implied_env(job("#SBATCH --nodes=2-4\n"))  # given but picked at run time: set, value unknown
    assert set(ranged) == set(RUN_TIME_VARIABLES) | {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}
    assert "is a range" in ranged["SLURM_NNODES"].value[0].reason
    # This once asserted SLURM_PROCID unset in a batch script; sbatch(1) "OUTPUT ENVIRONMENT VARIABLES"
    # lists it (with SLURM_JOB_ID, SLURM_NODEID, ...) as set in every batch job, to a value plint cannot know.
    procid = implied_env(job("#SBATCH -N 1 -n 8\n"))["SLURM_PROCID"].value[0]
    assert not procid.known and procid.nonempty


def test_run_time_variables_decide_slurm_branches(tmp_path):
    from plint.reading.shell.evaluator import EvalOptions, evaluate

    env = implied_env(job("#SBATCH --nodes=2\n"))
    script = (
        'if [ -z "$SLURM_JOB_ID" ]; then salloc -N 4 bash run.sh; exit; fi\n'
        "if [[ -n $SLURM_JOBID ]]; then N=$SLURM_NNODES; else N=1; fi\n"
        'R=${SLURM_PROCID:+rank}\nsrun echo "$N"\n'
    )
    result = evaluate(SourceFile(str(tmp_path / "job.sh"), script), EvalOptions(env=env))
    assert [c.name for c in result.commands] == ["srun"]
    assert result.variables["N"].value[0].text == "2" and result.variables["R"].value[0].text == "rank"


def test_command_line_options_override_the_file():
    j = apply_options(job("#SBATCH --nodes=1\n#SBATCH --gres=gpu:4\n"), words("--nodes=3 -J x --gres gpu:8 run.sh"))
    assert (j.nodes.value, j.gpus_per_node.value, j.job_name.value) == (3, 8, "x")
    assert j.nodes.span.path == "cmd.sh"
    assert apply_options(None, words("-N 2 job.sh")).nodes.value == 2
    assert apply_options(None, words("-N 2 --no-shell"), "salloc").nodes.value == 2


def test_unknown_command_line_values_stay_unresolved():
    n = Word((Piece("--nodes="), unknown("$NNODES has no value", "NNODES")))
    j = apply_options(job("#SBATCH --nodes=1\n"), [n, Word.of("job.sh")])
    assert j.nodes.value is None and "NNODES" in j.nodes.note


def test_sbatch_heredoc_directives_are_read_expanded(tmp_path):
    from plint.reading.read import read_path

    body = (
        "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 pretrain_gpt.py "
        "--micro-batch-size 1 --global-batch-size 64 --num-layers 2 --hidden-size 64 --num-attention-heads 4\n"
    )
    for delimiter, nodes in (("EOF", 3), ("'EOF'", None)):  # quoted: Slurm sees `$N`, not a count
        path = tmp_path / f"submit{nodes}.sh"
        path.write_text(
            f"N=3\nsbatch <<{delimiter}\n#!/bin/bash\n#SBATCH --nodes=$N\n#SBATCH --gpus-per-node=8\n"
            f"{body.replace('$SLURM', chr(92) + '$SLURM') if delimiter == 'EOF' else body}EOF\n"
        )
        (layout,) = read_path(path).layouts
        assert layout.fields["cluster.nnodes"].value == nodes
        if nodes:
            assert layout.fields["cluster.nnodes"].span.line == 4


def test_set_but_unknown_values_decide_emptiness_tests(tmp_path):
    from plint.reading.shell.evaluator import EvalOptions, evaluate

    env = {
        "S": Var("S", (Piece(None, None, "unresolved", reason="set by Slurm", name="S", nonempty=True),), None, True)
    }
    script = (
        '[ -n "$S" ] && A=set\n[[ $S ]] && B=set\ntest -z "$S" || C=set\nD=${S:+yes}\n'
        'if [ -z "${S}" ]; then E=empty; else E=full; fi\n'
    )
    result = evaluate(SourceFile(str(tmp_path / "x.sh"), script), EvalOptions(env=env))
    texts = {k: result.variables[k].value[0].text for k in "ABCDE"}
    assert texts == {"A": "set", "B": "set", "C": "set", "D": "yes", "E": "full"}


def test_a_template_slot_in_a_directive_leaves_the_options_after_it():
    # `#SBATCH <SLURM OPTIONS> --nodes=128`: the slot is options to fill in (issue 12), not a word that
    # ends the directive's options
    j = job("#!/bin/bash\n#SBATCH <SLURM OPTIONS> --nodes=16 --exclusive --ntasks-per-node=8\n")
    assert j.nodes.value == 16 and j.ntasks_per_node.value == 8
    (slot,) = j.problems
    assert slot.kind == "unresolved" and slot.message.startswith("<SLURM OPTIONS>, a placeholder")
    assert (slot.span.line, slot.span.col) == (2, 9)


def test_a_bad_line_of_a_hostfile_of_the_jobs_nodes_names_the_node(tmp_path):
    """A hostfile written from `scontrol show hostnames` without slots: runner.py's _parse_hostfile refuses the
    bare host name, and the message names the host by the job's node it stands for (a Slurm job has no chunks)."""
    from plint.checking.check import check_paths

    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\nscontrol show hostnames $SLURM_JOB_NODELIST > hostfile\n"
        "deepspeed --hostfile hostfile pretrain_gpt.py --deepspeed --num-layers 2 --hidden-size 64"
        " --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1\n"
    )
    (result,) = check_paths([script])
    (found,) = [d for d in result.diagnostics if d.code == "PL208"]
    assert "bad entry: <the host of the job's node 1>" in found.message


@pytest.mark.parametrize(
    "text, count",
    [
        ("node1", 1),
        ("gpu[01-04,07],login2", 6),
        ("rack[1-2]-n[1-3]", 6),
        ("mlpre-g2-ghpc-[7-8]", 2),
        ("./hosts.txt", None),  # a file of hosts
        ("n[3-1]", None),
        ("n[1-", None),
        ("n[[1]]", None),
        ("n[1-1000000000]", None),
    ],
)
def test_a_host_list_is_counted_as_scontrol_expands_it(text, count):
    from plint.reading.sources.slurm import hostlist_count

    assert hostlist_count(text) == count


def test_a_job_naming_its_hosts_and_no_node_count_runs_on_those_hosts():
    # failed before: a job with --nodelist and no --nodes had no node count, so SLURM_NNODES was unknown
    j = job("#!/bin/bash\n#SBATCH --nodelist=mlpre-g2-ghpc-[7-8]\n#SBATCH --gpus-per-node=2\n")
    assert (j.nodes.value, j.nodes.origin) == (2, "derived")
    assert "--nodelist=mlpre-g2-ghpc-[7-8]" in j.nodes.note
    assert job("#SBATCH -w n[1-4] -N 8\n").nodes.value == 8  # --nodes says how many; the list is a part
    assert job("#SBATCH -w ./hosts\n").nodes is None
    # a --nodelist with no list names no host (a mutation test's raise: the bare flag's value is True)
    assert job("#SBATCH --gpus-per-node=2\n#SBATCH --nodelist\n").nodes is None


def test_a_dash_heredoc_s_tab_indented_directives_and_continued_lines_reach_sbatch_expanded(tmp_path):
    # `sbatch <<- EOM`: bash strips the body's leading tabs, so `<TAB>#SBATCH` begins its line when sbatch reads
    # it; a `\<newline>` in the body joins two lines (fail before: the directives were read from the script's
    # text, `--nodes=$NODES` unexpanded, or, tab-indented, not at all)
    from plint.reading.read import read_path

    launch = (
        "\tsrun torchrun --nnodes \\$SLURM_NNODES --nproc_per_node 8 \\\n\t    pretrain_gpt.py "
        "--micro-batch-size 1 --global-batch-size 64 --num-layers 2 --hidden-size 64 --num-attention-heads 4\n"
    )
    for dash, nodes in (("-", 4), ("", None)):  # without the dash the tabs stay: Slurm reads no directive
        path = tmp_path / f"submit{nodes}.sh"
        path.write_text(f"NODES=4\nsbatch <<{dash} EOM\n\t#!/bin/bash\n\t#SBATCH --nodes=$NODES\n{launch}EOM\n")
        (layout,) = read_path(path).layouts
        assert layout.fields["cluster.nnodes"].value == nodes
        if nodes:
            span = layout.fields["cluster.nnodes"].span
            assert (span.line, span.col) == (4, 18)  # where `$NODES` is written, after the tab


def test_a_plugin_option_with_an_unknown_value_hides_no_step_size(launches):
    # CSCS's container engine: `srun --environment=$DIR/env.toml` is one option Slurm's own table lacks
    text = "#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=4\nsrun -ul --environment=$DIR/e.toml python train.py\n"
    (chain,) = launches(text)
    assert (chain.nnodes.value, chain.workers_per_node.value) == (16, 4)
