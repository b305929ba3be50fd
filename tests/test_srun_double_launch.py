"""PL204 over Slurm's --tasks-per-node spelling and over DeepSpeed's runner started by several srun tasks."""

from __future__ import annotations

import shutil
from pathlib import Path

from fixture_paths import ROOT
from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCHES = ROOT / "fixtures" / "launches"
NO_HOSTFILE = "srun-deepspeed-no-hostfile"


def _findings(job: Path, root: Path = ROOT) -> list[tuple[int, int, str]]:
    (result,) = check_paths([job], root=str(root))
    return [(d.line, d.col, d.message) for d in result.diagnostics if d.code == "PL204"]


def _variant(
    tmp_path: Path, old: str, new: str, hostfile: str | None = None, fixture: str = "srun-deepspeed-hostfile-twice"
) -> Path:
    """A deepspeed fixture with one edit to its srun line (and another hostfile), checked from a copy."""
    folder = tmp_path / "launch"
    shutil.copytree(LAUNCHES / fixture, folder)
    job = folder / "job.slurm"
    job.write_text(job.read_text().replace(old, new))
    if hostfile is not None:
        (folder / "hostfile").write_text(hostfile)
    return job


def test_tasks_per_node_spelling_over_torchrun_is_a_double_launch():
    # failed before: --tasks-per-node was not read, so srun looked like one task per node
    ((line, col, message),) = _findings(LAUNCHES / "srun-tasks-per-node-torchrun" / "job.slurm")
    assert (line, col) == (12, 23)  # the 8 after --tasks-per-node
    assert message == "srun starts 8 tasks per node and each starts 8 workers: 64 processes per node"


def test_deepspeed_runner_in_every_srun_task_starts_the_whole_job_each_time():
    # failed before: one task per node each running a multi-node runner was not flagged
    ((line, col, message),) = _findings(LAUNCHES / "srun-deepspeed-hostfile-twice" / "job.slurm")
    assert (line, col) == (13, 1)  # the srun word
    assert message.startswith("srun starts DeepSpeed's runner 2 times, and each, multi-node without --no_ssh")
    assert "on its 2 hosts through pdsh: 2 x 16 = 32 processes for a job of 16 ranks" in message


def test_deepspeed_runner_with_launcher_slurm_is_srun_inside_srun(tmp_path: Path):
    job = _variant(tmp_path, "srun deepspeed ", "srun deepspeed --launcher slurm ")
    ((_, _, message),) = _findings(job, tmp_path)
    assert "through slurm (srun inside srun): 2 x 16 = 32 processes" in message


def test_deepspeed_runner_without_ssh_is_quiet(tmp_path: Path):
    # --no_ssh: each task launches only its own node (runner.py main: multi_node_exec needs `not no_ssh`)
    job = _variant(tmp_path, "srun deepspeed ", "srun deepspeed --no_ssh --node_rank $SLURM_NODEID ")
    assert _findings(job, tmp_path) == []


# ---- a hostfile of one host: each runner is not multi-node and starts that host's slots on its own node


def test_deepspeed_runner_over_a_one_host_hostfile_is_separate_jobs(tmp_path: Path):
    # failed before: quiet whenever a --hostfile was named (this case was asserted quiet: it is separate jobs,
    # runner.py main runs launch.py on one host's slots, and launch.py never compares that host with its own)
    one_host = _variant(tmp_path, "srun deepspeed ", "srun deepspeed ", hostfile="gpu-node-01 slots=8\n")
    ((line, col, message),) = _findings(one_host, tmp_path)
    assert (line, col) == (13, 1)  # the srun word
    assert message == (
        "srun starts DeepSpeed's runner 2 times (one per node) and its hostfile names one host, so none is "
        "multi-node: each runs that host's slots on its own node, whichever it is: 2 separate jobs of 8 ranks "
        "instead of one of 16; list the job's nodes in the hostfile (`<host> slots=8` a line) and run deepspeed "
        "once outside srun, or give every task that --hostfile with --no_ssh --node_rank $SLURM_NODEID "
        "--master_addr (the first node)"
    )


def test_deepspeed_runner_over_a_hostfile_the_script_writes_with_its_hostname():
    # failed before: quiet; `echo "$(hostname) slots=8" > $HOSTFILE` is one line, one host, whatever the name
    ((line, col, message),) = _findings(LAUNCHES / "srun-deepspeed-hostname-hostfile" / "job.slurm")
    assert (line, col) == (15, 1)
    assert "(one per node) and its hostfile names one host" in message
    assert ": 4 separate jobs of 8 ranks instead of one of 32;" in message


def test_deepspeed_runner_with_num_nodes_1_is_separate_jobs(tmp_path: Path):
    # failed before: quiet; runner.py main keeps the first --num_nodes hosts of the two the hostfile lists
    job = _variant(tmp_path, "srun deepspeed ", "srun deepspeed --num_nodes 1 ")
    ((_, _, message),) = _findings(job, tmp_path)
    assert "srun starts DeepSpeed's runner 2 times (one per node) with --num_nodes 1, so none is multi-node" in message
    assert ": 2 separate jobs of 8 ranks instead of one of 16;" in message


def test_deepspeed_runner_with_no_ssh_over_a_one_host_hostfile_fails_its_node_rank_check(tmp_path: Path):
    # failed before: quiet; runner.py main asserts 0 <= node_rank < len(active_resources), here 1
    one_host = "gpu-node-01 slots=8\n"
    assert _no_ssh_message(tmp_path, "", hostfile=one_host).startswith(
        "srun starts DeepSpeed's runner 2 times (one per node) with --no_ssh and a hostfile of one host, so each "
        "runner knows only one node and its --node_rank must be 0: without --node_rank (default -1) every runner "
        "stops at that check;"
    )
    zero = _no_ssh_message(tmp_path / "zero", "--node_rank 0 ", hostfile=one_host)
    assert "must be 0: 2 separate jobs of 8 ranks instead of one of 16;" in zero


def _no_ssh_message(tmp_path: Path, options: str, **variant) -> str:
    """The one PL204 message of a fixture's runner given --no_ssh and `options`."""
    job = _variant(tmp_path, "srun deepspeed ", f"srun deepspeed --no_ssh {options}", **variant)
    ((_, _, message),) = _findings(job, tmp_path)
    return message


def _script_hostfile(tmp_path: Path, writes: str) -> Path:
    """The one-host fixture with another command writing its hostfile."""
    return _variant(
        tmp_path, 'echo "$(hostname) slots=8" > "$HOSTFILE"', writes, fixture="srun-deepspeed-hostname-hostfile"
    )


def test_deepspeed_runner_over_a_hostfile_of_unknown_hosts_is_quiet(tmp_path: Path):
    for name in ("srun-deepspeed-hostfile-loop", "srun-deepspeed-hostfile-all-nodes"):
        assert _findings(LAUNCHES / name / "job.slurm") == [], name
    for n, writes in enumerate(
        (
            'echo "$NODE_LINES" > "$HOSTFILE"',  # lines from the caller's environment
            'echo "$(hostname -I) slots=8" > "$HOSTFILE"',  # -I prints every address of the host
            # two names known at run time: two hosts, or one the runner refuses as a repeated entry
            'echo "$(hostname) slots=8" > "$HOSTFILE"; echo "$SLURMD_NODENAME slots=8" >> "$HOSTFILE"',
        )
    ):
        job = _script_hostfile(tmp_path / str(n), writes)
        assert _findings(job, tmp_path / str(n)) == [], writes


def test_runners_over_a_hostfile_of_the_jobs_nodes_each_start_every_rank(tmp_path: Path):
    # `scontrol show hostnames` lists the job's 4 nodes (#SBATCH --nodes=4) a line each: each of srun's 4 runners
    # reads 4 hosts and, without --no_ssh, starts all 32 ranks (quiet while plint could not count the lines)
    for n, writes in enumerate(
        (
            'for h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do echo "$h slots=8" >> "$HOSTFILE"; done',
            'NODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST"); echo "$NODES" | sed "s/$/ slots=8/" > "$HOSTFILE"',
            'scontrol show hostnames | while read -r h; do echo "$h slots=8"; done > "$HOSTFILE"',
        )
    ):
        ((line, _, message),) = _findings(_script_hostfile(tmp_path / str(n), writes), tmp_path / str(n))
        assert line == 15 and "each, multi-node without --no_ssh, starts every rank" in message, writes


def test_a_hostfile_of_the_jobs_nodes_counts_them(tmp_path: Path):
    # failed before: the loop's one reading made a one-line file, read as 1 node and a world of 8; then, until
    # scontrol's list was read, the count was unknown
    job = _script_hostfile(tmp_path, 'for h in $(scontrol show hostnames); do echo "$h slots=8" >> "$HOSTFILE"; done')
    (result,) = check_paths([job], root=str(tmp_path))
    layout = file_json(result)["layout"]
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"]) == (4, 32)
    assert layout["provenance"]["cluster.nnodes"]["origin"] == "derived"
    assert layout["cluster"]["gpus_per_node"] == 8  # every line the script writes says slots=8
    assert not [d for d in result.diagnostics if d.code == "PL208"]  # no 'bad entry' for a line of a host name


def test_a_hostfile_written_from_unknown_lines_has_no_host_count(tmp_path: Path):
    unknown = _script_hostfile(tmp_path / "env", 'echo "$NODE_LINES" > "$HOSTFILE"')
    (result,) = check_paths([unknown], root=str(tmp_path / "env"))
    assert file_json(result)["layout"]["cluster"]["nnodes"] is None  # lines from the caller's environment
    assert not [d for d in result.diagnostics if d.code == "PL208"]  # failed before: 'Hostfile contains a bad entry'


def test_slurmd_nodename_writes_one_host(tmp_path: Path):
    # failed before: quiet; sbatch(1): SLURMD_NODENAME is the name of the node running the job script
    job = _script_hostfile(tmp_path, 'echo "$SLURMD_NODENAME slots=8" > "$HOSTFILE"')
    ((_, _, message),) = _findings(job, tmp_path)
    assert "and its hostfile names one host" in message


# ---- no hostfile: each srun task's runner runs only its own node (runner.py fetch_hostfile: "local resources only")


def test_deepspeed_runner_per_node_without_hostfile_is_separate_one_node_jobs():
    # failed before: PL204 was silent when the runners had no hostfile, each a one-node job of its own
    ((line, col, message),) = _findings(LAUNCHES / NO_HOSTFILE / "job.slurm")
    assert (line, col) == (12, 1)  # the srun word
    # /job/hostfile, the runner's default --hostfile, decides which: neither outcome is claimed as certain
    assert message.startswith(
        "srun starts DeepSpeed's runner 4 times (one per node) with no --hostfile: where /job/hostfile "
        "(DeepSpeed's default) is missing, each runs its own node's GPUs only: 4 separate jobs of 8 ranks instead "
        "of one of 32; where it lists several hosts, each starts them all: 4 copies of the job; write the job's "
        "nodes to a hostfile (`<host> slots=8` a line) and run deepspeed once outside srun"
    )
    assert message.endswith("--no_ssh --node_rank $SLURM_NODEID --master_addr (the first node)")


def test_deepspeed_runner_without_hostfile_counts_num_gpus(tmp_path: Path):
    # failed before: silent; --num_gpus sets each one-node job's ranks (runner.py main: range(num_gpus) per host)
    job = _variant(tmp_path, "srun deepspeed ", "srun --nodes 2 deepspeed --num_gpus 4 ", fixture=NO_HOSTFILE)
    ((_, _, message),) = _findings(job, tmp_path)
    assert "srun starts DeepSpeed's runner 2 times (one per node)" in message
    assert ": 2 separate jobs of 4 ranks instead of one of 8;" in message


def test_deepspeed_runner_without_hostfile_is_quiet_where_the_launch_is_right_or_unknown(tmp_path: Path):
    for name in ("srun-deepspeed-one-node", "srun-deepspeed-no-ssh", "srun-deepspeed-hostfile-env"):
        assert _findings(LAUNCHES / name / "job.slurm") == [], name
    for n, options in enumerate(
        (
            "--force_multi --launcher slurm",  # the backend decides where the ranks land
            "--hostfile hostfile.$SLURM_JOB_ID",  # a file written at run time: plint cannot tell its hosts
            "--include localhost:0,1,2,3",  # hosts chosen by hand
        )
    ):
        job = _variant(tmp_path / str(n), "srun deepspeed ", f"srun deepspeed {options} ", fixture=NO_HOSTFILE)
        assert _findings(job, tmp_path / str(n)) == [], options


def test_deepspeed_runner_with_no_ssh_but_no_hostfile_fails_its_node_rank_check(tmp_path: Path):
    # failed before: silent; with no hostfile the runner's resources are one node, and runner.py main asserts
    # 0 <= node_rank < 1 under --no_ssh, so --no_ssh does not join the per-node runners into one job
    job = _variant(
        tmp_path, "srun deepspeed ", "srun deepspeed --no_ssh --node_rank $SLURM_NODEID ", fixture=NO_HOSTFILE
    )
    ((line, col, message),) = _findings(job, tmp_path)
    assert (line, col) == (12, 1)
    assert message == (
        "srun starts DeepSpeed's runner 4 times (one per node) with --no_ssh but no --hostfile, so unless "
        "/job/hostfile (DeepSpeed's default) lists the job's nodes each runner knows only its own node and its "
        "--node_rank must be 0: a runner given a --node_rank above 0 stops at that check, "
        "one given 0 trains its node alone with 8 ranks instead of 32; give every task a --hostfile of the job's "
        "nodes (`<host> slots=8` a line), which --no_ssh needs"
    )
    unset = _no_ssh_message(tmp_path / "unset", "", fixture=NO_HOSTFILE)
    assert "without --node_rank (default -1) every runner stops at that check" in unset
    zero = _no_ssh_message(tmp_path / "zero", "--node_rank 0 ", fixture=NO_HOSTFILE)
    assert "must be 0: 4 separate jobs of 8 ranks instead of one of 32;" in zero
