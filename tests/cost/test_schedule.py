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
