"""The flag catalog: built from the trainers' argparse dumps, kept in sync with them, and read back
with argparse's view of each option (kind, nargs, defaults, no abbreviations)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from plint.catalog.flags import (
    FlagCatalog,
    default_release,
    latest_release,
    load_flag_catalog,
    release_info,
    releases,
    resolve_release,
)

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "megatron-flags"
needs_data = pytest.mark.skipif(not SOURCE.exists(), reason="shared/data is not beside the checkout")


def _builder():
    spec = importlib.util.spec_from_file_location("build_flag_catalog", ROOT / "scripts" / "build_flag_catalog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_release_names_order_and_newest():
    names = releases()
    assert names[:3] == ["0.4", "0.6", "0.8"] and names.index("0.10") > names.index("0.8")
    assert {"0.11", "0.16", "0.19", "main", "megatron-deepspeed", "bigscience"} <= set(names)
    assert latest_release() == "0.19" == default_release("megatron")
    assert latest_release("megatron-deepspeed") == default_release("megatron-deepspeed") == "megatron-deepspeed"
    info = release_info("0.16")
    assert info["ref"] == "core_v0.16.0" and info["commit"].startswith("3bec9aa")
    assert info["date"].startswith("2026-02-26")
    assert release_info("main")["date"] > release_info("0.19")["date"]  # the snapshot is newer than any tag


@pytest.mark.parametrize(
    "written, name",
    [
        ("0.16", "0.16"),
        ("0.16.2", "0.16"),
        ("core_v0.16.0", "0.16"),
        ("v0.8", "0.8"),
        ("main", "main"),
        ("microsoft", "megatron-deepspeed"),
        ("deepspeedai", "megatron-deepspeed"),
        ("0.9", None),
        ("nonsense", None),
    ],
)
def test_release_spellings(written, name):
    assert resolve_release(written) == name


def test_unknown_release_is_a_key_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="0.19"):
        load_flag_catalog("0.9")


def test_lookup_is_exact_like_megatron_parsers():
    c = load_flag_catalog("0.16")
    spec = c.lookup("--tensor-model-parallel-size")
    assert (spec.dest, spec.kind, spec.type, spec.default, spec.nargs) == (
        "tensor_model_parallel_size",
        "store",
        "int",
        1,
        None,
    )
    assert spec.takes_value and spec.has_literal_default
    assert c.lookup("--tensor-model-parallel") is None  # allow_abbrev=False: a prefix is unknown
    assert c.lookup("--tensor_model_parallel_size") is None  # no underscore aliases in Megatron-LM
    assert c.by_dest("tensor_model_parallel_size") is spec and c.default("micro_batch_size") is None
    assert load_flag_catalog("0.16") is c  # cached


def test_kinds_and_values():
    c = load_flag_catalog("0.19")
    assert c.lookup("--bf16").kind == "store_true" and c.lookup("--bf16").takes_value is False
    assert c.lookup("--data-path").nargs == "*" and c.lookup("--rampup-batch-size").nargs == 3
    assert c.lookup("--recompute-granularity").choices == ("full", "selective")
    assert c.lookup("-h").kind == "help" and not c.lookup("--help").takes_value
    # store_false keeps its real default; two spellings share one action
    no_pad = c.lookup("--no-pad-vocab-size")
    assert no_pad.kind == "store_false" and no_pad.default is True and c.lookup("--disable-pad-vocab-size") is no_pad
    optional = next(c.lookup(o) for o in c.options() if c.lookup(o).kind == "boolean_optional")
    assert optional.takes_value is False and len(optional.flags) == 2


def test_enum_choices_are_the_names_a_command_line_gives():
    """--attention-backend converts its value with AttnBackend[name] before argparse checks it against
    list(AttnBackend), so `fused` is valid; the dump holds str(member), `AttnBackend.fused`."""
    for release in ("0.12", "0.16", "0.19", "main"):
        assert load_flag_catalog(release).lookup("--attention-backend").choices == (
            "flash",
            "fused",
            "unfused",
            "local",
            "auto",
        ), release
    build = _builder()
    assert build.command_line_choices(["AttnBackend.flash", "AttnBackend.auto"], "<lambda>") == ["flash", "auto"]
    # a plain string flag keeps its choices as they are, dots and capitals included
    assert build.command_line_choices(["A.b", "A.c"], "str") == ["A.b", "A.c"]
    assert build.command_line_choices(["A.b", "B.c"], "<lambda>") == ["A.b", "B.c"]  # no single enum


def test_fork_catalogs():
    ds = load_flag_catalog("megatron-deepspeed")
    zero = ds.lookup("--zero-stage")
    assert zero.type == "int" and zero.default_repr == "1.0" and zero.default == 1.0  # a float default
    assert ds.lookup("--num-experts").nargs == "+" and ds.lookup("--num-experts").default == [1]
    assert ds.lookup("--deepspeed").kind == "store_true" and ds.lookup("--deepspeed_config").takes_value
    assert ds.lookup("--context-parallel-size") is None
    big = load_flag_catalog("bigscience")
    assert big.lookup("--pp-partition-method") is not None and big.lookup("--sequence-parallel") is None
    assert not ds.allow_abbrev and not big.allow_abbrev and ds.flavour == big.flavour == "megatron-deepspeed"


def test_flags_defined_outside_the_dump_are_accepted():
    for release in ("0.16", "main"):
        spec = load_flag_catalog(release).lookup("--kitchen-config-file")
        assert spec is not None and spec.kind == "unknown" and spec.takes_value is None
    assert load_flag_catalog("0.8").lookup("--kitchen-config-file") is None


def test_names_only_releases_borrow_their_shape():
    c = load_flag_catalog("0.11")
    assert c.flags_only
    bf16 = c.lookup("--bf16")
    assert bf16.kind == "store_true" and bf16.shape_from == "0.10" and not bf16.inferred
    # new in 0.11: the older full table (0.10) lacks it, the newer (0.12) has it
    stages = c.lookup("--num-virtual-stages-per-pipeline-rank")
    assert stages.shape_from == "0.12" and stages.type == "int"
    assert c.lookup("-h").inferred and c.lookup("--help").kind == "help"
    assert not load_flag_catalog("0.12").flags_only and load_flag_catalog("0.12").lookup("--bf16").shape_from is None


def test_abbreviations_when_a_parser_allows_them():
    doc = {
        "release": "x",
        "flavour": "megatron",
        "allow_abbrev": True,
        "actions": [
            [["--zero-stage"], "zero_stage", "store", "int", "1", 1, None, None],
            [["--zero-reduce-scatter"], "zero_reduce_scatter", "store_true", None, "False", False, None, 0],
        ],
    }
    c = FlagCatalog(doc)
    assert c.lookup("--zero-st").dest == "zero_stage"
    assert c.lookup("--zero-") is None  # ambiguous: argparse errors instead of choosing


@needs_data
def test_every_dumped_action_reads_back():
    build = _builder()
    for dump in sorted(SOURCE.glob("*.json")):
        meta_path = dump.with_name(dump.stem + ".meta.json")
        if dump.name.endswith(".meta.json") or json.loads(meta_path.read_text()).get("flags_only"):
            continue
        catalog = load_flag_catalog(build.release_name(dump.stem)[0])
        for record in json.loads(dump.read_text()):
            for flag in record["flags"]:
                spec = catalog.lookup(flag)
                assert (spec.dest, spec.type, spec.default_repr, spec.nargs) == (
                    record["dest"],
                    record["type"],
                    record["default"],
                    record["nargs"],
                ), (dump.name, flag)


@needs_data
def test_catalog_is_up_to_date(tmp_path):
    written = _builder().build(SOURCE, tmp_path)
    committed = ROOT / "schemas" / "megatron_flags"
    assert {p.name for p in written} == {p.name for p in committed.glob("*.json")}
    for path in written:
        assert path.read_text() == (committed / path.name).read_text(), (
            f"{path.name} is stale: run python scripts/build_flag_catalog.py"
        )


def test_catalog_files_are_compact():
    for path in (ROOT / "schemas" / "megatron_flags").glob("*.json"):
        assert path.read_text().count("\n") == 1, path.name


def test_reading_flags_imports_nothing_heavy():
    code = (
        "import sys, plint.catalog.flags, plint.reading.sources.megatron, plint.reading.sources.hf, plint.reading.sources.trainer;"
        "plint.catalog.flags.load_flag_catalog('0.19');"
        "print(sorted(m for m in ('jsonschema', 'jinja2', 'torch', 'yaml', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_enum_flag_value_is_checked_by_member_name(tmp_path):
    """Megatron-LM's own Llama-3 example passes --attention-backend fused: no PL506; a typo still is one."""
    from plint.checking.check import check_paths
    from plint.rules.common import gpt, torchrun

    codes = {}
    for value in ("fused", "fusde"):
        folder = tmp_path / value
        folder.mkdir()
        (folder / "launch.sh").write_text(torchrun(gpt(f"--attention-backend {value}")).files["launch.sh"])
        (result,) = check_paths([folder / "launch.sh"])
        codes[value] = [d for d in result.diagnostics if d.code == "PL506"]
    assert codes["fused"] == []
    (typo,) = codes["fusde"]
    assert "'fusde' is not one of flash, fused, unfused, local, auto" in typo.message and "fused" in typo.message


def test_choices_are_judged_for_the_core_entry_points_only(tmp_path):
    """Another entry point may widen a core flag's choices through extra_args_provider (Pai-Megatron-Patch appends
    to --optimizer's and --position-embedding-type's): only pretrain_gpt.py and its core siblings are judged on them."""
    from plint.checking.check import check_paths

    found = {}
    for script in ("pretrain_gpt.py", "pretrain_mistral_patch.py"):
        folder = tmp_path / script.split(".")[0]
        folder.mkdir()
        (folder / "launch.sh").write_text(
            f"torchrun --nproc_per_node 8 {script} --tensor-model-parallel-size 2 --micro-batch-size 1 "
            "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --train-iters 10 "
            "--position-embedding-type rotary --sequence-parallel\n"
        )
        (result,) = check_paths([folder / "launch.sh"])
        found[script] = (
            [d.message for d in result.diagnostics if d.code == "PL506"],
            result.layouts[0].value("trainer"),
        )
    assert found["pretrain_mistral_patch.py"] == ([], "megatron")
    (message,), trainer = found["pretrain_gpt.py"]
    assert "'rotary' is not one of" in message and trainer == "megatron"


def test_a_value_outside_the_choices_of_an_assumed_parser_warns_where_the_launch_shows_a_fork(tmp_path):
    """swiss-ai/pretrain-code's Apertus jobs run their own Megatron-LM fork, not in the repository, whose
    --optimizer takes ademamix (beside its own --ademamix-alpha): with no parser in the tree and no release
    configured, a value outside the assumed release's choices may be the fork's where the launch's other flags show
    a fork (a warning, as those flags are); with the release configured, an error. Without such flags an assumed
    release's error stands (test_unfamiliar_repos)."""
    from plint.checking.check import check_paths
    from plint.rules.common import gpt, torchrun

    launch = tmp_path / "launch.sh"
    launch.write_text(torchrun(gpt("--optimizer ademamix --ademamix-alpha 8")).files["launch.sh"])
    ((result,),) = [check_paths([launch])]
    (found,) = [d for d in result.diagnostics if d.code == "PL506"]
    assert found.severity == "warning"
    assert (
        "configured, and the launch gives flags the release lacks, such as --ademamix-alpha: a fork that may "
        "accept it); did you mean adam?"
    ) in found.message
    (tmp_path / ".plint.toml").write_text('megatron = "0.16"\n')
    ((result,),) = [check_paths([launch])]
    (found,) = [d for d in result.diagnostics if d.code == "PL506"]
    assert found.severity == "error" and "no argument parser" not in found.message
