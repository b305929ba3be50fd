"""Argument lists with unknown words: which options an unknown word could give, and what the readers make of it."""

from plint.reading.shell.model import Piece, Word
from plint.reading.sources.arglist import argument_gap, gap_fact, possible_options
from plint.reading.sources.hf import hf_facts


def known(text: str) -> Word:
    return Word((Piece(text),))


def unknown(name: str, *alternatives: str, head: str = "") -> Word:
    tail = Piece(
        None, None, "unresolved", reason=f"${name} depends on if (line 3)", name=name, alternatives=alternatives
    )
    return Word(((Piece(head),) if head else ()) + (tail,))


def always(_: str) -> bool:
    return True


def test_a_word_with_no_alternatives_could_give_anything():
    assert possible_options(unknown("EXTRA"), always) is None


def test_the_options_of_every_alternative():
    word = unknown("OPTS", " --fp16 --loss-scale-window 500", " --bf16", "<unset>")
    assert possible_options(word, always) == {"--fp16", "--loss-scale-window", "--bf16"}
    assert possible_options(unknown("OPTS", "--lr=3e-4", ""), always) == {"--lr"}


def test_unknown_text_is_a_value_only_where_an_option_wants_one():
    assert possible_options(unknown("LOAD", "--load ${RESUME} --no-load-optim", "<unset>"), always) == {
        "--load",
        "--no-load-optim",
    }
    # after a switch, unknown text could be anything
    assert possible_options(unknown("X", "--bf16 ${MORE}"), lambda option: option != "--bf16") is None
    assert possible_options(unknown("X", "${MORE}"), always) is None
    assert possible_options(unknown("X", "<unknown>", ""), always) is None


def test_known_pieces_compose_with_the_alternatives():
    word = unknown("PP", "2", "4", head="--pipeline-model-parallel-size=")
    assert possible_options(word, always) == {"--pipeline-model-parallel-size"}


def test_gap_fact_only_for_a_part_that_could_hold_any_flag():
    assert gap_fact(argument_gap([unknown("OPTS", " --fp16", "")])) is None
    fact = gap_fact(argument_gap([unknown("OPTS", " --fp16", ""), unknown("EXTRA")]))
    assert fact.origin == "unresolved" and fact.value is None and "${EXTRA}" in fact.note
    assert gap_fact(argument_gap([])) is None


def test_hf_precision_unknown_behind_an_unknown_word():
    f = hf_facts([known("--per_device_train_batch_size"), known("4"), unknown("EXTRA_ARGS")])
    assert f["precision"].value is None and "${EXTRA_ARGS}" in f["precision"].note
    assert f["arguments.incomplete"].origin == "unresolved"
    assert f["batch.micro"].value == 4


def test_hf_option_values_are_not_gaps():
    # `--output_dir "$OUT"`: the unknown word is the option's value, the list is still known in full
    f = hf_facts([known("--output_dir"), unknown("OUT"), known("--bf16")])
    assert "arguments.incomplete" not in f and f["precision"].value == "bf16"
    f = hf_facts([known("--output_dir"), unknown("OUT")])
    assert "precision" not in f  # absent: the layout's default (fp32) applies, the list being known


def test_hf_gap_that_cannot_hold_a_precision_flag():
    f = hf_facts([unknown("OPTS", " --max_steps 10", ""), known("--do_train")])
    assert "precision" not in f and "arguments.incomplete" not in f


def test_script_arguments_and_positional_words_give_no_option():
    at = Word((Piece(None, None, "unresolved", reason="the script's positional parameters are not given", name="@"),))
    assert possible_options(at, always) == frozenset()
    path = Word((Piece("/out/"), Piece(None, None, "unresolved", reason="$RUN has no default", name="RUN")))
    assert possible_options(path, always) == frozenset()
    assert possible_options(unknown("X", head="--save="), always) is None  # `--save=$X` itself is read as an option


def test_a_path_under_an_unknown_folder_gives_no_option():
    # MLCommons' GPT-3 reference passes `--train-data-path 0.5 ${COM_DIR}/c4_en_6_c4_spm_text_document ...` (fail
    # before: that word could hold any flag, so every trainer default, the precision among them, was unknown)
    folder = Piece(None, None, "unresolved", reason="$3 is not set", name="3")
    assert possible_options(Word((folder, Piece("/c4_en_6_c4_spm_text_document"))), always) == frozenset()
    assert possible_options(Word((folder, Piece("-suffix"))), always) is None  # no path: its start may be a flag
    assert possible_options(Word((folder, Piece("/x"), folder)), always) is None  # unknown text after the path


def _layout(tmp_path, text: str):
    from plint.reading.read import read_path

    (tmp_path / "launch.sh").write_text(text)
    (layout,) = read_path(tmp_path / "launch.sh").layouts
    return layout


def test_plain_deepspeed_batch_without_config_is_not_guessed(tmp_path):
    layout = _layout(tmp_path, "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed\n")
    glob = layout.get("batch.global")
    assert glob.value is None and glob.origin == "unresolved"


def test_plain_deepspeed_precision_behind_an_unknown_word(tmp_path):
    layout = _layout(tmp_path, "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --per_device_train_batch_size 4 $EXTRA\n")
    assert layout.value("precision") is None and "${EXTRA}" in layout.get("precision").note
    # was ("fp32", "default"): with no DeepSpeed config the reader found, the script builds its own (a dict
    # given to deepspeed.initialize), so its precision is the script's to decide, as its batch is (issue 12)
    layout = _layout(tmp_path, "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --per_device_train_batch_size 4\n")
    assert (layout.value("precision"), layout.get("precision").origin) == (None, "unresolved")
    assert "builds in Python" in layout.get("precision").note
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 4}')
    layout = _layout(tmp_path, "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n")
    assert (layout.value("precision"), layout.get("precision").origin) == ("fp32", "default")


def test_the_quoted_prefix_a_data_blend_weight_pairs_with_is_a_value_not_a_gap(tmp_path):
    # TrustLLM's `--train-data-path 1.0 "$TRAIN_DATA_PREFIX"`: Megatron's data options read "weight1 prefix1 weight2
    # prefix2 ..." (megatron/training/arguments.py --data-path), and a quoted word is one argument, so the word after
    # a weight is its prefix (fail before: it could hold any flag, and every flag absent from the line was unresolved)
    head = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
    tail = "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 --bf16"
    layout = _layout(tmp_path, head + '--train-data-path 1.0 "$PREFIX" --valid-data-path 0.5 "$A" 0.5 "${B}" ' + tail)
    assert (layout.value("parallel.cp"), layout.get("parallel.cp").origin) == (1, "default")
    # unquoted (it may split into options), after a prefix, or in a list without weights: still a possible gap
    for blend in ("1.0 $A", '1.0 "$A" "$B"', '"$A" "$B"'):
        layout = _layout(tmp_path, head + f"--train-data-path {blend} " + tail)
        assert layout.value("parallel.cp") is None, blend
