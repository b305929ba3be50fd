"""What compound commands write to stdout (a loop, if, group or subshell redirected to a file, or a stage of a
pipeline), `while read NAME` over text plint knows line by line, loops over words whose text is known only at
run time but whose count is not, and `scontrol show hostnames` (the Slurm job's nodes, a line each)."""

import os

from plint.reading.read import _slurm_env, _slurm_job
from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.source import SourceFile


def text(result, name):
    v = result.variables[name]
    return None if any(not p.known for p in v.value) else "".join(p.text for p in v.value)


def written(result, name):
    """The rendered text of the file the script wrote under `name` (unknown parts as ${...})."""
    return next(v.content for k, v in result.virtual_files.items() if os.path.basename(k) == name)


def in_job(tmp_path, text_: str):
    """Evaluate a Slurm batch script in the job its #SBATCH lines ask for."""
    path = tmp_path / "job.sh"
    path.write_text(text_)
    source = SourceFile(str(path), text_)
    return evaluate(source, EvalOptions(env=_slurm_env(_slurm_job(source))))


def test_a_loop_redirected_to_a_file_writes_what_its_commands_print(run):
    r = run('for h in a b; do echo "$h slots=4"; done > hostfile\nN=$(wc -l < hostfile)\n')
    assert written(r, "hostfile").render() == "a slots=4\nb slots=4\n"
    assert text(r, "N") == "2"


def test_a_group_and_an_if_redirected_keep_their_order(run):
    r = run("{ echo one; printf '%s\\n' two; } > f\nif true; then echo three; fi >> f\n")
    assert written(r, "f").render() == "one\ntwo\nthree\n"


def test_output_elsewhere_inside_the_loop_is_not_collected(run):
    r = run("for h in a; do echo log >&2; echo skip > /dev/null; echo $h; done > f\n")
    assert written(r, "f").render() == "a\n"


def test_what_plint_cannot_tell_leaves_the_file_written_but_unknown(run):
    # a command plint does not run, a branch it cannot decide, a nested shell: the file's text is unknown
    for body in ("nvidia-smi -L", 'if [ -f "$X" ]; then echo a; fi', "bash -c 'echo a'"):
        r = run(f"for h in a b; do {body}; done > f\n")
        content = written(r, "f")
        assert len(content.pieces) == 1 and not content.pieces[0].known, body


def test_silent_commands_leave_the_output_known(run):
    r = run("for h in a b; do export X=$h; sleep 1; printf -v Y '%s' $h; cd /tmp 2>/dev/null; echo $h; done > f\n")
    assert written(r, "f").render() == "a\nb\n"


def test_a_function_called_in_the_loop_writes_what_its_commands_print(run):
    r = run('line() { echo "$1 slots=2"; }\nfor h in a b; do line $h; done > hostfile\n')
    assert written(r, "hostfile").render() == "a slots=2\nb slots=2\n"


def test_while_read_over_a_known_file_runs_once_a_line(run):
    r = run(
        "printf 'n1\\nn2\\nn3\\n' > nodes\nC=0\nwhile read -r host; do C=$((C+1)); echo \"$host slots=8\"; done"
        " < nodes > hostfile\n"
    )
    assert text(r, "C") == "3"
    assert written(r, "hostfile").render() == "n1 slots=8\nn2 slots=8\nn3 slots=8\n"


def test_scontrol_lists_the_jobs_nodes_a_line_each(tmp_path):
    r = in_job(
        tmp_path,
        "#!/bin/bash\n#SBATCH --nodes=3\nN=$(scontrol show hostnames $SLURM_JOB_NODELIST | wc -l)\n"
        "M=$(scontrol show hostnames | head -n 1)\nC=0\nfor h in $(scontrol show hostnames); do C=$((C+1)); done\n",
    )
    assert text(r, "N") == "3" and text(r, "C") == "3"
    master = r.variables["M"].value
    assert len(master) == 1 and not master[0].known and master[0].one_word  # a host name, known at run time


def test_scontrol_of_a_job_whose_node_count_is_unknown_tells_nothing(tmp_path):
    r = in_job(tmp_path, "#!/bin/bash\n#SBATCH --nodes=2-4\nN=$(scontrol show hostnames | wc -l)\n")
    assert text(r, "N") is None
    # another node list than the job's: its hosts are not the job's
    r = in_job(tmp_path, "#!/bin/bash\n#SBATCH --nodes=2\nN=$(scontrol show hostnames node[1-5] | wc -l)\n")
    assert text(r, "N") is None


def test_a_slurm_hostfile_piped_through_while_read(tmp_path):
    r = in_job(
        tmp_path,
        "#!/bin/bash\n#SBATCH --nodes=2\nG=4\nHOSTFILE=hostfile_${SLURM_JOB_ID}\n"
        'scontrol show hostnames "${SLURM_JOB_NODELIST}" | while read -r host; do\n'
        '  echo "${host} slots=${G}"\ndone > "${HOSTFILE}"\nL=$(wc -l < "$HOSTFILE")\n',
    )
    assert text(r, "L") == "2"


def test_a_loop_over_one_word_items_runs_once_an_item(tmp_path):
    r = in_job(
        tmp_path,
        "#!/bin/bash\n#SBATCH --nodes=2\nnodes=$(scontrol show hostnames $SLURM_JOB_NODELIST)\nC=0\n"
        "for node in $nodes; do C=$((C+1)); done\n",
    )
    assert text(r, "C") == "2"
    # words that may split into more, or vanish, still run the loop once as an unknown alternative
    r = in_job(tmp_path, "#!/bin/bash\nC=0\nfor x in $UNKNOWN; do C=$((C+1)); done\n")
    assert text(r, "C") is None


def test_cat_alone_reads_a_file_the_script_wrote(run):
    r = run("echo 4 > tp.txt\nTP=$(cat tp.txt)\n")
    assert text(r, "TP") == "4"
    span = r.variables["TP"].value[0].span  # the value points where it is written: echo's word, line 1
    assert (span.line, span.col) == (1, 6)


def test_cat_alone_reads_a_file_of_the_checked_tree_and_joins_several(run):
    r = run("N=$(cat nodes.txt extra.txt)\n", files={"nodes.txt": "2\n", "extra.txt": "8\n"})
    assert text(r, "N") == "2\n8"


def test_cat_alone_of_a_missing_file_is_known_only_at_run_time(run):
    r = run("TP=$(cat /etc/tp.txt)\nH=$(cat)\n")
    assert text(r, "TP") is None and text(r, "H") is None


def test_a_command_or_pipeline_redirected_to_a_file_writes_it_even_when_its_output_is_unknown(run):
    # the file the script writes is not a copy on disk of the same name: its text is what the command prints,
    # known only at run time (fail before: nothing was recorded and a committed `hostfile` was read instead)
    for line in ("nvidia-smi -L > f", "squeue -h -o %N | tr ',' '\\n' > f", "nvidia-smi -L >> f"):
        r = run(f"{line}\n")
        content = written(r, "f")
        assert len(content.pieces) == 1 and not content.pieces[0].known, line
        assert "f holds what the command at line 1 writes, known only at run time" in content.pieces[0].reason


def test_scontrol_takes_any_prefix_of_hostnames_of_five_letters_or_more(tmp_path):
    # SchedMD/slurm src/scontrol/scontrol.c _show_it: strncasecmp(tag, "hostnames", MAX(tag_len, 5))
    for entity in ("hostname", "HOSTN", "hostnames"):
        r = in_job(tmp_path, f"#!/bin/bash\n#SBATCH --nodes=3\nN=$(scontrol show {entity} | wc -l)\n")
        assert text(r, "N") == "3", entity
    for entity in ("host", "hostlist", "hostnamesx"):
        r = in_job(tmp_path, f"#!/bin/bash\n#SBATCH --nodes=3\nN=$(scontrol show {entity} | wc -l)\n")
        assert text(r, "N") is None, entity
