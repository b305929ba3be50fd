"""Megatron-LM's validate_args clamped tp to the world size and pp to what tp leaves, from 2020 until 8af3dae72a
(2024-08-05: core 0.8 and earlier), as the Megatron-DeepSpeed forks still do: a launch asking for more model
parallelism than it has GPUs runs with less, and is no start-up error. A parser in the tree says whether it
clamps; a shipped release by its version."""

import sys
import textwrap
from pathlib import Path

import pytest

from plint.checking.check import check_paths
from plint.report.json_report import file_json

sys.path.insert(0, str(Path(__file__).resolve().parent / "catalog"))
from test_parser_source import PARSER  # noqa: E402  the small Megatron-style parser those tests build

CLAMP = textwrap.dedent("""\


    def validate_args(args, defaults={}):
        args.tensor_model_parallel_size = min(args.tensor_model_parallel_size, args.world_size)
        assert args.world_size % args.tensor_model_parallel_size == 0
        args.pipeline_model_parallel_size = min(
            args.pipeline_model_parallel_size, (args.world_size // args.tensor_model_parallel_size))
        return args
    """)
LAUNCH = (
    "#!/bin/bash\ntorchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 8 --num-layers 24 --hidden-size 2048 --num-attention-heads 16 "
    "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n"
)


def _check(tmp_path, parser: str | None = None, config: str | None = None):
    (tmp_path / ".git").mkdir()
    if parser is not None:
        (tmp_path / "megatron").mkdir()
        (tmp_path / "megatron" / "arguments.py").write_text(parser)
    if config is not None:
        (tmp_path / ".plint.toml").write_text(config)
    (tmp_path / "launch.sh").write_text(LAUNCH)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return result, file_json(result)["layout"]


@pytest.mark.parametrize(
    "where", [{"parser": PARSER + CLAMP}, {"config": 'megatron = "0.8"\n'}], ids=["parser in the tree", "core 0.8"]
)
def test_a_clamping_release_runs_the_sizes_the_world_allows(tmp_path, where):
    result, layout = _check(tmp_path, **where)
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["parallel"]["dp"]) == (4, 1, 1)
    assert "clamped to the world size 4" in layout["provenance"]["parallel.tp"]["note"]
    # were false start-up errors; a warning says the run has less model parallelism than written
    assert [(d.severity, d.message) for d in result.diagnostics if d.code == "PL101"] == [
        (
            "warning",
            "tp 8, pp 8 on a world of 4 runs as tp 4, pp 1: this release's validate_args clamps them instead of "
            "stopping",
        )
    ]


@pytest.mark.parametrize(
    "where", [{"parser": PARSER}, {"config": 'megatron = "0.10"\n'}], ids=["parser that asserts", "core 0.10"]
)
def test_a_release_that_asserts_is_held_to_it(tmp_path, where):
    result, layout = _check(tmp_path, **where)
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"]) == (8, 8)
    assert [d.severity for d in result.diagnostics if d.code == "PL101"] == ["error"]
