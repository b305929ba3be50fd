"""plint.dryrun.ranks: Megatron's process groups computed without torch.

The small cases are derived by hand from megatron-core's rank order (parallel_state.RankGenerator,
order "tp-cp-ep-dp-pp": the leftmost axis has stride 1) and its docstring example; the property test
compares with megatron-core's own initialize_model_parallel when it is importable.
"""

import importlib.util
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plint.dryrun.ranks import (
    DENSE_KINDS,
    EXPERT_KINDS,
    KINDS,
    TP_PP_DP_ORDER,
    LayoutError,
    RankLayout,
    crosses,
    crossing,
    rank_groups,
)


def test_world16_tp2_pp2_cp2_by_hand():
    # strides: tp 1, cp 2, dp 4 (dp = 16 / 8 = 2), pp 8
    g = rank_groups(16, tp=2, pp=2, cp=2)
    assert g["tp"] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert g["cp"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert g["dp"] == [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]
    assert g["pp"] == [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]]
    assert g["dp-cp"] == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert g["tp-pp"] == [[0, 1, 8, 9], [2, 3, 10, 11], [4, 5, 12, 13], [6, 7, 14, 15]]
    assert g["tp-cp"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert g["tp-dp-cp"] == [list(range(8)), list(range(8, 16))]
    assert g["embedding"] == g["pp"]  # two stages: first and last are the whole pipeline
    assert g["position-embedding"] == [[r] for r in range(8)]
    # no experts: ep groups are single ranks, the expert grid's tp is tp, edp = dp * cp
    assert g["ep"] == [[r] for r in range(16)]
    assert g["etp"] == g["tp"]
    assert g["edp"] == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]


def test_megatron_docstring_example_tp2_pp4():
    # initialize_model_parallel's own docstring: 16 GPUs, tp 2, pp 4
    g = rank_groups(16, tp=2, pp=4)
    assert g["dp"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert g["tp"] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert g["pp"] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert g["embedding"] == [[0, 12], [1, 13], [2, 14], [3, 15]]
    assert g["position-embedding"] == [[0], [1], [2], [3]]


def test_experts_use_their_own_grid():
    # world 8, tp 2, ep 4, etp 1: expert grid tp=1, ep=4 (stride 1), edp = 8 / 4 = 2 (stride 4)
    g = rank_groups(8, tp=2, ep=4, etp=1)
    assert g["ep"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert g["etp"] == [[r] for r in range(8)]
    assert g["edp"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert g["etp-ep"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert g["tp"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert g["dp"] == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_etp_defaults_to_tp():
    # world 16, tp 2, ep 2, pp 2: expert grid tp 2 (stride 1), ep 2 (stride 2), edp 2 (stride 4), pp 8
    layout = RankLayout(16, tp=2, pp=2, ep=2)
    assert layout.etp == 2 and layout.edp == 2 and layout.dp == 4
    assert layout.groups("ep") == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert layout.groups("etp-ep") == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert layout.groups("etp-ep-pp") == [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]]
    assert layout.groups("edp") == [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]


def test_tp_pp_dp_mapping():
    # --use-tp-pp-dp-mapping: order tp-cp-ep-pp-dp, so pp has stride tp and dp comes last
    g = rank_groups(16, tp=2, pp=2, order=TP_PP_DP_ORDER)
    assert g["pp"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert g["dp"] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"world_size": 12, "tp": 8}, "not divisible by tp*pp*cp"),
        ({"world_size": 16, "tp": 2, "ep": 3}, "not divisible by etp*ep*pp"),
        ({"world_size": 16, "tp": 2, "pp": 2, "ep": 4, "etp": 1, "order": TP_PP_DP_ORDER}, "expert data-parallel size"),
        ({"world_size": 16, "tp": 2, "order": "tp-xx-dp-pp"}, "order"),
        ({"world_size": 16, "tp": 2, "pp": 2, "order": "tp-dp"}, "leaves out pp"),
        ({"world_size": 0}, "positive"),
    ],
)
def test_layouts_megatron_refuses(kwargs, words):
    with pytest.raises(LayoutError, match=re.escape(words)):
        RankLayout(**kwargs)


def test_crossing_nvlink_domain():
    assert not crosses([0, 1, 2, 3, 4, 5, 6, 7], 8)
    assert crosses([6, 7, 8], 8)
    g = rank_groups(24, tp=3)  # tp 3 does not divide 8: [6, 7, 8] spans two nodes
    found = crossing(g, 8, ("tp", "dp"))
    assert found[0] == {"group": "tp", "size": 3, "crossing": 2, "of": 8, "domain": 8, "example": [6, 7, 8]}
    assert found[1]["group"] == "dp" and found[1]["crossing"] == 3
    assert crossing(rank_groups(32, tp=8), 8, ("tp",)) == []
    assert crossing(rank_groups(32, tp=16), 8, ("tp",))[0]["crossing"] == 2


def test_groups_of_rank():
    layout = RankLayout(16, tp=2, pp=2, cp=2)
    mine = layout.groups_of(13)
    assert mine["tp"] == [12, 13] and mine["cp"] == [13, 15] and mine["pp"] == [5, 13]
    assert mine["embedding"] == [5, 13] and mine["position-embedding"] is None


def _valid_layouts():
    """(tp, pp, cp, dp, ep, etp) whose world tp*pp*cp*dp the expert grid etp*ep*pp divides."""
    return st.tuples(
        *(st.sampled_from([1, 2, 3, 4]) for _ in range(4)), st.sampled_from([1, 2, 4, 8]), st.sampled_from([None, 1, 2])
    ).filter(lambda t: (t[0] * t[1] * t[2] * t[3]) % ((t[5] or t[0]) * t[4] * t[1]) == 0)


@settings(max_examples=150, deadline=None)
@given(_valid_layouts())
def test_grid_kinds_partition_the_world(t):
    tp, pp, cp, dp, ep, etp = t
    world = tp * pp * cp * dp
    layout = RankLayout(world, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp)
    sizes = {
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "cp": cp,
        "dp-cp": dp * cp,
        "tp-pp": tp * pp,
        "tp-cp": tp * cp,
        "tp-dp": tp * dp,
        "tp-dp-cp": tp * dp * cp,
        "ep": ep,
        "etp": etp or tp,
        "etp-ep": (etp or tp) * ep,
        "etp-ep-pp": (etp or tp) * ep * pp,
        "edp": layout.edp,
    }
    for kind in (*DENSE_KINDS, *EXPERT_KINDS):
        groups = layout.groups(kind)
        assert sorted(r for g in groups for r in g) == list(range(world)), kind
        assert {len(g) for g in groups} == {sizes[kind]}, kind


def test_4096_ranks_is_fast():
    import time

    start = time.perf_counter()
    rank_groups(4096, tp=8, pp=8, cp=2, ep=8, etp=1)
    assert time.perf_counter() - start < 2.0  # measured ~0.01 s; generous for a loaded machine


HAVE_MEGATRON = all(importlib.util.find_spec(m) is not None for m in ("torch", "megatron"))


@pytest.mark.skipif(
    not HAVE_MEGATRON,
    reason="megatron-core (and torch) not importable: "
    "pip install 'plint[dryrun]' to compare with megatron-core's own groups",
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _valid_layouts().filter(lambda t: t[0] * t[1] * t[2] * t[3] <= 48),
    st.sampled_from(["tp-cp-ep-dp-pp", TP_PP_DP_ORDER]),
)
def test_analytic_groups_equal_megatron_core(t, order):
    """Every rank's groups, read back from megatron-core's initialize_model_parallel on torch's fake
    process groups, equal plint's (or both refuse the layout)."""
    from plint.dryrun.groups import _megatron_core, _megatron_groups

    tp, pp, cp, dp, ep, etp = t
    world = tp * pp * cp * dp
    mc = _megatron_core()
    assert not isinstance(mc, str), mc
    try:
        analytic = RankLayout(world, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, order=order)
    except LayoutError:
        analytic = None
    built = _megatron_groups(
        mc, world, {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": etp}, order, analytic, max_ranks=world
    )
    if analytic is None:
        assert built["error"] is not None
        return
    assert built["error"] is None and built["complete"]
    assert built["mismatches"] == []
    for kind in KINDS:
        if kind in built["groups"]:
            assert sorted(built["groups"][kind]) == sorted(analytic.groups(kind)), kind
