"""Sharded Megatron-LM launches judged as validate_args of the release in force judges them.

Megatron-FSDP (--use-megatron-fsdp, 0.14 on; --use-custom-fsdp in 0.12 and 0.13), torch FSDP2
(--use-torch-fsdp2) and the dist_muon optimizer change what PL111, PL305, PL401's remedy and PL601 may say
(megatron/training/arguments.py validate_args of each release, read for every claim below).
"""

from plint.checking.check import check_paths
from plint.fixing.fix import fix_paths
from plint.rules.common import gpt, torchrun

LLAMA_7B = dict(layers=32, hidden=4096, heads=32, seq=4096, glob=256)
FSDP = "--use-megatron-fsdp --ckpt-format fsdp_dtensor"
FSDP2 = "--use-torch-fsdp2 --untie-embeddings-and-output-weights --no-gradient-accumulation-fusion"


def _check(tmp_path, extra: str, release: str | None = None, prefix: str | None = None, **shape):
    if release is not None:
        (tmp_path / ".plint.toml").write_text(f'megatron = "{release}"\n')
    example = (
        torchrun(gpt(extra, **(shape or LLAMA_7B)))
        if prefix is None
        else torchrun(gpt(extra, **(shape or LLAMA_7B)), prefix=prefix)
    )
    for name, text in example.files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return result


def _codes(result) -> set[str]:
    return {d.code for d in result.diagnostics}


def _messages(result, code: str) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == code]


def test_megatron_fsdp_gathers_parameters_without_the_distributed_optimizer(tmp_path):
    # 0.14 on: '--overlap-param-gather only supported with distributed optimizer or megatron fsdp'
    result = _check(tmp_path, f"{FSDP} --overlap-grad-reduce --overlap-param-gather")
    assert not _codes(result) & {"PL111", "PL305"}


def test_custom_fsdp_of_0_13_still_needs_the_distributed_optimizer(tmp_path):
    # 0.13: '--overlap-param-gather only supported with distributed optimizer' (custom FSDP asserted it too)
    result = _check(tmp_path, "--use-custom-fsdp --overlap-grad-reduce --overlap-param-gather", release="0.13")
    assert _messages(result, "PL111") == ["--overlap-param-gather requires --use-distributed-optimizer"]


def test_dist_muon_gathers_parameters_from_0_17(tmp_path):
    flags = "--optimizer dist_muon --overlap-grad-reduce --overlap-param-gather"
    (tmp_path / "new").mkdir()
    assert "PL111" not in _codes(_check(tmp_path / "new", flags, release="0.17"))
    # 0.16 knows the dist_muon choice but its validate_args accepts only the distributed optimizer or FSDP
    (tmp_path / "old").mkdir()
    assert _messages(_check(tmp_path / "old", flags, release="0.16"), "PL111") == [
        "--overlap-param-gather requires --use-distributed-optimizer"
    ]


def test_megatron_fsdp_sharding_optimizer_state_draws_no_distributed_optimizer_advice(tmp_path):
    for strategy in ("optim", "optim_grads", "optim_grads_params"):
        (tmp_path / strategy).mkdir()
        result = _check(tmp_path / strategy, f"{FSDP} --data-parallel-sharding-strategy {strategy}")
        assert "PL305" not in _codes(result), strategy


def test_megatron_fsdp_no_shard_names_the_sharding_strategy_not_the_distributed_optimizer(tmp_path):
    result = _check(tmp_path, f"{FSDP} --data-parallel-sharding-strategy no_shard")
    (diag,) = [d for d in result.diagnostics if d.code == "PL305"]
    # bf16: 2 + 4 + 12 bytes per parameter unsharded, 6 + 12/8 = 7.5 with the optimizer sharded over dp 8
    assert diag.message == (
        "Megatron-FSDP with --data-parallel-sharding-strategy no_shard at dp 8: every rank "
        "keeps the full optimizer state (18 bytes per parameter instead of 6 + 12/8 = 7.5 with "
        "--data-parallel-sharding-strategy optim)"
    )
    line = (tmp_path / "launch.sh").read_text().splitlines()[diag.line - 1]
    assert line[diag.col - 1 : diag.end_col - 1] == "no_shard"  # points at the strategy's value
    # --use-distributed-optimizer is no remedy: Megatron-FSDP v1 turns it on itself, v2 rejects it
    before = (tmp_path / "launch.sh").read_text()
    fix_paths([tmp_path / "launch.sh"], unsafe=True)
    assert (tmp_path / "launch.sh").read_text() == before
    assert all("--use-distributed-optimizer" not in m for m in _messages(result, "PL401"))


def test_megatron_fsdp_default_strategy_of_the_release(tmp_path):
    # 0.17's default strategy is no_shard; from 0.18 it is optim_grads_params
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert "PL305" in _codes(_check(tmp_path / "a", FSDP, release="0.17"))
    assert "PL305" not in _codes(_check(tmp_path / "b", FSDP, release="0.18"))


def test_torch_fsdp2_shards_everything(tmp_path):
    result = _check(tmp_path, FSDP2)
    (layout,) = result.layouts
    assert layout.value("parallel.sharding") == "parameters"
    assert layout.get("parallel.sharding").origin == "derived"
    assert "PL305" not in _codes(result)


def test_torch_fsdp2_memory_counts_sharded_states(tmp_path):
    # 7B at micro-batch 1: 18 bytes per parameter unsharded (about 130 GiB) but 18/8 sharded over dp 8: it fits
    (tmp_path / "fits").mkdir()
    assert not _codes(_check(tmp_path / "fits", FSDP2)) & {"PL401", "PL402"}
    # at micro-batch 8 it does not; FSDP2 forbids the distributed optimizer, so the remedy is never it
    (tmp_path / "big").mkdir()
    result = _check(tmp_path / "big", FSDP2, layers=32, hidden=4096, heads=32, seq=4096, micro=8, glob=256)
    (message,) = _messages(result, "PL401")
    assert "--use-distributed-optimizer" not in message and "with --recompute-granularity full" in message


def test_fsdp_with_tensor_parallelism_needs_no_single_connection(tmp_path):
    # tp 2 beside FSDP: validate_args only warns; setting CUDA_DEVICE_MAX_CONNECTIONS=1 would be asserted against
    result = _check(tmp_path, f"{FSDP} --tensor-model-parallel-size 2 --sequence-parallel", prefix="")
    assert "PL601" not in _codes(result)


def test_fsdp_with_a_single_connection_is_rejected(tmp_path):
    for name, flags in (("megatron", FSDP), ("torch", FSDP2)):
        (tmp_path / name).mkdir()
        result = _check(tmp_path / name, flags)  # torchrun() exports CUDA_DEVICE_MAX_CONNECTIONS=1
        assert _messages(result, "PL601") == [
            "CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP: Megatron asserts it is not 1"
        ], name
