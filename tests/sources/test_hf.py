"""HF-Trainer style arguments of plain DeepSpeed scripts."""

import pytest

from plint.reading.shell.model import Piece, Word
from plint.source import SourceFile
from plint.reading.sources.hf import hf_facts


def words(text: str) -> list[Word]:
    source = SourceFile("train.sh", text)
    out, pos = [], 0
    for token in text.split():
        pos = text.index(token, pos)
        start = len(text[:pos].encode())
        span = source.span(start, start + len(token.encode()))
        out.append(Word((Piece(token, span, exact=True, source=source),), span))
        pos += len(token)
    return out


def test_trainer_arguments_with_provenance():
    text = (
        "--per_device_train_batch_size 4 --gradient_accumulation_steps=8 --deepspeed ds.json "
        "--bf16 True --model_max_length 2048 --max_steps 100"
    )
    f = hf_facts(words(text))
    assert (f["batch.micro"].value, f["batch.grad_accum"].value, f["model.seq_length"].value) == (4, 8, 2048)
    assert f["deepspeed.config_path"].value == "ds.json" and f["deepspeed.enabled"].value is True
    assert f["precision"].value == "bf16" and f["train_iters"].value == 100
    micro = f["batch.micro"]
    assert (micro.span.line, micro.span.col, micro.origin) == (1, text.index(" 4") + 2, "literal")
    accum = f["batch.grad_accum"]
    assert accum.span.col == text.index("=8") + 2  # the value inside --x=v


@pytest.mark.parametrize(
    "text, precision",
    [
        ("--bf16", "bf16"),
        ("--fp16", "fp16"),
        ("--bf16 true", "bf16"),
        ("--bf16=yes", "bf16"),
        ("--bf16 1", "bf16"),
        ("--bf16 False", None),
        ("--fp16=no", None),
        ("--bf16 False --fp16", "fp16"),
    ],
)
def test_precision_switches_and_boolean_values(text, precision):
    f = hf_facts(words(text))
    assert (f["precision"].value if "precision" in f else None) == precision


def test_both_precisions_and_bad_booleans():
    both = hf_facts(words("--fp16 --bf16"))["precision"]
    assert both.value is None and "both" in both.note
    bad = hf_facts(words("--bf16=maybe"))["precision"]
    assert bad.value is None and "not a boolean" in bad.note
    # a bare switch does not take the next word as its value
    f = hf_facts(words("--bf16 --per_device_train_batch_size 2"))
    assert f["precision"].value == "bf16" and f["batch.micro"].value == 2


def test_dashes_and_deepspeed_styles():
    f = hf_facts(words("--per-device-train-batch-size 2 --max-seq-length 512"))
    assert f["batch.micro"].value == 2 and f["model.seq_length"].value == 512
    # DeepSpeed's own --deepspeed is a switch; the config comes with --deepspeed_config
    ds = hf_facts(words("--deepspeed --deepspeed_config ds_config.json"))
    assert ds["deepspeed.enabled"].value is True and ds["deepspeed.config_path"].value == "ds_config.json"
    assert "deepspeed.config_path" not in hf_facts(words("--deepspeed"))


@pytest.mark.parametrize(
    "text",
    ["++deepspeed_config=conf/ds.json", "+deepspeed_config=conf/ds.json", "train_config.deepspeed_config=conf/ds.json"],
)
def test_a_hydra_override_of_the_config_path_names_the_config(text):
    """X-LANCE/SLAM-LLM's `deepspeed finetune_deepspeed.py --config-name prompt.yaml ++deepspeed_config=$cfg`: a Hydra
    entry script whose config field of that name goes to deepspeed.initialize."""
    f = hf_facts(words(f"--config-path conf {text} ++train_config.use_fp16=true"))
    assert f["deepspeed.config_path"].value == "conf/ds.json" and f[
        "deepspeed.config_path"
    ].span.col == 21 + text.index("=")
    assert "deepspeed.config_path" not in hf_facts(words("++model_config.deepspeed_stage=3 my_deepspeed_config=x"))


def test_unknown_and_bad_values_never_raise():
    unknown = Word((Piece(None, None, "unresolved", reason="$MBS has no default", name="MBS"),))
    f = hf_facts(
        [Word.of("--per_device_train_batch_size"), unknown, Word.of("--gradient_accumulation_steps"), Word.of("many")]
    )
    assert f["batch.micro"].origin == "unresolved" and "$MBS" in f["batch.micro"].note
    assert f["batch.grad_accum"].value is None and f["batch.grad_accum"].origin == "unresolved"
    assert hf_facts([]) == {} and hf_facts(words("--per_device_train_batch_size")) == {}
    partial = Word((Piece("--gradient_accumulation_steps="), Piece(None, None, "unresolved", name="GAS")))
    assert hf_facts([partial])["batch.grad_accum"].origin == "unresolved"


@pytest.mark.parametrize(
    ("given", "sharding"),
    [
        ("full_shard", "parameters"),
        ("shard_grad_op", "gradients"),
        ("hybrid_shard", "parameters"),
        ("hybrid_shard_zero2", "gradients"),
        ("no_shard", "none"),
    ],
)
def test_fsdp_option_gives_the_sharding(given, sharding):
    # transformers' FSDPOption words (trainer_utils.py): full_shard is ZeRO-3, shard_grad_op ZeRO-2
    text = f"--fsdp {given} --bf16"
    got = hf_facts(words(text))["parallel.sharding"]
    assert (got.value, got.origin, got.span.col) == (sharding, "literal", len("--fsdp ") + 1)
    assert hf_facts(words(text))["precision"].value == "bf16"  # --bf16 is not taken as --fsdp's value


def test_fsdp_option_without_a_strategy_is_not_a_guess():
    got = hf_facts(words("--fsdp auto_wrap"))["parallel.sharding"]
    assert got.value is None and "names no sharding strategy" in got.note


@pytest.mark.parametrize("text", ["--gradient_checkpointing True", "--grad_checkpoint True", "--grad_checkpoint"])
def test_gradient_checkpointing_switches_give_full_recompute(text):
    """TrainingArguments.gradient_checkpointing and InternVL's ModelArguments.grad_checkpoint: every layer."""
    facts = hf_facts(words(f"train.py {text} --bf16 True"))
    assert (facts["recompute.granularity"].value, facts["recompute.num_layers"].value) == ("full", 1)


def test_grad_checkpoint_false_recomputes_nothing():
    assert "recompute.granularity" not in hf_facts(words("train.py --grad_checkpoint False"))


def test_source_and_target_lengths_give_the_sequence():
    """ChatGLM-6B's ptuning/main.py pads each example to --max_source_length + --max_target_length."""
    facts = hf_facts(words("main.py --max_source_length 64 --max_target_length 128"))
    assert facts["model.seq_length"].value == 192 and facts["model.seq_length"].origin == "derived"
    given = hf_facts(words("main.py --max_source_length 64 --max_target_length 128 --max_seq_length 512"))
    assert given["model.seq_length"].value == 512  # a sequence length the launch gives stands
    assert "model.seq_length" not in hf_facts(words("main.py --max_source_length 64"))
