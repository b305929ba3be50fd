"""The parser beside a launch judges its flags (issue 14): trees with parsers written here in the forks'
style (argparse helpers per group, deepspeed.add_config_arguments, an extra_args_provider in the entry
script, config dataclass groups), read statically, never imported."""

import json
import textwrap

import pytest

from click.testing import CliRunner

from plint.catalog.parser_source import build_document, find_parser
from plint.checking.check import check_paths
from plint.cli.commands import cli

PARSER = textwrap.dedent("""\
    import argparse
    import deepspeed
    from megatron.model.enums import PositionEmbeddingType


    def parse_args(extra_args_provider=None, ignore_unknown_args=False):
        parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
        parser = _add_network_size_args(parser)
        parser = _add_training_args(parser)
        if extra_args_provider is not None:
            parser = extra_args_provider(parser)
        parser = deepspeed.add_config_arguments(parser)
        return parser.parse_args()


    def _add_network_size_args(parser):
        group = parser.add_argument_group(title='network size')
        group.add_argument('--num-layers', type=int, default=None, help='layers')
        group.add_argument('--hidden-size', type=int, default=None)
        group.add_argument('--ffn-hidden-size', type=int, default=None)
        group.add_argument('--num-attention-heads', type=int, default=None)
        group.add_argument('--seq-length', type=int, default=None)
        group.add_argument('--max-position-embeddings', type=int, default=None)
        group.add_argument('--attention-head-type', type=str, default='multihead',
                           choices=['multihead', 'multiquery'])
        group.add_argument('--position-embedding-type', type=lambda x: PositionEmbeddingType[x],
                           default=PositionEmbeddingType.absolute)
        group.add_argument('--init-loss-scale', type=float, default=2**32)
        return parser


    def _add_training_args(parser):
        group = parser.add_argument_group(title='training')
        group.add_argument('--micro-batch-size', type=int, default=None)
        group.add_argument('--global-batch-size', type=int, default=None)
        group.add_argument('--tensor-model-parallel-size', type=int, default=1)
        group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
        group.add_argument('--tokenizer-type', type=str, default=None,
                           choices=['GPT2BPETokenizer', 'TokenizerFromFile'])
        group.add_argument('--tokenizer-file', type=str, default=None)
        group.add_argument('--structured-logs', action='store_true')
        group.add_argument('--train-iters', type=int, default=None)
        group.add_argument('--lr', type=float, default=None)
        group.add_argument('--bf16', action='store_true')
        group.add_argument('--fp16', action='store_true')
        precision = parser.add_mutually_exclusive_group()
        precision.add_argument('--use-flash-attn', action='store_true')
        precision.add_argument('--no-flash-attn', action='store_false', dest='use_flash_attn')
        group.add_argument('--use-distributed-optimizer', action='store_true')
        group.add_argument('--sequence-parallel', action='store_true')
        group.add_argument('--data-path', nargs='*', default=None)
        return parser
    """)

LAUNCH = textwrap.dedent("""\
    #!/bin/bash
    torchrun --nproc_per_node 8 pretrain_gpt.py \\
        --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\
        --seq-length 2048 --max-position-embeddings 2048 \\
        --micro-batch-size 1 --global-batch-size 64 --bf16 --train-iters 100 \\
        --attention-head-type multiquery --tokenizer-type TokenizerFromFile \\
        --tokenizer-file tok.json --structured-logs {extra}
    """)


def _tree(tmp_path, extra="", parser=PARSER):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "megatron").mkdir()
    (repo / "megatron" / "arguments.py").write_text(parser)
    (repo / "examples").mkdir()
    launch = repo / "examples" / "pretrain.sh"
    launch.write_text(LAUNCH.format(extra=extra))
    return repo, launch


def _findings(path, **kwargs):
    (result,) = check_paths([path], **kwargs)
    return [
        (d.code, d.severity, d.message) for d in result.diagnostics if d.code.startswith("PL50") or d.code == "PL003"
    ]


def test_the_parser_in_the_tree_accepts_its_own_flags_and_rejects_a_typo(tmp_path):
    _, launch = _tree(tmp_path, extra="--structured-log")
    found = _findings(launch)
    assert [(c, s) for c, s, _ in found] == [("PL501", "error")]
    assert found[0][2] == (
        "--structured-log is not a flag of the parser in megatron/arguments.py of this "
        "repository; did you mean --structured-logs?"
    )


def test_without_a_parser_an_unknown_flag_is_a_warning_naming_the_forks(tmp_path):
    launch = tmp_path / "launch.sh"
    launch.write_text(LAUNCH.format(extra=""))
    found = {m.split(" ")[0]: (c, s, m) for c, s, m in _findings(launch) if c == "PL501"}
    code, severity, message = found["--attention-head-type"]
    assert severity == "warning"
    assert "Megatron-LM 0.19, assumed" in message and "bigcode-project/Megatron-LM" in message
    assert found["--structured-logs"][1] == "warning"


def test_an_entry_point_in_another_checkout_is_not_judged_by_this_repository_s_parser(tmp_path):
    """Kwai's ATC'24 baseline: its fork's tree launches `python3 ../../../Megatron-LM-Jan-1-2024/pretrain_gpt.py`, a
    checkout beside the repository: flags the fork's parser lacks are not errors of "this repository"'s parser."""
    repo, launch = _tree(tmp_path, extra="--manual-gc")
    launch.write_text(launch.read_text().replace("pretrain_gpt.py", "../../Megatron-LM-Jan-1-2024/pretrain_gpt.py"))
    found = _findings(launch)
    assert not [m for _, _, m in found if "of this repository" in m]
    assert any("lies outside this repository" in m for _, _, m in found)  # said where the assumed parser is named
    inside = repo / "examples" / "inside.sh"  # `../pretrain_gpt.py` is the repository's own entry point
    inside.write_text(LAUNCH.format(extra="--manual-gc").replace("pretrain_gpt.py", "../pretrain_gpt.py"))
    assert [c for c, _, m in _findings(inside) if "of this repository" in m] == ["PL501"]


def test_trainer_source_names_a_checkout_elsewhere(tmp_path):
    repo, _ = _tree(tmp_path)
    launch = tmp_path / "launches" / "run.sh"
    launch.parent.mkdir()
    launch.write_text(LAUNCH.format(extra="--structured-log"))
    found = _findings(launch, trainer_source=str(repo))
    assert [(c, s) for c, s, _ in found] == [("PL501", "error")]
    assert f"the parser in megatron/arguments.py of {repo}" in found[0][2]
    # the same through the configuration, relative to the config file's folder
    (tmp_path / "launches" / ".plint.toml").write_text('trainer-source = "../repo"\n')
    result = CliRunner().invoke(cli, ["check", "--format", "json", str(launch)])
    codes = [d["code"] for d in json.loads(result.output)["files"][0]["diagnostics"]]
    assert codes.count("PL501") == 1 and result.exit_code == 1


def test_choices_and_types_come_from_the_parser(tmp_path):
    _, launch = _tree(tmp_path, extra="--lr fast")
    launch.write_text(launch.read_text().replace("multiquery", "multi"))
    found = _findings(launch)
    assert [c for c, _, _ in found] == ["PL506", "PL506"]
    assert "'multi' is not one of multihead, multiquery in the parser in megatron/arguments.py" in found[0][2]
    assert "takes a float in the parser in megatron/arguments.py" in found[1][2]


def test_static_reading_of_the_parser(tmp_path):
    repo, _ = _tree(tmp_path)
    doc = build_document(find_parser(repo / "examples", repo))
    rows = {row[0][0]: row for row in doc["actions"]}
    assert doc["allow_abbrev"] is False and doc["flavour"] == "megatron-deepspeed"
    assert rows["--init-loss-scale"][4:6] == ["4294967296", 4294967296]
    assert rows["--position-embedding-type"][3] == "<lambda>" and rows["--position-embedding-type"][5] is None
    assert rows["--structured-logs"][2:4] == ["store_true", None] and rows["--structured-logs"][5] is False
    assert rows["--data-path"][7] == "*"
    assert "--deepspeed" in rows and "--deepspeed_config" in rows  # deepspeed.add_config_arguments
    assert doc["exclusive_groups"] == [["--use-flash-attn", "--no-flash-attn"]]
    assert doc["release"] in ("megatron-deepspeed", "bigscience")


def test_an_entry_script_named_by_a_path_the_tree_does_not_hold_makes_unknown_flags_warnings(tmp_path):
    """lzhjoy/Megatron-LM's run_cpt_qwen3-4b.sh runs `${SCRIPT_DIR}/pretrain_gpt.py`, a script beside the launch that
    is not in the repository: whatever flags its extra_args_provider adds are unknown, and the repository's own
    pretrain_gpt.py at the top is another script, not read in its place."""
    repo, launch = _tree(tmp_path, extra="--packing-seq-length 4096")
    (repo / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n")
    text = LAUNCH.format(extra="--packing-seq-length 4096").replace("pretrain_gpt.py", "${HERE}/pretrain_gpt.py")
    launch.write_text(
        text.replace("#!/bin/bash\n", '#!/bin/bash\nHERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n')
    )
    found = [(s, m) for c, s, m in _findings(launch) if c == "PL501"]
    assert found == [
        (
            "warning",
            "--packing-seq-length is not a flag of the parser in megatron/arguments.py of this repository, and the "
            "entry point examples/pretrain_gpt.py is not in this tree (it may add flags)",
        )
    ]
    (repo / "examples" / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n")
    assert [(c, s) for c, s, _ in _findings(launch)] == [("PL501", "error")]


def test_the_entry_scripts_extra_arguments_count(tmp_path):
    repo, launch = _tree(tmp_path)
    (repo / "pretrain_vlm.py").write_text(
        textwrap.dedent("""\
        from megatron.training import pretrain
        from extra_args import add_code_args

        def extra(parser):
            group = parser.add_argument_group(title='code')
            group.add_argument('--fim-rate', type=float, default=0.5)
            return add_code_args(parser)
        """)
    )
    (repo / "extra_args.py").write_text(
        "def add_code_args(parser):\n"
        "    parser.add_argument('--fim-spm-rate', type=float, default=0.5)\n"
        "    return parser\n"
    )
    launch.write_text(
        LAUNCH.format(extra="--fim-rate 0.2 --fim-spm-rate 0.1 --fim-rat 3").replace(
            "pretrain_gpt.py", "../pretrain_vlm.py"
        )
    )
    found = _findings(launch)
    assert [(c, s) for c, s, _ in found] == [("PL501", "error")] and found[0][2].startswith("--fim-rat ")


def test_generated_groups_borrow_the_release_the_version_names(tmp_path):
    parser = PARSER.replace(
        "import deepspeed\n", "import deepspeed\nfrom megatron.training.argument_utils import ArgumentGroupFactory\n"
    ).replace(
        "    parser = deepspeed.add_config_arguments(parser)\n",
        "    factory = ArgumentGroupFactory(TransformerConfig)\n",
    )
    repo, launch = _tree(tmp_path, parser=parser, extra="--recompute-granularity selective")
    (repo / "megatron" / "core").mkdir()
    (repo / "megatron" / "core" / "package_info.py").write_text("MAJOR = 0\nMINOR = 16\nPATCH = 2\n")
    doc = build_document(find_parser(repo, repo))
    assert doc["release"] == "0.16" and doc["borrowed"] == "0.16" and doc["version"] == "0.16.2"
    assert _findings(launch) == []


def test_a_parser_that_cannot_be_read_falls_back_with_a_note(tmp_path):
    _, launch = _tree(tmp_path, parser="def parse_args(:\n", extra="--structured-log")
    found = _findings(launch)
    assert ("PL003", "info") in [(c, s) for c, s, _ in found]
    note = next(m for c, _, m in found if c == "PL003")
    assert "megatron/arguments.py could not be read" in note
    assert all(s == "warning" for c, s, _ in found if c == "PL501")


def test_the_catalog_is_cached_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo, launch = _tree(tmp_path)
    _findings(launch)
    copies = list((tmp_path / "cache" / "plint").glob("parser-source-*"))
    assert len(copies) == 1 and json.loads(copies[0].read_text())["source"] == "megatron/arguments.py"


def test_rules_follow_the_checks_of_the_parser_in_force(tmp_path):
    # a parser whose validate_args does not assert CUDA_DEVICE_MAX_CONNECTIONS: no PL601 for tp 2
    _, launch = _tree(tmp_path, extra="--tensor-model-parallel-size 2 --sequence-parallel")
    (result,) = check_paths([launch])
    assert "PL601" not in [d.code for d in result.diagnostics]
    asserting = PARSER.replace(
        "def _add_training_args(parser):",
        "def check(args):\n"
        "    if os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') != '1':\n"
        "        raise RuntimeError('set CUDA_DEVICE_MAX_CONNECTIONS to 1')\n\n\n"
        "def _add_training_args(parser):",
    )
    _, launch = _tree(tmp_path / "other", parser=asserting, extra="--tensor-model-parallel-size 2 --sequence-parallel")
    (result,) = check_paths([launch])
    assert "PL601" in [d.code for d in result.diagnostics]


def test_a_parser_outside_the_tree_is_not_read(tmp_path):
    # megatron/arguments.py as a symlink to a file outside the checked tree: refused by the root, so the
    # verdict falls back to the assumed release with a note instead of reading the outside file
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "arguments.py").write_text(PARSER)
    repo, launch = _tree(tmp_path, extra="--structured-log")
    (repo / "megatron" / "arguments.py").unlink()
    (repo / "megatron" / "arguments.py").symlink_to(outside / "arguments.py")
    found = _findings(launch)
    assert any(c == "PL003" and "megatron/arguments.py: outside the checked tree" in m for c, _, m in found)
    assert all(s == "warning" for c, s, _ in found if c == "PL501")


def _handing_itself_to(imported: str) -> str:
    """PARSER whose parse_args first hands its parser to a function it imports (`from M import F [as G]`)."""
    name = imported.split()[-1]
    return PARSER.replace(
        "    parser = _add_network_size_args(parser)\n",
        f"    {imported}\n    parser = {name}(parser)\n    parser = _add_network_size_args(parser)\n",
    )


def test_a_module_the_parser_hands_itself_to_adds_its_flags(tmp_path):
    """The zero-bubble fork's parse_args calls `parser = add_zero_bubble_args(parser)`, imported from
    megatron/core/zbpp_utils.py (fail before: each of that module's flags was a false PL501 error)."""
    parser = _handing_itself_to("from megatron.core.zb_args import add_zero_bubble_args")
    repo, launch = _tree(tmp_path, extra="--enable-zb-runtime --allow-padding-num-layer", parser=parser)
    (repo / "megatron" / "core").mkdir()
    (repo / "megatron" / "core" / "zb_args.py").write_text(
        "def add_zero_bubble_args(parser):\n"
        "    group = parser.add_argument_group(title='zero bubble')\n"
        "    group.add_argument('--enable-zb-runtime', action='store_true')\n"
        "    group.add_argument('--allow-padding-num-layers', action='store_true')\n"
        "    return parser\n"
        "\n"
        "def unrelated(cli):\n"
        "    cli.add_argument('--not-a-trainer-flag')\n"
    )
    found = _findings(launch)
    assert [(c, s) for c, s, _ in found] == [("PL501", "error")]
    assert (
        found[0][2].startswith("--allow-padding-num-layer is not a flag")
        and "--allow-padding-num-layers" in found[0][2]
    )
    assert [p.name for p in find_parser(launch.parent, repo).extra] == ["zb_args.py"]


def test_a_package_function_the_parser_hands_itself_to_makes_unknown_flags_warnings(tmp_path):
    """AIPerf-MoE's parse_args calls `parser = _add_fmoe_args(parser)`, imported from FastMoE (`from fmoe.megatron
    import add_fmoe_args as _add_fmoe_args`), a package outside the tree: a flag missing from the source may be
    one of FastMoE's, so it is a warning that names the function, and the fix renames nothing, not even a near
    spelling of a flag the source lists (fail before: errors, and --sequence-paralel renamed)."""
    parser = _handing_itself_to("from fmoe.megatron import add_fmoe_args as _add_fmoe_args")
    repo, launch = _tree(tmp_path, extra="--fmoefy --balance-strategy naive --sequence-paralel", parser=parser)
    found = _findings(launch)
    assert sorted((c, s, m.split(" ")[0]) for c, s, m in found if c == "PL501") == [
        ("PL501", "warning", "--balance-strategy"),
        ("PL501", "warning", "--fmoefy"),
        ("PL501", "warning", "--sequence-paralel"),
    ]
    CliRunner().invoke(cli, ["fix", str(launch)])
    assert "--sequence-paralel" in launch.read_text().split()
    assert all("fmoe.megatron.add_fmoe_args (not in this tree)" in m for c, _, m in found if c == "PL501")
    assert find_parser(launch.parent, repo).outside == ("fmoe.megatron.add_fmoe_args",)


def test_a_parser_that_sets_the_global_batch_itself_is_not_held_to_megatrons_check(tmp_path):
    """A Megatron-DeepSpeed fork's parse_args rounds --global-batch-size up to a multiple of micro x dp before
    Megatron's check (Supercomputing-System-AI-Lab's aligned_train_batch): 60 over micro 1 x dp 8 starts there
    (fail before: a false PL102). Megatron's own default, under `if args.global_batch_size is None:`, changes
    nothing given."""
    returned = "    return parser.parse_args()\n"
    rounding = PARSER.replace(
        returned,
        "    args = parser.parse_args()\n    args.global_batch_size = -(-args.global_batch_size // 8) * 8\n"
        "    return args\n",
    )
    defaulting = PARSER.replace(
        returned,
        "    args = parser.parse_args()\n    if args.global_batch_size is None:\n"
        "        args.global_batch_size = args.micro_batch_size * 8\n    return args\n",
    )
    for name, parser, expected in (("rounding", rounding, []), ("defaulting", defaulting, ["PL102"])):
        _, launch = _tree(tmp_path / name, parser=parser)
        launch.write_text(launch.read_text().replace("--global-batch-size 64", "--global-batch-size 60"))
        (result,) = check_paths([launch])
        assert [d.code for d in result.diagnostics if d.code == "PL102"] == expected, name


def test_a_fork_flag_that_pads_the_layers_makes_indivisible_layers_a_warning(tmp_path):
    parser = PARSER.replace(
        "    group.add_argument('--sequence-parallel', action='store_true')\n",
        "    group.add_argument('--sequence-parallel', action='store_true')\n"
        "    group.add_argument('--allow-padding-num-layers', action='store_true')\n",
    )
    repo, launch = _tree(tmp_path, extra="--pipeline-model-parallel-size 8 --allow-padding-num-layers", parser=parser)
    launch.write_text(launch.read_text().replace("--num-layers 24", "--num-layers 30"))
    (result,) = check_paths([launch])
    (found,) = [d for d in result.diagnostics if d.code == "PL103"]
    assert found.severity == "warning" and found.message == (
        "30 layers do not divide by pp 8, unless --allow-padding-num-layers (this fork's own flag, which no "
        "Megatron-LM release defines) lays the stages out unevenly"
    )


SIZING = """

def validate_args(args):
    if args.ffn_hidden_size is None:
        if args.swiglu:
            args.ffn_hidden_size = int((4 * args.hidden_size * 2 / 3) / 64) * 64
        else:
            args.ffn_hidden_size = 4 * args.hidden_size
"""
KEEPING = """

def validate_args(args):
    if args.ffn_hidden_size is None:
        args.ffn_hidden_size = 4 * args.hidden_size
"""


@pytest.mark.parametrize(("checks", "ffn"), [(SIZING, 5440), (KEEPING, 8192), ("", 5440)])
def test_the_mlp_width_under_swiglu_is_the_parsers_own(tmp_path, checks, ffn):
    """IEIT-Yuan/Yuan2.0-M32's fork defines --swiglu but its validate_args keeps 4h (fail before: 5440, upstream's
    narrowing); a parser that narrows it, as Megatron-LM's since --swiglu came, gives 5440, as does one whose
    validate_args plint does not see (upstream's rule)."""
    parser = PARSER.replace(
        "group.add_argument('--seq-length'",
        "group.add_argument('--swiglu', action='store_true')\n    group.add_argument('--seq-length'",
    )
    _, launch = _tree(tmp_path, "--swiglu", parser + checks)
    (result,) = check_paths([launch])
    assert result.layouts[0].fields["model.ffn_hidden_size"].value == ffn
