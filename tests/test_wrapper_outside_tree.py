"""A script the launch names outside the checked tree, handed a Megatron entry script and its flags, is read as the
wrapper it almost always is (LUMI's `launch.sh`: per-rank variables, then `python "$@"`); one inside the tree is
run, and its own command is the launch (no second reading of the line that calls it)."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

JOB = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
MEGATRON_PATH=/scratch/project_1/megatron
CMD="${MEGATRON_PATH}/pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 256 \\
  --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 --micro-batch-size 1 \\
  --global-batch-size 64 --train-iters 10 --bf16"
srun singularity exec -B /scratch /scratch/containers/rocm.sif ${MEGATRON_PATH}/launch.sh $CMD
"""


def _result(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "job.sh"], root=str(tmp_path))
    return result


def test_a_wrapper_outside_the_tree_runs_the_entry_script_after_it(tmp_path):
    # fail before: no launch found (PL005), the command string held in $CMD never reached a launcher
    layout = file_json(_result(tmp_path, {"job.sh": JOB}))["layout"]
    assert (layout["launcher"], layout["trainer"], layout["entrypoint"]) == ("srun", "megatron", "pretrain_gpt.py")
    assert (layout["cluster"]["world_size"], layout["parallel"]["tp"], layout["parallel"]["dp"]) == (16, 2, 8)


def test_a_wrapper_in_the_tree_is_run_not_read_as_a_wrapper(tmp_path):
    job = JOB.replace("${MEGATRON_PATH}/launch.sh", "./launch.sh")
    wrapper = '#!/bin/bash\nexport RANK=$SLURM_PROCID\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\nexec python -u "$@"\n'
    result = _result(tmp_path, {"job.sh": job, "launch.sh": wrapper})
    assert len(result.layouts) == 1 and result.layouts[0].value("parallel.tp") == 2
    assert not any("plint does not follow" in d.message for d in result.diagnostics)
