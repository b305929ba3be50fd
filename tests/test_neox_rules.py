"""Rules on GPT-NeoX launches (deepy.py): NeoX takes YAML keys, not Megatron's flags, so advice names its
config keys or stays quiet (each fails before: PL308 advised --recompute-activations, PL305 a DeepSpeed
config, PL310 --micro-batch-size, PL309 --no-pipeline-parallel, none of which a NeoX launch has)."""

from __future__ import annotations

from pathlib import Path

from fixture_paths import ROOT
from plint.checking.check import check_paths

LAUNCHES = ROOT / "fixtures" / "launches"


def _messages(folder: str, code: str) -> list[str]:
    (result,) = check_paths([LAUNCHES / folder / "launch.sh"])
    return [d.message for d in result.diagnostics if d.code == code]


def test_no_selective_recompute_is_advised_to_gpt_neox():
    # GPT-NeoX has full activation checkpointing only (checkpoint_activations)
    assert _messages("neox-conf-dir-merged", "PL308") == []


def test_zero_1_is_advised_in_the_gpt_neox_config():
    (message,) = _messages("neox-duplicate-key", "PL305")
    assert '"zero_optimization": {"stage": 1} in the GPT-NeoX config' in message
    assert "--use-distributed-optimizer" not in message


def test_a_larger_micro_batch_is_named_by_neoxs_key():
    (message,) = _messages("neox-heads-indivisible", "PL310")
    assert '"train_micro_batch_size_per_gpu": ' in message and "--micro-batch-size" not in message


def test_zero_2_with_neoxs_pipeline_module_names_pipe_parallel_size_0(tmp_path: Path):
    source = LAUNCHES / "neox-heads-indivisible"
    for path in source.rglob("*"):
        if path.is_file() and path.name not in ("golden.json", "expected.yaml"):
            target = tmp_path / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    config = next(p for p in (tmp_path / "configs").iterdir() if "zero_optimization" in p.read_text())
    config.write_text(config.read_text().replace('"stage": 1', '"stage": 2'))
    (result,) = check_paths([tmp_path / "launch.sh"], root=str(tmp_path))
    (message,) = [d.message for d in result.diagnostics if d.code == "PL309"]
    assert "without pipe_parallel_size 0 (even at pp 1)" in message


# ---- deepy.py under srun (PL204): deepy.py runs DeepSpeed's runner, which starts every rank itself; each failed
# before (per-gpu gave the per-node torchrun count at the #SBATCH line, the others said nothing) ----


def _srun_findings(folder: Path, root: Path = ROOT) -> list[tuple[int, int, str]]:
    (result,) = check_paths([folder / "job.slurm"], root=str(root))
    return [(d.line, d.col, d.message) for d in result.diagnostics if d.code == "PL204"]


def _copy(name: str, tmp_path: Path) -> Path:
    source = LAUNCHES / name
    for path in source.rglob("*"):
        if path.is_file() and path.name not in ("golden.json", "expected.yaml"):
            target = tmp_path / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    return tmp_path


def test_deepy_in_every_srun_task_starts_the_whole_job_each_time():
    ((line, col, message),) = _srun_findings(LAUNCHES / "neox-srun-per-gpu")
    assert (line, col) == (13, 1)  # the srun word
    assert message.startswith("srun starts deepy.py 16 times, and each runs DeepSpeed's runner")
    assert "on its 2 hosts through pdsh: 16 x 16 = 256 processes for a job of 16 ranks" in message
    assert "GPT-NeoX's deepy.py assumed" in message  # the fixture has no deepy.py


def test_deepy_once_per_node_is_a_double_launch_too():
    ((line, col, message),) = _srun_findings(LAUNCHES / "neox-srun-per-node")
    assert (line, col) == (13, 1)
    assert "srun starts deepy.py 2 times" in message and "2 x 16 = 32 processes for a job of 16 ranks" in message
    assert "assumed" not in message  # the fixture's deepy.py imports deepspeed.launcher.runner: read, not assumed
    assert message.endswith("run deepy.py once, not under srun")


def test_deepy_with_launcher_slurm_under_srun_is_srun_inside_srun():
    ((line, col, message),) = _srun_findings(LAUNCHES / "neox-srun-slurm-launcher")
    assert (line, col) == (12, 1)
    assert "calls srun itself for every rank (launcher slurm: srun inside srun): 2 x 16 = 32 processes" in message


def test_deepy_on_each_node_without_a_hostfile_runs_separate_jobs():
    ((line, col, message),) = _srun_findings(LAUNCHES / "neox-srun-no-hostfile")
    assert (line, col) == (12, 1)
    assert "on each of 2 nodes" in message and "2 separate jobs of 8 ranks instead of one of 16" in message


def test_deepy_run_once_is_quiet():
    assert _srun_findings(LAUNCHES / "neox-srun-once") == []  # srun --nodes=1 --ntasks=1
    assert _srun_findings(LAUNCHES / "neox-srun-by-runner") == []  # the batch script runs it; the runner calls srun


def test_deepy_per_gpu_on_a_local_runner_counts_processes_per_node(tmp_path: Path):
    folder = _copy("neox-srun-no-hostfile", tmp_path)
    job = folder / "job.slurm"
    job.write_text(job.read_text().replace("--ntasks-per-node=1", "--ntasks-per-node=8"))
    ((_, _, message),) = _srun_findings(folder, tmp_path)
    assert "srun starts deepy.py 16 times, and each runs DeepSpeed's runner on every GPU of its node" in message
    assert "8 x 8 = 64 processes per node" in message


def test_a_forks_deepy_that_runs_the_trainer_is_one_rank(tmp_path: Path):
    # a fork's deepy.py that calls the trainer's main itself (as ZhiYuanZeng/gpt-moe's does): srun with a task
    # per GPU is then its launcher, and right
    folder = _copy("neox-srun-per-gpu", tmp_path)
    (folder / "deepy.py").write_text(
        "from megatron.neox_arguments import NeoXArgs\nfrom train import main\n\n"
        "main(NeoXArgs.consume_deepy_args().get_main_args())\n"
    )
    assert _srun_findings(folder, tmp_path) == []


def test_every_form_of_importing_deepspeeds_runner_is_recognised():
    from plint.reading.sources.neox import imports_runner
    from plint.source import SourceFile

    for text in (
        "import deepspeed.launcher.runner\n",
        "from deepspeed.launcher.runner import main\n",  # deepy.py until 2022
        "from deepspeed.launcher import runner\n",
    ):
        assert imports_runner(SourceFile("deepy.py", text)) is True, text
    assert imports_runner(SourceFile("deepy.py", "from train import main\nmain()\n")) is False
    assert imports_runner(SourceFile("deepy.py", "def broken(:\n")) is None


def test_a_strangers_deepy_py_is_parsed_bounded():
    """deepy.py is a file plint opens (to tell upstream's runner from a fork's rank): one past the size bound,
    or nested past what the parser takes, is 'cannot be parsed' (upstream's assumed), never a crash."""
    from plint.reading.sources.neox import _DEEPY_MAX_CHARS, imports_runner
    from plint.source import SourceFile

    runner = "import deepspeed.launcher.runner\n"
    hostile = (
        runner + "#" * _DEEPY_MAX_CHARS,  # past the bound: not parsed, even with the import in it
        runner + "x = " + "(" * 5000 + ")" * 5000 + "\n",  # deeper than the parser nests
        runner + "x = " + "-" * 200_000 + "1\n",  # a chain the parser recurses on
    )
    for text in hostile:
        assert imports_runner(SourceFile("deepy.py", text)) is None


def test_an_exported_dlts_hostfile_makes_each_runner_start_both_nodes(tmp_path: Path):
    # get_deepspeed_main_args appends --hostfile $DLTS_HOSTFILE: the runner on each node then launches both
    folder = _copy("neox-srun-no-hostfile", tmp_path)
    (folder / "hostfile").write_text("node0 slots=8\nnode1 slots=8\n")
    job = folder / "job.slurm"
    job.write_text(job.read_text().replace("export CUDA", "export DLTS_HOSTFILE=hostfile\nexport CUDA"))
    ((_, _, message),) = _srun_findings(folder, tmp_path)
    assert "srun starts deepy.py 2 times" in message and "on its 2 hosts through pdsh: 2 x 16 = 32 processes" in message
