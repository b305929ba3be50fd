"""DeepSpeed configs: positions in files and heredocs, "auto", and the batch triple as DeepSpeed derives it."""

import pytest

from plint.shell.model import MappedText, Piece, unknown
from plint.source import SourceFile
from plint.sources.deepspeed_config import derive_batch, read_deepspeed_config
from plint.sources.jsonpos import parse_json
from plint.values import Value


def config(text: str):
    return read_deepspeed_config(MappedText.from_source(SourceFile("ds.json", text)), "ds.json")


def test_positions_in_a_file():
    cfg = config('{\n  "train_batch_size": 64,\n  "zero_optimization": {\n    "stage": 2\n  }\n}\n')
    assert cfg.train_batch_size.value == 64 and (cfg.train_batch_size.span.line, cfg.train_batch_size.span.col) == (2, 23)
    assert cfg.zero_stage.value == 2 and (cfg.zero_stage.span.line, cfg.zero_stage.span.col) == (4, 14)


def test_positions_in_a_heredoc_with_unknown_pieces():
    script = SourceFile("run.sh", 'GBS=32\ncat <<EOF > ds.json\n{"train_batch_size": $GBS,\n "gradient_accumulation_steps": $X}\nEOF\n')
    gbs = Piece("32", script.span(4, 6), "literal", True, source=script)
    head = Piece('{"train_batch_size": ', script.span(27, 48), "literal", True, source=script)
    mid = Piece(',\n "gradient_accumulation_steps": ', script.span(52, 86), "literal", True, source=script)
    text = MappedText([head, gbs, mid, unknown("$X is not set", "X"), Piece("}\n", None)])
    cfg = read_deepspeed_config(text, "ds.json")
    assert cfg.train_batch_size.value == 32 and cfg.train_batch_size.span.line == 1  # where GBS=32 is written
    assert cfg.gradient_accumulation_steps.value is None and "$X" in cfg.gradient_accumulation_steps.note


def test_lenient_reading_and_errors():
    doc = parse_json(MappedText.from_source(SourceFile("a.json", '{"a": 1, // note\n "b": [1,2,],}\n')), "a.json")
    assert not doc.problems and len(doc.leniencies) == 3
    doc = parse_json(MappedText.from_source(SourceFile("a.json", '{"a": 1, "a": 2}')), "a.json")
    assert doc.root.get("a").value == 2 and doc.duplicates[0][0] == "a"
    doc = parse_json(MappedText.from_source(SourceFile("a.json", '{\n  "a": 1\n  "b": 2\n}')), "a.json")
    assert doc.problems and doc.problems[0].span.line == 3


def test_bf16_alias_auto_and_defaults():
    cfg = config('{"bfloat16": {"enabled": true}, "fp16": {"enabled": "auto"}}')
    assert cfg.bf16_enabled.value is True and cfg.fp16_enabled.value == "auto"
    assert cfg.zero_stage.value == 0 and cfg.zero_stage.origin == "default"
    assert cfg.gradient_clipping.value == 1.0 and cfg.gradient_clipping.origin == "default"


@pytest.mark.parametrize("body, dp, triple", [
    ('"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4', 8, (2, 64, 4)),
    ('"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2', 8, (2, 64, 4)),
    ('"train_batch_size": 64, "gradient_accumulation_steps": 2', 8, (4, 64, 2)),
    ('"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4', 8, (2, 64, 4)),
    ('"train_batch_size": 64', 8, (8, 64, 1)),
    ('"train_micro_batch_size_per_gpu": 3', 8, (3, 24, 1)),
    ('"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2', 8, (2, 60, 3)),  # floor: DS then rejects 60 != 2*3*8
])
def test_batch_triple_as_deepspeed_derives_it(body, dp, triple):
    batch = derive_batch(config("{" + body + "}"), Value(dp, None, "derived"))
    assert (batch.micro.value, batch.global_.value, batch.grad_accum.value) == triple


def test_batch_triple_unknowns():
    batch = derive_batch(config('{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}'),
                         Value(8, None, "derived"))
    assert batch.micro.value is None and "auto" in batch.micro.note
    batch = derive_batch(config('{"gradient_accumulation_steps": 4}'), Value(8, None, "derived"))
    assert "Either train_batch_size or train_micro_batch_size_per_gpu" in batch.problems[0].message
    batch = derive_batch(config('{"train_batch_size": 64}'), Value(None, None, "unresolved", "no world"))
    assert batch.global_.value == 64 and batch.micro.value is None
