"""Forks that spell Megatron's flags their own way: epfLLM/Megatron-LLM's parser defines
`--tensor_model_parallel_size`, `--num_layers`, ... (underscores), with Megatron-LM's dests. Its launches are read
with its parser, shipped as schemas/megatron_fork_parsers.json, where the fork is not in the checked tree (a
submodule the checkout lacks), and with the tree's parser where it is."""

import textwrap

from click.testing import CliRunner

from plint.catalog.forks import fork_by_spelling
from plint.cli.commands import cli
from plint.checking.check import check_paths
from plint.report.json_report import file_json

LAUNCH = textwrap.dedent("""\
    #!/bin/bash
    torchrun --nproc_per_node 8 Megatron-LLM/finetune.py \\
        --tensor_model_parallel_size 4 --pipeline_model_parallel_size 2 \\
        --num_layers 32 --hidden_size 4096 --num_attention_heads 32 --seq_length 4096 \\
        --micro_batch_size 1 --global_batch_size 64 --bf16 --sequence_parallel \\
        --recompute_granularity full --recompute_method uniform --recompute_num_layers 1 {extra}
    """)


def _check(tmp_path, extra="", parser: str | None = None):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "launch.sh").write_text(LAUNCH.format(extra=extra))
    if parser is not None:
        (tmp_path / "megatron").mkdir()
        (tmp_path / "megatron" / "arguments.py").write_text(parser)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return result, file_json(result)["layout"]


def test_the_underscore_spelling_names_the_fork():
    assert fork_by_spelling({"--tensor_model_parallel_size", "--num_layers", "--bf16"}) == "epfLLM/Megatron-LLM"
    # a Megatron-LM launch with an underscore typo or an old spelling stays one: PL501 names the typo
    assert fork_by_spelling({"--tensor-model-parallel-size", "--num-layers", "--micro_batch_size"}) is None
    assert fork_by_spelling({"--tensor-model-parallel-size", "--local_rank"}) is None
    # a Lightning script (Fengshenbang-LM's T5 pretraining) shares two option names with the fork, no more
    lightning = {"--max_epochs", "--gpus", "--num_nodes", "--strategy", "--save_top_k", "--tokenizer_type"}
    assert fork_by_spelling(lightning | {"--train_data_path", "--every_n_train_steps", "--monitor"}) is None


def test_a_megatron_llm_launch_without_its_fork_in_the_tree_is_read_with_the_forks_parser(tmp_path):
    result, layout = _check(tmp_path)
    parallel, model = layout["parallel"], layout["model"]
    assert (parallel["tp"], parallel["pp"], parallel["dp"], parallel["sequence_parallel"]) == (4, 2, 1, True)
    assert (model["num_layers"], model["hidden_size"], model["num_attention_heads"]) == (32, 4096, 32)
    assert (layout["batch"]["global"], layout["precision"], layout["recompute"]["granularity"]) == (64, "bf16", "full")
    # every model and parallel value was unresolved: the newest Megatron-LM's parser knows none of these spellings


def test_a_fix_writes_the_flags_it_adds_as_the_forks_parser_spells_them(tmp_path):
    """PL301's fix adds virtual stages: --num_layers_per_virtual_pipeline_stage, which the fork defines, not
    Megatron-LM's --num-layers-per-virtual-pipeline-stage, which it would reject (fail before: the dashed one)."""
    launch = LAUNCH.replace(
        "--tensor_model_parallel_size 4 --pipeline_model_parallel_size 2", "--pipeline_model_parallel_size 8"
    )
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text(
        launch.format(extra="").replace("--global_batch_size 64", "--global_batch_size 16")
    )
    CliRunner().invoke(cli, ["fix", "--unsafe-fixes", "--select", "PL301", str(tmp_path / "launch.sh")])
    written = (tmp_path / "launch.sh").read_text()
    assert "--num_layers_per_virtual_pipeline_stage" in written and "--num-layers-per" not in written


def test_an_in_tree_parser_with_underscore_spellings_gives_the_reader_its_values(tmp_path):
    parser = (
        textwrap.dedent("""\
        import argparse

        def parse_args():
            parser = argparse.ArgumentParser(allow_abbrev=False)
            group = parser.add_argument_group(title='sizes')
    """)
        + "".join(
            f"    group.add_argument('--{name}', type=int, default=None)\\n"
            for name in (
                "tensor_model_parallel_size",
                "pipeline_model_parallel_size",
                "num_layers",
                "hidden_size",
                "num_attention_heads",
                "seq_length",
                "micro_batch_size",
                "global_batch_size",
                "recompute_num_layers",
                "max_position_embeddings",
                "ffn_hidden_size",
                "data_parallel_size",
                "num_layers_per_virtual_pipeline_stage",
                "context_parallel_size",
                "expert_model_parallel_size",
                "num_experts",
                "vocab_size",
                "seed",
                "train_iters",
                "lr_warmup_iters",
            )
        )
        + textwrap.indent(
            textwrap.dedent("""\
        group.add_argument('--bf16', action='store_true')
        group.add_argument('--sequence_parallel', action='store_true')
        group.add_argument('--recompute_granularity', type=str, default=None)
        group.add_argument('--recompute_method', type=str, default=None)
        return parser.parse_args()
    """),
            "    ",
        )
    )
    _, layout = _check(tmp_path, parser=parser)
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["model"]["num_layers"]) == (4, 2, 32)
