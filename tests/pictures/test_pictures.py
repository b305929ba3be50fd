"""The pictures' facts on launches of 8, 64 and 16,384 GPUs: every rank drawn once or counted in the
fold, one schedule row per stage, the bubble printed equal to the cost model's, crossing groups marked
exactly where plint.dryrun.ranks says a group leaves the NVLink domain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixture_paths import FIXTURES
from plint.checking.check import check_paths
from plint.cli.commands import cli
from plint.cost.layout_estimate import layout_estimate
from plint.pictures import from_layout
from plint.pictures.grid import NVLINK_GROUPS
from plint.pictures.markdown import pictures_markdown
from plint.pictures.page import render_page
from plint.pictures.schedule import build
from plint.pictures.terminal import render_text
from plint.dryrun.ranks import RankLayout, crossing

HERE = Path(__file__).resolve().parent
LAUNCHES = {
    8: FIXTURES / "nsys-profile-torchrun" / "launch.sh",  # tp4 pp2 on one node
    64: FIXTURES / "vpp-stages-per-rank" / "launch.sh",  # tp8 pp4 vpp5 on 8 nodes
    16384: HERE / "launches" / "cluster-16k" / "launch.sh",  # tp8 cp2 pp16 vpp4 dp64 on 2,048 nodes
}


def _layout(world: int):
    (result,) = check_paths([LAUNCHES[world]])
    return result.layouts[0]


@pytest.fixture(scope="module", params=sorted(LAUNCHES))
def case(request):
    layout = _layout(request.param)
    return request.param, layout, from_layout(layout, LAUNCHES[request.param].parent.name)


def test_world_size_is_the_fixture_s(case):
    world, _, p = case
    assert p.grid.world == world


def test_every_rank_drawn_once_or_counted_in_the_fold(case):
    world, _, p = case
    g = p.grid
    drawn = [c.rank for n in g.shown_nodes() if n is not None for c in g.node_cells(n)]
    assert len(drawn) == len(set(drawn))
    assert len(drawn) + g.folded_nodes() * g.gpus_per_node == world
    assert g.folded == (g.nodes > 16)
    svg = render_page(p, "svg")
    assert sorted(int(r) for r in re.findall(r'data-rank="(\d+)"', svg)) == sorted(drawn)
    text = render_text(p, color=False)
    cells = [int(r) for r in re.findall(r"[\[ ](\d+):\d+\.\d+\.\d+\.\d+\.\d+", text)]
    assert sorted(cells) == sorted(drawn)
    if g.folded:
        assert f"{g.folded_nodes():,} more nodes ({g.folded_nodes() * g.gpus_per_node:,} GPUs" in text


def test_coordinates_are_megatron_s(case):
    world, layout, p = case
    g = p.grid
    ranks = RankLayout(world, g.tp, g.pp, g.cp, g.ep, g.etp)
    for node in g.shown_nodes():
        if node is None:
            continue
        for cell in g.node_cells(node):
            for axis in ("tp", "cp", "dp", "pp"):
                group = ranks._member(axis, cell.rank) if world <= 64 else None
                if group is not None:
                    assert group.index(cell.rank) == cell.coords[axis]


def test_one_schedule_row_per_stage_and_the_cost_model_s_bubble(case):
    _, layout, p = case
    s = p.schedule
    est = layout_estimate(layout)
    assert len(s.rows()) == p.grid.pp
    assert s.bubble == est.bubble_fraction
    svg = render_page(p, "svg")
    assert sorted(int(x) for x in re.findall(r'data-stage="(\d+)"', svg)) == list(range(p.grid.pp))
    assert f"bubble {est.bubble_fraction:.1%} of the ideal step" in render_text(p, color=False)
    assert f"bubble {est.bubble_fraction:.1%} of the ideal step" in svg


def test_crossing_groups_are_the_ranks_module_s(case):
    world, _, p = case
    g = p.grid
    ranks = RankLayout(world, g.tp, g.pp, g.cp, g.ep, g.etp)
    listed = {c["group"]: c for c in crossing(ranks.all_groups(g.kinds()), g.domain)}
    assert {c.kind: (c.crossing, c.of) for c in g.crossings()} == {
        k: (v["crossing"], v["of"]) for k, v in listed.items()
    }
    crossing_ranks = {
        k: {r for grp in ranks.groups(k) for r in grp if any(x // g.domain != grp[0] // g.domain for x in grp)}
        for k in g.kinds()
    }
    for node in g.shown_nodes():
        if node is None:
            continue
        for cell in g.node_cells(node):
            assert set(cell.crossing) == {k for k in g.kinds() if cell.rank in crossing_ranks[k]}


def test_the_16k_run_marks_its_tp_cp_groups_leaving_the_node():
    p = from_layout(_layout(16384), "16k")
    assert {c.kind for c in p.grid.crossings()} == {"cp", "tp-cp"}
    svg = render_page(p, "svg")
    assert "#d62828" in svg and "leaves NVLink: cp, tp-cp" in svg


def test_one_node_keeps_every_group_on_nvlink():
    p = from_layout(_layout(8), "8")
    assert p.grid.crossings() == []
    assert "stays inside one NVLink domain" in render_text(p, color=False)


@pytest.mark.parametrize("name", ["1f1b", "gpipe"])
def test_drawn_idle_share_is_the_bubble_over_the_whole_step(name):
    # all m micro-batches drawn: the idle share of the drawing is GPipe's (p-1)/(m+p-1) = b/(1+b)
    s = build(4, 8, None, name)
    assert s.drawn_microbatches == 8
    assert s.drawn_idle_share() == pytest.approx(s.bubble / (1 + s.bubble))


def test_interleaved_drawing_matches_its_bubble_when_whole():
    s = build(4, 8, 2, None)
    assert s.name == "interleaved" and s.drawn_microbatches == 8
    assert s.drawn_idle_share() == pytest.approx(s.bubble / (1 + s.bubble))


@pytest.mark.parametrize("args", [(4, 8, None, None), (4, 8, 2, None), (4, 12, None, "zb-h1"), (8, 16, 3, None)])
def test_blocks_respect_the_pipeline_s_dependencies(args):
    s = build(*args)
    end = {(b.kind, b.stage, b.microbatch, b.chunk): b.end for b in s.blocks}
    for b in s.blocks:
        if b.kind == "F" and b.stage > 0:
            assert b.start >= end[("F", b.stage - 1, b.microbatch, b.chunk)]
        if b.kind == "B" and b.stage < s.pp - 1:
            assert b.start >= end[("B", b.stage + 1, b.microbatch, b.chunk)]
        if b.kind == "W":
            assert b.start >= end[("B", b.stage, b.microbatch, b.chunk)]
    for row in s.rows():  # a stage runs one block at a time
        spans = sorted((b.start, b.end) for b in row)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))
    per_stage = s.drawn_microbatches * s.vpp * (3 if s.name == "zb-h1" else 2)
    assert all(len(row) == per_stage for row in s.rows())


def test_1f1b_warms_up_with_pp_minus_stage_minus_one_forwards():
    s = build(4, 8, None, None)
    for stage, row in enumerate(s.rows()):
        kinds = [b.kind for b in sorted(row, key=lambda b: b.start)]
        assert kinds.index("B") == min(4 - stage - 1, 8) + 1  # warm-up, then one more forward first


def test_what_if_schedule_is_labelled_and_priced_by_the_cost_model():
    from plint.cost.schedule import bubble_fraction

    layout = _layout(64)
    est = layout_estimate(layout)
    for name in ("zb-h1", "dualpipe", "gpipe"):
        p = from_layout(layout, "64", name)
        assert p.schedule.what_if and p.schedule.name == name
        assert p.schedule.bubble == bubble_fraction(4, est.num_microbatches, 5, name)
        assert "what-if: needs a trainer that runs this schedule" in render_text(p, color=False)


def test_memory_bars_are_the_cost_model_s_first_and_last_stage():
    layout = _layout(64)
    est = layout_estimate(layout)
    p = from_layout(layout, "64")
    assert [b.label for b in p.memory] == ["stage 0 (first)", "stage 3 (last)"]
    assert max(b.total for b in p.memory) == pytest.approx(est.memory_gib["total"])
    assert p.usable_gib == est.memory_gib["usable"]


def test_communication_rows_carry_the_cost_model_s_times():
    layout = _layout(16384)
    est = layout_estimate(layout)
    p = from_layout(layout, "16k")
    rows = {r.axis: r for r in p.comm}
    assert set(rows) == {"tp", "cp", "pp", "dp"}
    for axis, row in rows.items():
        assert row.time_s == est.time_s[axis]
        assert row.share == pytest.approx(est.time_s[axis] / est.step_time_s)
    assert rows["tp"].link == "NVLink" and rows["cp"].link == "network"


def test_markdown_has_the_grid_in_a_code_block():
    text = "\n".join(pictures_markdown(from_layout(_layout(64), "64")))
    assert "```text" in text and "node 7 [56:0.0.0.1.3" in text


def test_show_command_formats(tmp_path):
    runner = CliRunner()
    launch = str(LAUNCHES[8])
    out = runner.invoke(cli, ["show", launch])
    assert out.exit_code == 0 and "Device grid" in out.output and "Communication per step" in out.output
    page = tmp_path / "show.html"
    out = runner.invoke(cli, ["show", launch, "--format", "html", "-o", str(page)])
    assert out.exit_code == 0
    html = page.read_text()
    assert (
        html.startswith("<!DOCTYPE html>")
        and "<script" not in html
        and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    )
    out = runner.invoke(cli, ["show", launch, "--format", "markdown"])
    assert out.exit_code == 0 and "```text" in out.output


def test_show_without_a_model_shape_is_a_usage_error(tmp_path):
    launch = tmp_path / "launch.sh"
    launch.write_text("torchrun --nproc-per-node 8 train.py\n")
    out = CliRunner().invoke(cli, ["show", str(launch)])
    assert out.exit_code == 2 and "no launch with a complete model shape" in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)


def test_plan_show_draws_the_candidate():
    out = CliRunner().invoke(cli, ["plan", "--model", "llama3-8b", "--nodes", "2", "--top", "2", "--show", "1"])
    assert out.exit_code == 0, out.output
    assert "llama3-8b: candidate 1" in out.output and "Device grid: 16 GPUs" in out.output


def test_check_markdown_report_carries_the_grid():
    from plint.report.markdown import render

    (result,) = check_paths([LAUNCHES[8]])
    assert "<details><summary>Device grid: 8 GPUs" in render([result])


def test_kinds_table_names_the_nvlink_kinds_of_the_rules():
    from plint.dryrun.ranks import NVLINK_KINDS

    assert set(NVLINK_GROUPS) == set(NVLINK_KINDS)


def test_an_interleaved_step_shorter_than_the_pipeline_is_said_not_drawn():
    s = build(4, 2, 2, None)
    assert s.blocks == [] and "at least pp = 4 micro-batches" in s.not_drawn


@pytest.mark.parametrize("world", sorted(LAUNCHES))
def test_svg_is_well_formed(world):
    import xml.etree.ElementTree as ET

    p = from_layout(_layout(world), str(world))
    root = ET.fromstring(render_page(p, "svg"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("rank 0, node 0 GPU 0") for t in titles)
    assert any(t.startswith("stage 0: forward of micro-batch 0") for t in titles)


def test_uneven_stages_draw_the_estimate_s_memory():
    (result,) = check_paths([FIXTURES / "uneven-pipeline-stages" / "launch.sh"])
    layout = result.layouts[0]
    est = layout_estimate(layout)
    p = from_layout(layout, "uneven")
    assert max(b.total for b in p.memory) == pytest.approx(est.memory_gib["total"])
    assert any("uneven pipeline" in n for n in p.notes)


# ---- issue 29, item 6: the pictures a reviewer reads at a glance ----------------------------------------
CROSS_NODE = HERE / "launches" / "cross-node-128" / "launch.sh"  # tp16 on 8-GPU nodes, pp4 vpp2


def _cross_node():
    (result,) = check_paths([CROSS_NODE])
    return result, from_layout(result.layouts[0], "128", findings=result.diagnostics)


def _polygon_rows(points: str) -> set[float]:
    return {float(p.split(",")[1]) for p in points.split()}


def test_a_tp_group_spanning_two_nodes_is_one_outline():
    """Before, each node's row had its own outline: a TP group of 16 on 8-GPU nodes looked like two
    groups. Now one polygon per group, around both rows, red (it leaves NVLink); the text grid marks
    the group as continued (~) rather than closing it at the node's edge."""
    _, p = _cross_node()
    svg = render_page(p, "svg")
    outlines = re.findall(
        r'<polygon class="tp-group" data-first-rank="(\d+)" points="([^"]+)"[^>]*stroke="([^"]+)"', svg
    )
    assert [int(low) for low, _, _ in outlines] == list(range(0, 128, 16))
    node_rows = sorted({float(y) for y in re.findall(r'<text x="10" y="([\d.]+)">node \d+</text>', svg)})
    for _, points, stroke in outlines:
        ys = _polygon_rows(points)
        assert max(ys) - min(ys) > 1.5 * (node_rows[1] - node_rows[0])  # two rows tall
        assert stroke == "#d62828"
    lines = "\n".join(pictures_markdown(p))
    assert re.search(r"node +0 \[0:.*7:7\.0\.0\.0\.0!~\n", lines) and re.search(r"node +1 ~8:8\.", lines)


def test_one_node_groups_keep_one_outline_each():
    p = from_layout(_layout(8), "8")  # tp4 on one node: two groups, black
    outlines = re.findall(r'<polygon class="tp-group"[^>]*stroke="([^"]+)"', render_page(p, "svg"))
    assert outlines == ["#222", "#222"]


def test_the_schedule_has_a_legend_and_micro_batch_numbers():
    p = from_layout(_layout(8), "8")  # 1F1B, 16 micro-batches
    svg = render_page(p, "svg")
    for entry in ("F forward", "B backward", "idle (bubble)", "number in a block = its micro-batch"):
        assert entry in svg
    numbers = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert {int(n) for n in numbers} == set(range(16))  # every micro-batch labelled at least once


def test_an_interleaved_schedule_draws_one_row_per_chunk():
    """vpp 2: each stage has a row per model chunk (c0, c1), so chunks no longer blur into stripes."""
    _, p = _cross_node()
    svg = render_page(p, "svg")
    for stage in re.findall(r'<g class="stage" data-stage="\d+">.*?</g>', svg, re.S):
        rows = re.findall(r'<text x="\d+" y="[\d.]+" font-size="8">(c\d)</text>', stage)
        assert rows == ["c0", "c1"]
        idle_rows = re.findall(r'<rect x="80" y="([\d.]+)"[^>]*fill="#d9d9d9"', stage)
        assert len(set(idle_rows)) == 2
        for y, title in re.findall(r'<rect class="block" x="[\d.]+" y="([\d.]+)"[^>]*><title>[^<]*chunk (\d)', stage):
            assert float(y) == float(idle_rows[int(title)])
    assert "c0-c1 = model chunk (virtual stage), one row each" in svg


def test_the_page_carries_the_findings_and_the_speed():
    result, p = _cross_node()
    est = layout_estimate(result.layouts[0])
    svg = render_page(p, "svg")
    assert f"MFU {100 * est.mfu:.1f}% of the bf16 peak, {est.tokens_per_s_per_gpu:,.0f} tokens/s per GPU" in svg
    codes = re.findall(r'<text class="finding"[^>]*><title>[^<]*</title>(PL\d{3}) (\w+)', svg)
    assert ("PL201", "error") in codes and len(codes) == len([d for d in result.diagnostics if d.suppressed is None])
    text = render_text(p, color=False)
    assert "PL201 error line 6: tp 16 does not fit" in text and f"MFU {100 * est.mfu:.1f}%" in text


def test_the_page_escapes_a_finding_s_file_text():
    from plint.pictures import Finding

    _, p = _cross_node()
    p.findings = (Finding("PL002", "info", 3, "$X=<script>alert(1)</script> is unknown"),)
    svg = render_page(p, "svg")
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_communication_time_is_labelled_exposed():
    _, p = _cross_node()
    svg, text = render_page(p, "svg"), render_text(p, color=False)
    for out in (svg, text):
        assert "exposed time" in out and "after overlap" in out
    assert not re.search(r">time<", svg)


def test_piped_memory_bars_use_one_glyph_per_part():
    _, p = _cross_node()
    text = render_text(p, color=False)
    legend = next(line for line in text.splitlines() if "weights" in line and "other" in line)
    glyphs = re.findall(r"(\S) (weights|grads|optimizer|activations|other)", legend)
    assert len({g for g, _ in glyphs}) == 5, legend
    bar = next(line for line in text.splitlines() if line.startswith("stage 0 (first)"))
    assert len({c for c in bar if c in {g for g, _ in glyphs}}) >= 4, bar
