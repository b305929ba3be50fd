"""PL101 on Megatron-DeepSpeed MoE launches: DeepSpeed, not Megatron-Core, builds the expert groups, so the
finding gives DeepSpeed's check (deepspeed/utils/groups.py) in its words."""

from plint.checking.check import check_paths

DS_CONFIG = '{"train_batch_size": 256, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}\n'


def _pl101(tmp_path, nproc: int, extra: str) -> list[str]:
    launch = (
        f"torchrun --nproc_per_node {nproc} pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
        f"--global-batch-size 256 --fp16 --num-experts 16 {extra} --deepspeed --deepspeed_config ds.json\n"
    )
    (tmp_path / "launch.sh").write_text(launch)
    (tmp_path / "ds.json").write_text(DS_CONFIG)
    (result,) = check_paths([tmp_path / "launch.sh"], root=str(tmp_path))
    return [d.message for d in result.diagnostics if d.code == "PL101"]


def test_expert_tensor_parallelism_needs_the_data_parallel_size_to_divide_by_ep(tmp_path):
    (message,) = _pl101(
        tmp_path, 8, "--tensor-model-parallel-size 2 --moe-expert-parallel-size 8 --enable-expert-tensor-parallelism"
    )
    assert message.startswith("the data-parallel size world/(tp*pp) = 8/2 = 4 is not divisible by ep 8")
    assert "_create_expert_data_and_model_parallel" in message and "etp defaults" not in message


def test_without_expert_tensor_parallelism_a_pipeline_stage_s_ranks_divide_by_ep(tmp_path):
    (message,) = _pl101(tmp_path, 6, "--moe-expert-parallel-size 4")
    assert message.startswith("the 6 ranks of a pipeline stage (world/pp = 6/1) are not divisible by ep 4")
    assert "_create_expert_and_data_parallel" in message


def test_a_layout_deepspeed_accepts_draws_no_finding(tmp_path):
    assert _pl101(tmp_path, 8, "--tensor-model-parallel-size 2 --moe-expert-parallel-size 4") == []
