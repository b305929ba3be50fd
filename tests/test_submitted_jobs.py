"""Jobs a script submits with `sbatch --export=ALL,NAME=VALUE`, each writing its own DeepSpeed config under a name
known only when it runs, and Megatron-DeepSpeed forks that merged flags of both known forks (OpenLLM-France's
Lucie sweeps, written here)."""

from plint.checking.check import check_paths
from plint.reading.shell.model import Word
from plint.reading.sources.trainer import fork_release

JOB = """#!/bin/bash
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
GPUS_PER_NODE=8
config_json="./ds_config.$SLURM_JOBID.json"
cat <<EOT > $config_json
{"train_batch_size": $GLOBAL_BATCH_SIZE, "train_micro_batch_size_per_gpu": $MICRO_BATCH_SIZE, "zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}
EOT
srun bash -c "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $SLURM_NNODES pretrain_gpt.py \\
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --num-layers 32 --hidden-size 4096 \\
    --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size $MICRO_BATCH_SIZE \\
    --global-batch-size $GLOBAL_BATCH_SIZE --train-iters 10 --bf16 --deepspeed --deepspeed_config $config_json \\
    --zero-stage 1"
"""

SUBMIT = """#!/bin/bash
submit_job() {
    local nodes=$1
    local TP=$2
    local PP=$3
    local GLOBAL_BATCH_SIZE=$4
    local MICRO_BATCH_SIZE=$5
    sbatch --export=ALL,TP=$TP,PP=$PP,GLOBAL_BATCH_SIZE=$GLOBAL_BATCH_SIZE,MICRO_BATCH_SIZE=$MICRO_BATCH_SIZE --nodes $nodes job.slurm
}
submit_job 4 2 2 256 2
submit_job 4 2 2 256 4
"""


def _check(tmp_path):
    (tmp_path / "job.slurm").write_text(JOB)
    (tmp_path / "submit.sh").write_text(SUBMIT)
    (result,) = check_paths([tmp_path / "submit.sh"], root=str(tmp_path))
    return result


def test_sbatch_export_sets_the_jobs_variables(tmp_path):
    # fail before: the job saw no TP, PP or batch sizes (and tree-sitter split the --export word at `$PP`)
    layouts = _check(tmp_path).layouts
    assert [(lay.value("parallel.tp"), lay.value("parallel.pp"), lay.value("batch.micro")) for lay in layouts] == [
        (2, 2, 2),
        (2, 2, 4),
    ]
    assert [lay.value("cluster.world_size") for lay in layouts] == [32, 32]


SWEEP = """#!/bin/bash
for MB in 2 4; do
    cat > ds.$SLURM_JOBID.json <<JSON
{"train_micro_batch_size_per_gpu": $MB, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 1}}
JSON
    torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 \\
        --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size $MB --global-batch-size $((MB * 8)) \\
        --train-iters 10 --bf16 --deepspeed --deepspeed_config ds.$SLURM_JOBID.json
done
"""


def test_each_launch_reads_the_config_as_it_was_written_before_it(tmp_path):
    # fail before: both launches read the last ds.$SLURM_JOBID.json written (micro 4), a false PL106 on the first
    (tmp_path / "sweep.sh").write_text(SWEEP)
    (result,) = check_paths([tmp_path / "sweep.sh"], root=str(tmp_path))
    assert [lay.value("batch.micro") for lay in result.layouts] == [2, 4]
    assert "PL106" not in [d.code for d in result.diagnostics]
    assert "PL106" not in [d.code for d in _check(tmp_path).diagnostics]  # the submitted jobs, each its own


def test_a_fork_with_both_forks_flags_is_not_recognised_as_either():
    bigscience_only = Word.of("--tokenizer-name-or-path")
    merged = [bigscience_only, Word.of("gpt2"), Word.of("--num-key-value-heads"), Word.of("8")]
    assert fork_release(Word.of("pretrain_gpt.py"), merged) is None
    assert fork_release(Word.of("pretrain_gpt.py"), merged[:2]).value == "bigscience"


def test_a_launch_in_a_job_the_script_submits_runs_under_slurm(tmp_path):
    # yuguo-Jack/ChatGLM-6B-in-DeepSpeed-Chat: run.sh makes folders, then `sbatch run-step1.sh`, whose launch the
    # layout is; the job is Slurm's whether or not the submitted file has #SBATCH lines
    (tmp_path / "job.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\nmkdir -p log\nsbatch job.sh\n")
    (tmp_path / "wrap.sh").write_text("#!/bin/bash\nsbatch --wrap 'torchrun --nproc_per_node 8 pretrain_gpt.py'\n")
    for name in ("run.sh", "wrap.sh"):
        (result,) = check_paths([tmp_path / name], root=str(tmp_path))
        scheduler = result.layouts[0].fields["scheduler"]
        assert (scheduler.value, scheduler.note) == ("slurm", "a job the script submits with sbatch"), name


PBS_JOB = """#!/bin/bash
#PBS -l walltime=01:00:00
#PBS -l select=1:ngpus=8
NNODES=$(sort -u $PBS_NODEFILE | wc -l)
mpirun -np $((NNODES * 8)) --hostfile $PBS_NODEFILE python pretrain_gpt.py --tensor-model-parallel-size $TP \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 64 --bf16
"""


def test_qsub_submits_a_pbs_job_with_its_options_and_variables(tmp_path):
    """llm-jp/ft-llm-2026's run_train.sh: `qsub -l select=$3 -v RTYPE=rt_HF,ENV_DIR=...,TASK_DIR=... train/qsub_train.sh`.
    The job is PBS's (before: no scheduler), its select on the command line wins over the script's (qsub(1B)), so
    its node file has two hosts, and -v puts the variables in its environment (before: TP unset)."""
    (tmp_path / "job.sh").write_text(PBS_JOB)
    (tmp_path / "run.sh").write_text("#!/bin/bash\nqsub -l select=2:ngpus=8 -v TP=4,NAME=x -N run job.sh\n")
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    (layout,) = result.layouts
    scheduler = layout.fields["scheduler"]
    assert (scheduler.value, scheduler.note) == ("pbs", "a job the script submits with qsub")
    assert (layout.value("parallel.tp"), layout.value("cluster.world_size"), layout.value("parallel.dp")) == (4, 16, 4)
    (tmp_path / "sge.sh").write_text("#!/bin/bash\nqsub -g gcb50000 -l rt_F=2 -cwd job.sh\n")
    (result,) = check_paths([tmp_path / "sge.sh"], root=str(tmp_path))
    scheduler = result.layouts[0].fields["scheduler"]
    assert (scheduler.value, scheduler.note) == ("sge", "a job the script submits with Grid Engine's qsub")


def test_a_job_submitted_from_a_script_another_runs_keeps_its_node_file(tmp_path):
    """`bash sub.sh` whose sub.sh runs `qsub -l select=2 job.sh`: the child shell hands the job its node file too
    (before: the variables only, so the job counted no hosts)."""
    (tmp_path / "job.sh").write_text(PBS_JOB)
    (tmp_path / "sub.sh").write_text("#!/bin/bash\nqsub -l select=2:ngpus=8 -v TP=4 job.sh\n")
    (tmp_path / "outer.sh").write_text("#!/bin/bash\nbash sub.sh\n")
    (result,) = check_paths([tmp_path / "outer.sh"], root=str(tmp_path))
    assert result.layouts[0].value("cluster.world_size") == 16
