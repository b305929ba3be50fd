"""The hardware catalog and the cluster fields it fills."""

import pytest

from plint.catalog.hardware import gpu_names, lookup_gpu
from plint.checking.check import check_paths

REQUIRED = {
    "v100-16gb",
    "v100-32gb",
    "a100-40gb",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h800",
    "h200",
    "b200",
    "gb200",
    "mi300x",
}


def test_every_gpu_of_the_design_with_sourced_numbers():
    assert REQUIRED <= set(gpu_names())
    for name in gpu_names():
        gpu = lookup_gpu(name)
        assert gpu.source and gpu.hbm_gib > 0 and gpu.hbm_tbps > 0 and gpu.scale_up_domain >= 2
        assert gpu.bf16_tflops is None or gpu.bf16_tflops > 0


@pytest.mark.parametrize(
    "spelling, name",
    [
        ("h100", "h100-sxm"),
        ("H100_SXM5", "h100-sxm"),
        ("a100_80g", "a100-80gb"),
        ("NVIDIA-H200", "h200"),
        ("gb200-nvl72", "gb200"),
        ("MI300X", "mi300x"),
    ],
)
def test_slurm_and_vendor_spellings(spelling, name):
    assert lookup_gpu(spelling).name == name


def cluster(tmp_path, text, **options):
    (tmp_path / "job.sh").write_text(text)
    (result,) = check_paths([tmp_path / "job.sh"], **options)
    layout = result.layouts[0]
    return {k: layout.get(f"cluster.{k}") for k in ("gpu", "gpu_memory_gib", "nvlink_domain")}


def test_assumed_named_and_overridden_gpus(tmp_path):
    launch = "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16\n"
    c = cluster(tmp_path, launch)
    assert c["gpu"].value == "h100-sxm" and c["gpu"].origin == "assumed" and "assumes" in c["gpu"].note
    assert c["nvlink_domain"].value == 8
    c = cluster(
        tmp_path,
        "#!/bin/bash\n#SBATCH --gres=gpu:a100:8\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n"
        "srun python pretrain_gpt.py --bf16\n",
    )
    # 'a100' is sold in 40 and 80 GB: the larger is taken (no false out-of-memory), and the layout says so
    assert (c["gpu"].value, c["gpu_memory_gib"].value, c["gpu"].span.line) == ("a100-80gb", 80, 2)
    assert "'a100' is sold as a100-40gb and a100-80gb" in c["gpu"].note
    c = cluster(
        tmp_path,
        "#!/bin/bash\n#SBATCH --gres=gpu:a100_40gb:8\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n"
        "srun python pretrain_gpt.py --bf16\n",
    )
    assert (c["gpu"].value, c["gpu_memory_gib"].value) == ("a100-40gb", 40)
    c = cluster(tmp_path, launch.replace("8", "4") + "", gpu="gb200")
    assert c["gpu"].value == "gb200" and c["nvlink_domain"].value == 72  # NVL72: NVLink spans 18 trays


def test_tensor_parallel_across_gb200_trays_is_not_across_nvlink(tmp_path):
    text = (
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nnodes 4 --nproc_per_node 4 --master_addr n0 pretrain_gpt.py "
        "--tensor-model-parallel-size 8 --sequence-parallel --num-attention-heads 32 --bf16\n"
    )
    (tmp_path / "a.sh").write_text(text)
    assert "PL201" in [d.code for d in check_paths([tmp_path / "a.sh"]).results[0].diagnostics]
    assert "PL201" not in [d.code for d in check_paths([tmp_path / "a.sh"], gpu="gb200").results[0].diagnostics]


def test_names_sold_in_two_memory_sizes_resolve_to_the_larger():
    from plint.catalog.hardware import ambiguous_parts, lookup_gpu

    assert lookup_gpu("A100").name == "a100-80gb" and ambiguous_parts("A100") == ["a100-40gb", "a100-80gb"]
    assert lookup_gpu("tesla v100").name == "v100-32gb" and ambiguous_parts("v100") == ["v100-16gb", "v100-32gb"]
    assert lookup_gpu("a100-40gb").name == "a100-40gb" and ambiguous_parts("a100-40gb") is None
    assert ambiguous_parts("h100") is None  # the 80 GB SXM part is the one "h100" names
    for name, parts in ambiguous_parts.__globals__["_catalog"]()["ambiguous"].items():
        if not name.startswith("_"):
            assert [lookup_gpu(p).name for p in parts] == parts  # each part is a catalog GPU
            assert lookup_gpu(name).hbm_gib == max(lookup_gpu(p).hbm_gib for p in parts)


def test_nvlink_domain_ends_at_the_node_unless_the_part_is_rack_scale():
    """An HGX/DGX baseboard joins 8 GPUs; a node holding 4 of them (NERSC Perlmutter, ALCF Polaris) joins 4.
    GB200 NVL72 joins 72 GPUs over compute trays of 4: its domain spans nodes."""
    from plint.catalog.hardware import lookup_gpu

    assert lookup_gpu("a100-80gb").nvlink_domain(4) == 4
    assert lookup_gpu("h100-sxm").nvlink_domain(8) == 8
    assert lookup_gpu("h100-pcie").nvlink_domain(8) == 2  # NVLink bridges join pairs
    assert lookup_gpu("gb200").nvlink_domain(4) == 72
    assert not lookup_gpu("h100-sxm").rack_scale and lookup_gpu("gb200").rack_scale
