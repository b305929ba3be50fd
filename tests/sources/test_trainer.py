"""Which trainer a launch runs, and why."""

import pytest

from plint.catalog.flags import load_flag_catalog, releases
from plint.shell.model import Piece, Word
from plint.sources.trainer import BIGSCIENCE_FLAGS, FORK_FLAGS, detect_trainer, fork_release


def ws(text: str) -> list[Word]:
    return [Word.of(t) for t in text.split()]


@pytest.mark.parametrize("entrypoint, launcher, args, trainer", [
    ("pretrain_gpt.py", "torchrun", "--num-layers 2", "megatron"),
    ("/opt/Megatron-LM/pretrain_mamba.py", None, "", "megatron"),
    ("/opt/Megatron-LM/examples/custom_train.py", "torchrun", "", "megatron"),  # under a Megatron checkout
    ("megatron.training.run", "torchrun", "", "megatron"),  # -m megatron...
    ("pretrain_gpt.py", "torchrun", "--deepspeed --deepspeed_config ds.json", "megatron-deepspeed"),
    ("pretrain_gpt.py", "torchrun", "--deepspeed_config=ds.json", "megatron-deepspeed"),
    ("pretrain_gpt.py", "torchrun", "--zero-stage 1", "megatron-deepspeed"),
    ("pretrain_gpt.py", "deepspeed", "", "megatron-deepspeed"),
    ("/work/Megatron-DeepSpeed/examples/run.py", "torchrun", "", "megatron-deepspeed"),
    ("train.py", "deepspeed", "", "deepspeed"),
    ("train.py", "torchrun", "--deepspeed ds.json", "deepspeed"),
    ("finetune.py", "torchrun", "--deepspeed_config ds.json", "deepspeed"),
    ("train.py", "torchrun", "--num-layers 2", "unknown"),
    ("/opt/NeMo/examples/nlp/megatron_gpt_pretraining.py", "torchrun", "trainer.devices=8", "unknown"),
    ("pretrain_vit.py", "torchrun", "--per_device_train_batch_size 8 --output_dir out", "unknown"),
])
def test_detection(entrypoint, launcher, args, trainer):
    v = detect_trainer(Word.of(entrypoint), launcher, ws(args))
    assert v.value == trainer and v.origin == "derived" and v.note


def test_the_note_names_the_evidence():
    assert "--zero-stage" in detect_trainer(Word.of("pretrain_gpt.py"), "torchrun", ws("--zero-stage 2")).note
    assert "deepspeed launcher" in detect_trainer(Word.of("pretrain_gpt.py"), "deepspeed", []).note
    assert "pretrain_bert.py" in detect_trainer(Word.of("x/pretrain_bert.py"), "torchrun", []).note


def test_unknown_words_and_no_entrypoint():
    unknown = Word((Piece(None, None, "unresolved", reason="$SCRIPT has no default", name="SCRIPT"),))
    assert detect_trainer(unknown, "torchrun", []).value == "unknown"
    assert detect_trainer(None, "deepspeed", []).value == "deepspeed"
    dir_var = Word((Piece(None, None, "unresolved", name="MEGATRON_DIR"), Piece("/pretrain_gpt.py")))
    assert detect_trainer(dir_var, "torchrun", []).value == "megatron"
    partial = Word((Piece("--deepspeed_config="), Piece(None, None, "unresolved", name="CFG")))
    assert detect_trainer(Word.of("pretrain_gpt.py"), "torchrun", [partial]).value == "megatron-deepspeed"


def test_bigscience_fork():
    assert fork_release(Word.of("pretrain_gpt.py"), ws("--glu-activation swiglu")).value == "bigscience"
    assert fork_release(Word.of("/x/bigscience/Megatron-DeepSpeed/pretrain_gpt.py"), []).value == "bigscience"
    assert fork_release(Word.of("pretrain_gpt.py"), ws("--zero-stage 1")) is None


def test_flag_sets_agree_with_the_catalog():
    forks = {name: load_flag_catalog(name) for name in ("megatron-deepspeed", "bigscience")}
    upstream = [load_flag_catalog(r) for r in releases() if load_flag_catalog(r).flavour == "megatron"]
    for flag in FORK_FLAGS:
        assert forks["megatron-deepspeed"].lookup(flag) is not None, flag
        assert all(c.lookup(flag) is None for c in upstream), flag
    for flag in BIGSCIENCE_FLAGS:
        assert forks["bigscience"].lookup(flag) is not None and forks["megatron-deepspeed"].lookup(flag) is None, flag
        assert all(c.lookup(flag) is None for c in upstream), flag
