"""#SBATCH directives in their spellings and the SLURM_* variables they imply."""

from plint.shell.model import Word
from plint.source import SourceFile
from plint.sources.slurm import apply_options, implied_env, read_directives


def job(text: str):
    return read_directives(SourceFile("job.sbatch", text))


def test_spellings():
    j = job("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gres=gpu:h100:8\n"
            "#SBATCH --cpus-per-task 12 --exclusive\n#SBATCH -p batch\n")
    assert (j.nodes.value, j.ntasks_per_node.value, j.gpus_per_node.value, j.gpu_type.value) == (2, 8, 8, "h100")
    assert (j.cpus_per_task.value, j.exclusive.value, j.partition.value) == (12, True, "batch")
    assert (j.nodes.span.line, j.nodes.span.col) == (2, 12)


def test_gpus_and_constraint_and_ranges():
    j = job("#SBATCH --nodes=2-4\n#SBATCH --gpus=a100:16\n#SBATCH --constraint=a100-80gb\n")
    assert j.nodes.value is None and "range" in j.nodes.note
    assert j.gpus.value == 16 and j.gpu_type.value == "a100"


def test_directives_stop_at_the_first_command_and_need_the_exact_prefix():
    j = job("#!/bin/bash\n# SBATCH --nodes=64\n#SBATCH --nodes=2\necho hi\n#SBATCH --nodes=8\n")
    assert j.nodes.value == 2
    assert job("echo hi\n") is None


def test_implied_environment():
    env = implied_env(job("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"))
    values = {k: v.value[0].text for k, v in env.items()}
    assert values["SLURM_NNODES"] == "4" and values["SLURM_JOB_NUM_NODES"] == "4"
    assert values["SLURM_NTASKS"] == "32" and values["SLURM_GPUS_ON_NODE"] == "8"
    assert "SLURM_PROCID" not in values and "SLURM_NODEID" not in values
    assert all(v.value[0].origin == "derived" for v in env.values())


def test_command_line_options_override_the_file():
    j = apply_options(job("#SBATCH --nodes=1\n"), [Word.of("--nodes=3"), Word.of("-J"), Word.of("x")])
    assert j.nodes.value == 3
