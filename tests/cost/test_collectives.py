"""Collectives from measurements (issue 24 item 1): schemas/collectives.json read by plint.cost.collectives
and used by plint.cost.comm, with numbers worked by hand from the published sweeps."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from plint.cost.collectives import Curve, nvlink_curve
from plint.cost.comm import Links, all_reduce, reduce_scatter

MiB, GiB = 1 << 20, 1 << 30
A100_SPEC = 300e9  # NVLink 3, one way per GPU
# nccl-tests all_reduce_perf on 8 x A100 (stas00/ml-engineering): 1.31 GB/s busbw at 32 KiB, 72.33 at 4 MiB
ALPHA_A100 = 0.9 * 1.75 * 32 * 1024 / 1.31e9 / 14  # 90% of the 32 KiB time over its 14 ring steps = 2.814 us


def _links(gpu: str) -> Links:
    # one node; the fixed-efficiency figures are deliberately absurd so that a test passing shows they are unused
    return Links(8, 1.0, 1.0, 1.0, 1.0, 8, (A100_SPEC if gpu.startswith("a100") else 450e9, nvlink_curve(gpu)))


def test_every_curve_cites_its_source_and_sizes_increase():
    data = json.loads(resources.files("plint.schemas").joinpath("collectives.json").read_text())
    for curve in data["curves"]:
        assert curve["source"] and curve["link"] in ("nvlink", "network")
        sizes = [size for size, _ in curve["points"]]
        assert sizes == sorted(sizes) and all(busbw > 0 for _, busbw in curve["points"])


def _schema_and_data() -> tuple[dict, dict]:
    files = resources.files("plint.schemas")
    return (
        json.loads(files.joinpath("collectives.schema.json").read_text()),
        json.loads(files.joinpath("collectives.json").read_text()),
    )


def test_the_data_file_follows_its_schema():
    schema, data = _schema_and_data()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)


@pytest.mark.parametrize(
    "change",
    [
        {"source": ""},  # a number without its source
        {"link": "pcie"},
        {"collective": "broadcast"},
        {"points": [[1048576, -3.0]]},  # a bandwidth that cannot be
        {"points": [[1048576]]},
        {"one_way_spec_gbps": None},  # an NVLink curve without the rate its efficiency is read against
        {"busbw": 1.0},  # a field nobody reads
    ],
)
def test_the_schema_rejects_a_malformed_curve(change):
    schema, data = _schema_and_data()
    curve = dict(data["curves"][0], **change)
    curve = {k: v for k, v in curve.items() if v is not None}
    assert not jsonschema.Draft202012Validator(schema).is_valid({"note": data["note"], "curves": [curve]})


def test_curve_interpolates_in_log_size_and_holds_flat_past_its_ends():
    curve = Curve([(1024, 0.2), (4096, 0.6)], "test")
    assert curve(2048) == pytest.approx(0.4)  # halfway in log2: 10 -> 11 -> 12
    assert curve(16) == 0.2 and curve(1 << 40) == 0.6


def test_a100_curve_latency_and_plateau():
    curve = nvlink_curve("a100-80gb")
    assert curve.alpha == pytest.approx(ALPHA_A100) and curve.alpha == pytest.approx(2.814e-6, rel=1e-3)
    # 16 GiB: 234.89 GB/s of 300, latency negligible: 0.783 (below the ring plateau cap of 362.9/450 = 0.806)
    assert curve(16 * GiB) == pytest.approx(234.89 / 300, rel=1e-3)


def test_an_8_gpu_all_reduce_takes_the_time_nccl_tests_measured():
    # 4 MiB at 72.33 GB/s busbw: 1.75 x 4,194,304 / 72.33e9 = 101.47 us, latency included
    assert all_reduce(_links("a100-80gb"), 4 * MiB, 8, 1) == pytest.approx(1.75 * 4 * MiB / 72.33e9, rel=1e-6)
    assert all_reduce(_links("a100-80gb"), 4 * MiB, 8, 1) == pytest.approx(101.47e-6, rel=1e-3)


def test_a_smaller_group_pays_its_own_steps_of_latency():
    # 2 GPUs, 4 MiB: bandwidth term 1/2 x S / (300e9 x eff(4 MiB)) plus one step of latency; the 8-GPU ring
    # pays seven. eff(4 MiB) = 1.75 S / 300e9 / (101.47 us - 14 alpha)
    eff = 1.75 * 4 * MiB / A100_SPEC / (1.75 * 4 * MiB / 72.33e9 - 14 * ALPHA_A100)
    expected = 0.5 * 4 * MiB / (A100_SPEC * eff) + ALPHA_A100
    assert reduce_scatter(_links("a100-80gb"), 4 * MiB, 2, 1) == pytest.approx(expected, rel=1e-6)


def test_hopper_ring_collectives_stop_at_the_ring_plateau_not_nvls():
    # 8 x H200 all-reduce reaches 482 GB/s at 16 GiB through NVLS (in-switch reduction); Megatron's
    # reduce-scatter and all-gather run rings: 362.9 GB/s of 450 measured
    assert nvlink_curve("h100-sxm")(16 * GiB) == pytest.approx(362.9 / 450)
    assert reduce_scatter(_links("h100-sxm"), 16 * GiB, 8, 1) == pytest.approx(
        7 / 8 * 16 * GiB / 362.9e9 + 7 * nvlink_curve("h100-sxm").alpha, rel=1e-6
    )


def test_gpus_without_a_sweep_keep_the_alpha_beta_model():
    assert nvlink_curve("v100-32gb") is None and nvlink_curve("mi300x") is None
    links = Links(8, 100e9, 10e9, 3e-6, 8e-6, 8)
    assert reduce_scatter(links, 8e6, 8, 1) == pytest.approx(7 / 8 * 8e6 / 100e9 + 7 * 3e-6)
