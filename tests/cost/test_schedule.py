"""Pipeline bubble and in-flight micro-batches, worked out from the schedule definitions."""

import pytest
from plint.cost import bubble_fraction, layers_in_flight
from plint.cost.schedule import bubble_share_of_total


def test_bubble_for_1f1b_and_interleaved():
    assert bubble_fraction(4, 8) == pytest.approx(3 / 8)  # (pp-1)/m
    assert bubble_fraction(4, 8, 2) == pytest.approx(3 / 16)  # (pp-1)/(vpp*m)
    assert bubble_fraction(1, 8) == 0.0
    assert bubble_share_of_total(4, 8) == pytest.approx(3 / 11)  # GPipe's (p-1)/(m+p-1)


def test_first_stage_holds_min_pp_m_microbatches():
    assert layers_in_flight(32, 4, 8) == 32  # 4 micro-batches x 8 layers: L, independent of pp
    assert layers_in_flight(32, 4, 2) == 16  # only 2 micro-batches exist
    assert layers_in_flight(32, 1, 8) == 32


def test_interleaving_holds_more():
    # warm-up on rank 0: (pp-1)*2 + (v-1)*pp = 6 + 4 = 10 chunk-forwards, +1 in progress, 4 layers each
    assert layers_in_flight(32, 4, 8, 2) == 44
    assert layers_in_flight(32, 4, 8, 2) == pytest.approx(32 * (1 + 3 / 8))  # Megatron's factor


# ---- schedules other than Megatron's default (schedule.py doc; planners.md sec. 8) ----
# F : B : W = 1 : 2 : 1 of a micro-batch's stage time, so w = W/(F+B) = 1/3 and F = 1/3, B = 2/3.


def test_megatron_default_rule_picks_the_schedule():
    assert bubble_fraction(4, 8, None, None) == pytest.approx(3 / 8)  # no vpp: 1F1B
    assert bubble_fraction(4, 8, 2, None) == pytest.approx(3 / 16)  # vpp: interleaved
    assert bubble_fraction(4, 8, 2, "1f1b") == pytest.approx(3 / 8)  # named schedule wins
    assert bubble_fraction(4, 8, None, "gpipe") == pytest.approx(3 / 8)  # (p-1)/m of the ideal too


def test_zero_bubble_schedules():
    # ZB-H1: (p-1)(F+B-2W)/m = 3 * (1 - 2/3) / 8 = 1/8, a third of 1F1B's 3/8
    assert bubble_fraction(4, 8, schedule="zb-h1") == pytest.approx(1 / 8)
    assert bubble_fraction(4, 8, schedule="zero-bubble") == pytest.approx(1 / 8)  # alias
    assert bubble_fraction(4, 8, schedule="ZB_H1") == pytest.approx(1 / 8)  # case and separator
    # ZB-H2: (p-1)(F+B-3W)/m = 3 * (1 - 1) / 8 = 0
    assert bubble_fraction(4, 8, schedule="zb-h2") == pytest.approx(0.0)
    assert bubble_fraction(4, 8, schedule="zb-v") == pytest.approx(0.0)
    # with a smaller weight-gradient share w = 1/4: ZB-H2 3 * (1 - 3/4) / 8 = 3/32; ZB-V over half-stage
    # chunks 3 * (1/4) / 16 = 3/64
    assert bubble_fraction(4, 8, schedule="zb-h2", w_share=0.25) == pytest.approx(3 / 32)
    assert bubble_fraction(4, 8, schedule="zb-v", w_share=0.25) == pytest.approx(3 / 64)
    # share of the total: b / (1 + b) = (1/8) / (9/8) = 1/9
    assert bubble_share_of_total(4, 8, schedule="zb-h1") == pytest.approx(1 / 9)


def test_dualpipe_bubble():
    # (PP/2 - 1)(F&B + B - 3W) with F&B = F + B = 1, B = 2/3, W = 1/3: (4 - 1)(1 + 2/3 - 1) = 2 stage
    # times over m = 16 micro-batches -> 2/16
    assert bubble_fraction(8, 16, schedule="dualpipe") == pytest.approx(2 / 16)
    assert bubble_fraction(8, 16, schedule="dualpipev") == pytest.approx(2 / 16)
    # two stages: PP/2 - 1 = 0, no bubble
    assert bubble_fraction(2, 16, schedule="dualpipe") == 0.0


def test_no_pipeline_no_bubble_and_unknown_names_fail():
    assert bubble_fraction(1, 8, schedule="zb-h1") == 0.0
    with pytest.raises(ValueError):
        bubble_fraction(4, 8, schedule="looped-bfs-typo")
