"""PL305 on DeepSpeed launches speaks of ZeRO stage 0 only when the config that sets the stage was read: an
unknown config may shard, and plint says it is unknown (PL002) rather than guessing stage 0."""

from plint.checking.check import check_paths

LAUNCH = (
    "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
    "--seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 64 --fp16 "
    "--deepspeed --deepspeed_config {config}\n"
)


def _codes(tmp_path, config_path: str, stage: int) -> list[str]:
    """The finding codes of the launch checked in tmp_path/repo, its config (ZeRO `stage`) at config_path
    relative to the repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "launch.sh").write_text(LAUNCH.format(config=config_path))
    (repo / config_path).write_text(f'{{"train_batch_size": 64, "zero_optimization": {{"stage": {stage}}}}}\n')
    (result,) = check_paths([repo / "launch.sh"], root=str(repo))
    return [d.code for d in result.diagnostics]


def test_a_config_outside_the_checked_tree_draws_no_zero_stage_warning(tmp_path):
    # fail before: "dp 8 at ZeRO stage 0" although the stage was never read
    codes = _codes(tmp_path, "../ds.json", 1)
    assert "PL305" not in codes and "PL002" in codes


def test_a_config_read_at_stage_0_still_draws_the_warning(tmp_path):
    assert "PL305" in _codes(tmp_path, "ds.json", 0)
