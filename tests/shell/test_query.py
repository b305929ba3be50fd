"""yq and jq reading one value of a YAML or JSON file (plint.reading.shell.query): what every implementation prints
alike is read, what they print apart is left to run time. hatakeyama-llm-team/llm's pretraining job reads its whole
model from config.yaml with `$(yq -e '.num_layers' config.yaml)` (fail before: every such value unknown)."""

import pytest

from plint.checking.check import check_paths
from plint.reading.shell.model import MappedText, Piece, Word
from plint.reading.shell.query import run_query

YAML = """num_layers: 24
name: wiki
lr: 3.0e-4
global_batch_size: 72
global_batch_size: 160
flag: yes
on: true
hex: 0x10
nested:
  stage: 2
"""
JSON = '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}, "lr": 0.1, "name": "x"}'


def _query(name: str, args: list[str], text: str) -> str | None:
    out = run_query(name, [Word.of(a) for a in args], None, lambda w: MappedText([Piece(text)]))
    return out.render() if out is not None else None


@pytest.mark.parametrize(
    ("args", "printed"),
    [
        (["-e", ".num_layers", "c.yaml"], "24\n"),
        (["-r", ".name", "c.yaml"], "wiki\n"),
        ([".nested.stage", "c.yaml"], "2\n"),
        ([".on", "c.yaml"], "true\n"),
        ([".missing", "c.yaml"], "null\n"),
        ([".name", "c.yaml"], None),  # quoted by jq-based yq, bare by mikefarah's
        ([".lr", "c.yaml"], None),  # 0.0003 or 3.0e-4
        ([".global_batch_size", "c.yaml"], None),  # the last (PyYAML) or an error (go-yaml)
        ([".flag", "c.yaml"], None),  # a YAML 1.1 boolean, a string in YAML 1.2
        ([".hex", "c.yaml"], None),  # 16 or 0x10
        (["'.[0]'", "c.yaml"], None),  # no other path than plain keys
    ],
)
def test_yq(args, printed):
    assert _query("yq", args, YAML) == printed


@pytest.mark.parametrize(
    ("args", "printed"),
    [
        (["-r", ".train_micro_batch_size_per_gpu", "ds.json"], "4\n"),
        ([".zero_optimization.stage", "ds.json"], "2\n"),
        (["-r", ".name", "ds.json"], "x\n"),
        ([".name", "ds.json"], None),
        ([".lr", "ds.json"], None),
    ],
)
def test_jq(args, printed):
    assert _query("jq", args, JSON) == printed


def test_values_read_with_yq_come_from_the_config_and_point_at_it(tmp_path):
    (tmp_path / "config.yaml").write_text(YAML)
    script = tmp_path / "train.sh"
    script.write_text(
        "#!/bin/bash\nL=$(yq -e '.num_layers' config.yaml)\nGBS=$(yq -e '.global_batch_size' config.yaml)\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers $L --hidden-size 1024 --num-attention-heads 16 "
        "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size $GBS\n"
    )
    (result,) = check_paths([script])
    layers = result.layouts[0].fields["model.num_layers"]
    assert (layers.value, layers.origin, layers.span.path.endswith("config.yaml"), layers.span.line) == (
        24,
        "literal",
        True,
        1,
    )
    assert result.layouts[0].fields["batch.global"].value is None  # the repeated key: honestly unknown


def test_a_file_outside_the_checked_tree_is_not_queried(tmp_path):
    """yq reads through the root like every file a script names: a config outside the checked tree stays unknown."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.yaml").write_text("num_layers: 24\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    script = repo / "train.sh"
    script.write_text(
        f"#!/bin/bash\nL=$(yq -e '.num_layers' {outside}/config.yaml)\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers $L --hidden-size 1024 --num-attention-heads 16 "
        "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 8\n"
    )
    (result,) = check_paths([script], root=str(repo))
    assert result.layouts[0].fields["model.num_layers"].value is None
