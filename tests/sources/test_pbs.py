"""#PBS directives, the node file PBS writes for a job, and how a script counts its nodes from it (OpenPBS at
cd7ab5ed: src/cmds/qsub_sup.c, src/resmom/start_exec.c generate_pbs_nodefile, doc/man1/pbs_resources.7B)."""

from __future__ import annotations

import json

import pytest

from plint.checking.check import check_paths
from plint.reading.read import _pbs_job
from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.reading.sources.pbs import Chunk, implied_env, node_file, read_directives
from plint.report.json_report import file_json
from plint.source import SourceFile


def job(text: str):
    return read_directives(SourceFile("job.pbs", text))


def variable(text: str, name: str) -> tuple[str | None, str]:
    """The value and origin of `name` after the script runs in the job its #PBS lines ask for."""
    source = SourceFile("job.pbs", text)
    pbs, files = _pbs_job(source)
    result = evaluate(source, EvalOptions(env=implied_env(pbs), files=files))
    pieces = result.variables[name].value
    assert len(pieces) == 1
    return pieces[0].text, pieces[0].origin


@pytest.mark.parametrize(
    "spec, chunks",
    [
        ("select=4", [Chunk(4, 1)]),
        ("select=32:ncpus=8:mpiprocs=8:ngpus=8", [Chunk(32, 8)]),
        ("select=2:system=polaris", [Chunk(2, 1)]),
        ("select=ncpus=4", [Chunk(1, 1)]),
        ("select=2:ncpus=0", [Chunk(2, 0)]),  # mpiprocs defaults to 0 where ncpus is 0
        ("select=2:mpiprocs=4+1:mpiprocs=2", [Chunk(2, 4), Chunk(1, 2)]),
        ("nodes=4:ppn=8", [Chunk(4, 8)]),  # the old spelling: ppn is mpiprocs
        ("nodes=3", [Chunk(3, 1)]),
        # a host name or a Boolean property in the old spelling counts nothing; nor does a #suffix
        ("nodes=2:ppn=8:a100", [Chunk(2, 8)]),
        ("nodes=gpu01:ppn=4+gpu02:ppn=4", [Chunk(1, 4), Chunk(1, 4)]),
        ("nodes=1:ppn=16#excl", [Chunk(1, 16)]),
    ],
)
def test_chunks_of_a_select_statement(spec, chunks):
    assert job(f"#!/bin/bash\n#PBS -l {spec}\n").chunks == chunks


def test_directives_end_at_the_first_command_and_may_be_indented():
    j = job("#!/bin/bash\n  #PBS -N first\n\n# a comment\n#PBS -l select=2\ncd $PBS_O_WORKDIR\n#PBS -l select=9\n")
    assert j.job_name == "first" and j.chunks == [Chunk(2, 1)]


def test_resources_on_one_line_and_a_continued_directive():
    j = job("#PBS -l select=2:ngpus=4,walltime=01:00:00,place=scatter\n")
    assert j.chunks == [Chunk(2, 1)] and j.scatter
    assert job("#PBS -l \\\n  select=3\n").chunks == [Chunk(3, 1)]
    assert job("#PBS -lselect=5\n").chunks == [Chunk(5, 1)]


def test_of_a_resource_the_directives_give_twice_the_first_stands():
    """IBM/materials' Polaris jobs: `#PBS -l select=99:ncpus=32:system=polaris`, later `#PBS -lselect=1:mem=384GB`.
    qsub adds a directive's resource only when none of that name is on its list yet (openpbs set_resource.c,
    add=False for directives), so 99 nodes, not 1 (before: the later one, 1 node)."""
    j = job("#PBS -l select=99:ncpus=32\n#PBS -l place=scatter\n#PBS -lselect=1:mem=384GB\n#PBS -l place=pack\n")
    assert j.chunks == [Chunk(99, 1)] and j.scatter


def test_no_directive_no_job():
    assert job("#!/bin/bash\necho '#PBS -l select=2'\n") is None


def test_node_file_lists_each_chunk_host_once_per_mpi_process():
    lines = "".join("H" if p.text is None else p.text for p in node_file(job("#PBS -l select=2:mpiprocs=3\n")).pieces)
    assert lines == "H\nH\nH\nH\nH\nH\n"


def test_counting_lines_of_the_node_file_is_derived():
    text = "#!/bin/bash\n#PBS -l select=4\nN=$(wc -l < $PBS_NODEFILE)\n"
    assert variable(text, "N") == ("4", "derived")
    text = "#!/bin/bash\n#PBS -l select=2:mpiprocs=8\nN=$(cat $PBS_NODEFILE | wc -l)\n"
    assert variable(text, "N") == ("16", "derived")
    text = '#!/bin/bash\n#PBS -l select=3\nN=$(< "$PBS_NODEFILE" wc -l)\n'  # the redirect written first
    assert variable(text, "N") == ("3", "derived")


@pytest.mark.parametrize(
    "count",
    [
        "$(sort -u $PBS_NODEFILE | wc -l)",
        "$(cat $PBS_NODEFILE | uniq | wc -l)",
        "$(sort $PBS_NODEFILE | uniq | wc -l)",
        "$(uniq $PBS_NODEFILE | wc -l)",
    ],
)
def test_counting_hosts_is_assumed_unless_chunks_are_scattered(count):
    # pbs_resources.7B "Default Placement": without a place statement the arrangement is free, and two
    # chunks may share a host; place=scatter gives every chunk a host of its own
    free = f"#!/bin/bash\n#PBS -l select=32:ncpus=8:mpiprocs=8:ngpus=8\nN={count}\nG=$((N * 8))\n"
    assert variable(free, "N") == ("32", "assumed")
    assert variable(free, "G") == ("256", "assumed")
    scattered = free.replace("ngpus=8\n", "ngpus=8\n#PBS -l place=scatter:excl\n")
    assert variable(scattered, "N") == ("32", "derived")


def test_one_chunk_is_one_host_for_certain():
    assert variable("#PBS -l select=1:mpiprocs=8\nN=$(sort -u $PBS_NODEFILE | wc -l)\n", "N") == ("1", "derived")


def test_what_the_node_file_does_not_say_stays_unknown():
    text = "#PBS -l select=2\nH=$(head -n 1 $PBS_NODEFILE)\nW=$(wc -c < $PBS_NODEFILE)\n"
    assert variable(text, "H")[0] is None and variable(text, "W")[0] is None
    # a select plint cannot count gives no node file
    assert variable("#PBS -l select=$N\nX=$(wc -l < $PBS_NODEFILE)\n", "X")[0] is None


def test_job_variables():
    env = implied_env(job("#PBS -N train\n#PBS -q prod\n#PBS -l select=1\n"))
    assert env["PBS_JOBNAME"].value[0].text == "train" and env["PBS_QUEUE"].value[0].text == "prod"
    assert env["PBS_ENVIRONMENT"].value[0].text == "PBS_BATCH"
    assert env["PBS_JOBID"].value[0].text is None and env["PBS_JOBID"].value[0].nonempty


@pytest.mark.parametrize(
    "spec, counts",
    [
        ("nodes=2:ppn=4:gpus=4", ("2", "4", "8")),
        ("nodes=1", ("1", "1", "1")),
        ("nodes=2:ppn=8+gpu07:ppn=2", ("3", "8", "18")),  # PBS_NUM_PPN is the first part's
    ],
)
def test_torque_counts_for_the_old_node_spelling(spec, counts):
    """Torque's PBS_NUM_NODES, PBS_NUM_PPN and PBS_NP (start_exec.c InitUserEnv, get_num_nodes_ppn, ji_numvnod)."""
    env = implied_env(job(f"#PBS -l {spec}\n"))
    values = tuple(env[name].value[0].text for name in ("PBS_NUM_NODES", "PBS_NUM_PPN", "PBS_NP"))
    assert values == counts
    assert env["PBS_NUM_NODES"].value[0].origin == "derived"
    # OpenPBS's select sets none of them: a script reading them there gets nothing plint could know
    assert "PBS_NUM_NODES" not in implied_env(job("#PBS -l select=2:mpiprocs=4\n"))


def test_a_torque_job_sized_by_its_variables(tmp_path):
    script = tmp_path / "train.pbs"
    script.write_text(
        "#!/bin/sh\n#PBS -q gpu\n#PBS -l nodes=2:ppn=4:gpus=4\ncd $PBS_O_WORKDIR\n"
        "WORLD=`expr $PBS_NUM_NODES \\* $PBS_NUM_PPN`\n"
        "python3 -m torch.distributed.run --nproc_per_node=$PBS_NUM_PPN --nnodes=$PBS_NUM_NODES"
        " --rdzv_id=$PBS_JOBID --rdzv_backend=c10d --rdzv_endpoint=$(hostname -s):29500 pretrain_gpt.py"
        " --tensor-model-parallel-size 4 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128"
        " --max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 16\n"
    )
    (result,) = check_paths([script])
    layout = file_json(result)["layout"]
    assert layout["scheduler"] == "pbs"
    assert (layout["cluster"]["nnodes"], layout["cluster"]["gpus_per_node"], layout["parallel"]["dp"]) == (2, 4, 2)
    assert layout["provenance"]["cluster.nnodes"]["origin"] == "derived"
    assert layout["provenance"]["cluster.nnodes"]["line"] == 3  # the #PBS -l nodes= line


def test_abci_job_end_to_end(tmp_path):
    """llm-jp's ABCI 3.0 jobs (benchmarks/corpus/labels5): nodes from the node file, GPUs from the script."""
    script = tmp_path / "qsub_train.sh"
    script.write_text(
        "#!/bin/bash\n#PBS -l select=4\n#PBS -l place=scatter\ncd $PBS_O_WORKDIR\n"
        "NUM_NODES=$(wc -l < $PBS_NODEFILE)\nNUM_GPUS_PER_NODE=8\nNUM_GPUS=$((NUM_NODES * NUM_GPUS_PER_NODE))\n"
        "mpirun -np $NUM_GPUS --npernode $NUM_GPUS_PER_NODE python pretrain_gpt.py --tensor-model-parallel-size 2"
        " --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096 --max-position-embeddings 4096"
        " --micro-batch-size 1 --global-batch-size 256 --bf16 --use-distributed-optimizer --sequence-parallel\n"
    )
    (result,) = check_paths([script])
    layout = json.loads(json.dumps(file_json(result)))["layout"]
    assert layout["scheduler"] == "pbs"
    assert layout["cluster"]["nnodes"] == 4 and layout["cluster"]["world_size"] == 32
    assert layout["provenance"]["cluster.nnodes"]["origin"] == "derived"
    assert layout["parallel"]["dp"] == 16


def test_nodes_counted_by_assumption_stay_assumed_through_the_launch(tmp_path):
    """Free placement: the host count is assumed, and so are the world size, the node count mpirun's
    -np / --npernode give, and dp, computed from it."""
    script = tmp_path / "exp1.sh"
    script.write_text(
        "#!/bin/bash\n#PBS -l select=32:ncpus=8:mpiprocs=8:ngpus=8\n"
        "NUM_NODES=$(sort -u $PBS_NODEFILE | wc -l)\nNUM_GPUS=$((NUM_NODES * 8))\n"
        "mpirun -np $NUM_GPUS --npernode 8 python pretrain_gpt.py --num-layers 2 --hidden-size 64"
        " --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1"
        " --global-batch-size 256\n"
    )
    (result,) = check_paths([script])
    layout = file_json(result)["layout"]
    assert (layout["cluster"]["nnodes"], layout["cluster"]["world_size"]) == (32, 256)
    origins = {k: layout["provenance"][k]["origin"] for k in ("cluster.nnodes", "cluster.world_size", "parallel.dp")}
    assert origins == dict.fromkeys(origins, "assumed")


def test_a_node_file_past_the_bound_is_not_built():
    """10^10 lines (select=100000:mpiprocs=99999+...) would be gigabytes: the file stays unknown."""
    assert node_file(job("#PBS -l select=100000:mpiprocs=99999+1:ncpus=0\n")) is None
    text = "#PBS -l select=100000:mpiprocs=99999\nN=$(wc -l < $PBS_NODEFILE)\n"
    assert variable(text, "N")[0] is None


DS_FLAGS = (
    " pretrain_gpt.py --deepspeed --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128"
    " --max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 16\n"
)


def checked(tmp_path, text: str):
    script = tmp_path / "job.sh"
    script.write_text(text)
    (result,) = check_paths([script])
    return result, file_json(result)["layout"]


@pytest.mark.parametrize("place, origin", [("#PBS -l place=scatter\n", "derived"), ("", "assumed")])
def test_a_deepspeed_hostfile_written_from_the_node_file(tmp_path, place, origin):
    """ALCF's way: `sed 's/$/ slots=4/' $PBS_NODEFILE > hostfile`, hosts counted by chunk."""
    text = f"#!/bin/bash\n#PBS -l select=2\n{place}sed 's/$/ slots=4/' $PBS_NODEFILE > hostfile\n"
    _, layout = checked(tmp_path, text + "deepspeed --hostfile hostfile" + DS_FLAGS)
    cluster = layout["cluster"]
    assert (cluster["nnodes"], cluster["gpus_per_node"], cluster["world_size"]) == (2, 4, 8)
    assert layout["provenance"]["cluster.nnodes"]["origin"] == origin


def test_the_node_file_as_a_deepspeed_hostfile_is_refused(tmp_path):
    """runner.py _parse_hostfile wants `host slots=N`: a bare host name is a bad entry, and a host the node file
    lists once per MPI process is a repeated one."""
    result, _ = checked(tmp_path, "#!/bin/bash\n#PBS -l select=2\ndeepspeed --hostfile $PBS_NODEFILE" + DS_FLAGS)
    (found,) = [d for d in result.diagnostics if d.code == "PL208"]
    assert "bad entry: <the host of the job's chunk 1>" in found.message and (found.path, found.line) == (
        str(tmp_path / "job.sh"),
        3,
    )
    text = "#!/bin/bash\n#PBS -l select=2:mpiprocs=4\nsed 's/$/ slots=1/' $PBS_NODEFILE > hf\n"
    result, _ = checked(tmp_path, text + "deepspeed --hostfile hf" + DS_FLAGS)
    assert any("multiple entries for <the host of the job's chunk 1>" in d.message for d in result.diagnostics)


def test_qsub_flags_take_no_value():
    """`-V`, `-z` and the other flags of qsub's getopt string leave the next word an option of its own."""
    assert job("#PBS -z -l select=3\n#PBS -V -N run\n").chunks == [Chunk(3, 1)]
    assert job("#PBS -V -N run\n").job_name == "run"


def test_a_continued_directive_points_at_its_own_line():
    text = "#PBS -l \\\n  select=3:mpiprocs=2\n"
    j = job(text)
    assert j.chunks == [Chunk(3, 2)] and j.select_span.line == 2
    assert text.encode()[j.select_span.start : j.select_span.end] == b"select=3:mpiprocs=2"


def test_a_core_count_past_pythons_digit_limit_is_read_as_digits():
    assert job(f"#PBS -l select=2:ncpus={'9' * 5000}\n").chunks == [Chunk(2, 1)]
