"""Megatron arguments: argparse semantics and the layout facts they set."""

import pytest

from plint.catalog.flags import load_flag_catalog
from plint.shell.model import Word
from plint.source import SourceFile
from plint.sources.megatron import _layout_stages, megatron_facts, parse_trainer_args
from plint.sources.trainer import detect_trainer


def words(line: str) -> list[Word]:
    source = SourceFile("l.sh", line)
    out, pos = [], 0
    for token in line.split(" "):
        start = len(line[:pos].encode())
        out.append(Word.of(token, source.span(start, start + len(token.encode()))))
        pos += len(token) + 1
    return out


def facts(line: str, release: str = "0.19", flavour: str = "megatron"):
    catalog = load_flag_catalog(release)
    return megatron_facts(parse_trainer_args(words(line), catalog), catalog, flavour)


def test_argparse_semantics():
    catalog = load_flag_catalog("0.19")
    args = parse_trainer_args(words("--tensor-model-parallel-size=4 --lr -0.5 --bf16 --data-path a b c "
                                    "--tensor-model-parallel --tensor-model-parallel-size 2"), catalog)
    assert [u.option for u in args.uses] == ["--tensor-model-parallel-size", "--lr", "--bf16", "--data-path",
                                             "--tensor-model-parallel", "--tensor-model-parallel-size"]
    assert args.get("--lr").value.text == "-0.5"  # a negative number is a value
    assert [w.text for w in args.get("--data-path").values] == ["a", "b", "c"]
    assert args.get("--tensor-model-parallel").spec is None  # no abbreviations (allow_abbrev=False)
    assert args.get("tensor_model_parallel_size").value.text == "2"  # the last occurrence wins


def test_defaults_and_provenance():
    f = facts("--num-layers 32 --hidden-size 4096 --num-attention-heads 32")
    assert f["parallel.tp"].value == 1 and f["parallel.tp"].origin == "default"
    assert f["batch.micro"].value == 1 and f["batch.micro"].origin == "default"
    assert f["model.ffn_hidden_size"].value == 16384 and f["model.ffn_hidden_size"].origin == "derived"
    assert f["model.num_query_groups"].value == 32
    assert f["precision"].value == "fp32" and f["precision"].origin == "default"
    hidden = f["model.hidden_size"]
    assert hidden.value == 4096 and (hidden.span.line, hidden.span.col) == (1, 31)


def test_swiglu_gqa_and_etp_defaults():
    f = facts("--hidden-size 4096 --swiglu --group-query-attention --num-query-groups 8 "
              "--tensor-model-parallel-size 4 --num-experts 8")
    assert f["model.ffn_hidden_size"].value == int((4 * 4096 * 2 / 3) / 64) * 64 == 10880
    assert f["model.num_query_groups"].value == 8
    assert f["parallel.etp"].value == 4 and f["parallel.etp"].origin == "derived"
    assert f["model.moe_topk"].value == 2 and f["model.moe_topk"].origin == "default"


@pytest.mark.parametrize("line, vpp", [
    ("--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2", 4),
    ("--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 8", None),
    ("--num-layers 30 --pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split "
     "--account-for-loss-in-pipeline-split --num-layers-per-virtual-pipeline-stage 4", 2),
    ("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 3", 3),
    ("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 1", None),
    ("--pipeline-model-parallel-size 16 --pipeline-model-parallel-layout Et*3|(tt|)*29,m|L", 2),
])
def test_every_way_of_setting_virtual_stages(line, vpp):
    assert facts(line)["parallel.vpp"].value == vpp


def test_layout_grammar():
    assert _layout_stages("Et*3|(tt|)*29,m|L") == 32
    assert _layout_stages("E|t*4|t*4|L") == 4
    assert _layout_stages("Ex|y") is None


def test_precision_and_recompute():
    f = facts("--bf16 --recompute-granularity full --recompute-activations")
    assert f["precision"].value == "bf16"
    assert f["recompute.granularity"].value == "selective"  # --recompute-activations overrides full
    assert facts("--fp16 --bf16")["precision"].value is None
    assert facts("--bf16 --fp8-format hybrid")["precision"].value == "fp8"


def test_megatron_deepspeed_flags():
    f = facts("--zero-stage 2 --no-pipeline-parallel --moe-expert-parallel-size 4 --num-experts 16 "
              "--checkpoint-activations --deepspeed --deepspeed_config ds.json",
              release="megatron-deepspeed", flavour="megatron-deepspeed")
    assert f["parallel.zero_stage"].value == 2 and f["parallel.ep"].value == 4
    assert f["megatron_deepspeed.no_pipeline_parallel"].value is True
    assert f["recompute.granularity"].value == "full" and f["deepspeed.config_path"].value == "ds.json"
    assert f["model.moe_topk"].value == 1  # the fork's --topk defaults to 1
    assert facts("", "megatron-deepspeed", "megatron-deepspeed")["parallel.zero_stage"].value == 1


def test_trainer_detection():
    assert detect_trainer(Word.of("pretrain_gpt.py"), "torchrun", []).value == "megatron"
    assert detect_trainer(Word.of("pretrain_gpt.py"), "torchrun", [Word.of("--deepspeed")]).value == \
        "megatron-deepspeed"
    assert detect_trainer(Word.of("/x/Megatron-DeepSpeed/pretrain_gpt.py"), "deepspeed", []).value == \
        "megatron-deepspeed"
    assert detect_trainer(Word.of("train.py"), "deepspeed", []).value == "deepspeed"
    assert detect_trainer(Word.of("train.py"), "torchrun", []).value == "unknown"
