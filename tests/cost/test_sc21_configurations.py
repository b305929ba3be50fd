"""The step-time model's trade between tensor, pipeline and data parallelism against SC21's measured splits of one
model on 64 A100s (benchmarks/sc21_configurations.py, benchmarks/data/sc21_parallel_configurations.yaml): what
`plint plan` ranks on, held where the paper measured it. Issue 24: the planner's 'slower than #1: more
tensor-parallel communication' on SC21's own runs is checked against these, not against the layouts the paper
chose (Table 1's degrees come from its sec. 3 heuristic: the smallest model-parallel size that fits, Takeaway #2)."""

from __future__ import annotations

import pytest

from tests.test_corpus_script import _load

sc21 = _load("sc21_configurations")
ROWS = sc21.predictions()


def _figure(figure: int, batch: int) -> dict[tuple[int, int], object]:
    return {(r.point.tp, r.point.pp): r for r in ROWS if r.point.figure == figure and r.point.global_batch == batch}


def test_every_published_point_is_read():
    assert len(ROWS) == 45  # Figures 13-15: 35; Figure 18: 5 batch sizes with the sends split and whole
    assert all(r.measured > 0 and r.predicted > 0 for r in ROWS)


@pytest.mark.parametrize("batch", [32, 128])
def test_tensor_versus_pipeline_split_priced_as_measured(batch):
    """Figure 13 (162B, tp 32 x pp 2 to tp 2 x pp 32): tensor-parallel all-reduces inside a node and across nodes
    against the pipeline's bubble. Within 6% at batch 128 (tp 4 x pp 16 at batch 32 is 16% fast: its bubble,
    not TP), and the split measured fastest (tp 8 x pp 8) is within 2% of the one predicted fastest."""
    rows = _figure(13, batch)
    if batch == 128:
        assert all(abs(r.error) < 0.06 for r in rows.values())
    best_predicted = max(r.predicted for r in rows.values())
    measured_best = max(rows.values(), key=lambda r: r.measured)
    assert (measured_best.point.tp, measured_best.point.pp) == (8, 8)
    assert measured_best.predicted >= 0.98 * best_predicted


@pytest.mark.parametrize("batch", [128, 512])
def test_tensor_versus_data_split_priced_as_measured(batch):
    """Figure 15 (5.9B, tp 2 x dp 32 to tp 32 x dp 2): what tp 2 gains over tp 4 inside a node (fewer bytes in
    each of the six un-overlapped all-reduces a layer of 2021's Megatron-LM runs with full recompute, wider
    GEMMs) is predicted within 5% of the measured gain, and the fastest split is the measured one (tp 2)."""
    rows = _figure(15, batch)
    measured_gain = rows[(2, 1)].measured / rows[(4, 1)].measured
    predicted_gain = rows[(2, 1)].predicted / rows[(4, 1)].predicted
    assert predicted_gain == pytest.approx(measured_gain, rel=0.05)
    assert max(rows.values(), key=lambda r: r.predicted).point.tp == 2


def test_missed_line_recovers_a_line():
    """The decomposition of a split's missed time: samples on per_step + per_microbatch x m give those two back."""
    per_step, per_microbatch = sc21.missed_line([(1, 0.3 + 0.025), (4, 0.3 + 0.1), (16, 0.3 + 0.4)])
    assert per_step == pytest.approx(0.3)
    assert per_microbatch == pytest.approx(0.025)


def test_missed_time_is_the_measured_step_less_the_predicted():
    """A point predicted fast misses time (positive), one predicted slow has time to spare; without the host floor
    only the micro-batches' floor leaves the prediction, never the per-iteration host cost."""
    for r in ROWS:
        assert r.measured_step_s * r.measured == pytest.approx(r.estimate.step_time_s * r.predicted)
        assert (r.missed_s() > 0) == (r.error > 0)
        floor = r.estimate.time_s["overhead"] - r.host_step_s
        assert floor >= -1e-12
        assert r.missed_s(host_floor=False) == pytest.approx(r.missed_s() + floor)


def test_every_split_measured_at_two_batches_gets_a_line():
    """Figures 13-15 measure each of their five splits at two or three batch sizes, Figure 18 its one split with
    the sends split and whole at five: seventeen lines."""
    lines = sc21.missed_lines(ROWS)
    assert len(lines) == 17
    assert {(x.point.figure, x.points) for x in lines} == {(13, 2), (14, 2), (15, 3), (18, 5)}


@pytest.mark.parametrize("batch", [12, 24, 36, 48, 60])
def test_scatter_gather_of_the_pipeline_sends_priced_as_measured(batch):
    """Figure 18 (GPT-3 175B, tp 8 x pp 12 interleaved on 96 A100s): each TP rank sending 1/8 of the activation over
    its own InfiniBand card and the receiver all-gathering it over NVLink (Options.pp_scatter_gather) against every
    rank sending it whole. Both series within 5%, and the optimization's gain predicted at more than half the
    measured one (10-12% measured, about 7% predicted: the whole sends cost more than the model charges them)."""
    split, whole = (
        next(r for r in ROWS if r.point.figure == 18 and r.point.global_batch == batch and r.point.scatter_gather is sg)
        for sg in (True, False)
    )
    assert abs(split.error) < 0.05 and abs(whole.error) < 0.05
    measured_gain = split.measured / whole.measured - 1
    predicted_gain = split.predicted / whole.predicted - 1
    assert 0.5 * measured_gain < predicted_gain < measured_gain


def test_the_model_orders_two_splits_as_measured_where_it_calls_them_close():
    """What `plint plan`'s ranking rests on: of the 75 pairs of splits of one figure and batch, the model's speed
    ratio is off by 6.7% at the median, and it orders one pair against the measurement (Figure 15 at batch 32, tp 4
    against tp 8, measured within 2% of each other): none of the 19 it predicts within 15% of each other. So a wider
    near-tie band in the planner (plan.NEAR_TIE) would order by simplicity pairs the model ranks right."""
    found = sc21.pairs(ROWS)
    assert len(found) == 75
    close = [p for p in found if abs(p.predicted_ratio - 1) <= 0.15]
    assert len(close) == 19 and not any(p.reversed for p in close)
    (wrong,) = [p for p in found if p.reversed]
    assert abs(wrong.measured_ratio - 1) < 0.03  # the one reversal is a pair the paper measured as a near tie
    errors = sorted(p.ratio_error for p in found)
    assert 0.05 < errors[len(errors) // 2] < 0.08
