"""Host memory for ZeRO CPU offload, as DeepSpeed's estimators give it (plint.cost.host_memory)."""

import pytest

from plint.cost.host_memory import offload_host_bytes, slurm_mem_gib

P = 32.5e9  # LLaMA-33B


def test_zero3_offload_of_optimizer_and_parameters_under_zero_init():
    # estimate_zero3_model_states_mem_needs: total_params * 18 * gpus_factor * 1.5, gpus_factor = 1 / nodes
    assert offload_host_bytes(P, 3, True, True, 8, 1) == P * 18 * 1.5
    assert offload_host_bytes(P, 3, True, True, 8, 2) == P * 18 / 2 * 1.5


def test_zero3_without_zero_init_every_rank_builds_the_model():
    assert offload_host_bytes(P, 3, True, True, 8, 1, zero_init=False) == P * 32 * 1.5  # max(4*8, 18)
    assert offload_host_bytes(P, 3, True, False, 8, 1, zero_init=False) == P * 32 * 1.5  # max(4*8, 16)


def test_zero2_offload_counts_every_gpu():
    # estimate_zero2_model_states_mem_needs: total_params * max(4 * total_gpus, 16) * 1.5
    assert offload_host_bytes(7e9, 2, True, False, 8, 2) == 7e9 * 64 * 1.5
    assert offload_host_bytes(7e9, 2, True, False, 2, 1) == 7e9 * 16 * 1.5


def test_nothing_offloaded_needs_no_estimate():
    assert offload_host_bytes(P, 3, False, False, 8, 1) is None
    assert offload_host_bytes(P, 0, True, False, 8, 1) is None


@pytest.mark.parametrize(
    "text, gib", [("600G", 600.0), ("614400", 600.0), ("1T", 1024.0), ("512000M", 500.0), ("0", None), ("lots", None)]
)
def test_sbatch_mem(text, gib):
    assert slurm_mem_gib(text) == gib
