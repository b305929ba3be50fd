"""Megatron arguments: argparse semantics over expanded words, and the layout facts they set."""

import re

import pytest

from plint.catalog.flags import load_flag_catalog
from plint.reading.shell.model import Piece, Word
from plint.source import SourceFile
from plint.reading.sources.megatron import layout_stages, megatron_facts, parse_trainer_args

FORK = "megatron-deepspeed"


def words(text: str) -> list[Word]:
    """Whitespace-separated words of `text`, each with its span; `$NAME` words are unknown and
    `--x=$NAME` words have a known `--x=` part."""
    source = SourceFile("args.sh", text)
    out = []
    for m in re.finditer(r"\S+", text):
        start = len(text[: m.start()].encode())
        token = m.group()
        span = source.span(start, start + len(token.encode()))
        cut = token.find("$")
        if cut < 0:
            out.append(Word((Piece(token, span, exact=True, source=source),), span))
            continue
        name = token[cut + 1 :]
        unknown = Piece(
            None,
            source.span(start + cut, start + len(token)),
            "unresolved",
            reason=f"${name} has no default",
            name=name,
        )
        known = (Piece(token[:cut], source.span(start, start + cut), exact=True, source=source),) if cut else ()
        out.append(Word(known + (unknown,), span))
    return out


def parse(text: str, release: str = "0.19"):
    return parse_trainer_args(words(text), load_flag_catalog(release))


def facts(text: str, release: str = "0.19", flavour: str = "megatron"):
    catalog = load_flag_catalog(release)
    return megatron_facts(parse_trainer_args(words(text), catalog), catalog, flavour)


def fork(text: str, release: str = FORK):
    return facts(text, release, FORK)


def at(value):
    return value.span.line, value.span.col


def where(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, column) of the nth occurrence of needle in text, found by plain string search."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


# ---- argparse semantics -----------------------------------------------------------------------------


def test_inline_and_separate_values():
    text = "--tensor-model-parallel-size=4 --pipeline-model-parallel-size 2"
    tp, pp = parse(text).uses
    assert tp.inline_value and tp.option == tp.flag_word.text == "--tensor-model-parallel-size"
    assert tp.value.text == "4" and (tp.value.value_span.line, tp.value.value_span.col) == where(text, "4")
    assert tp.flag_word.value_span.end_col == where(text, "=")[1]
    assert not pp.inline_value and pp.value.text == "2" and pp.spec.dest == "pipeline_model_parallel_size"


def test_nargs_plus_star_fixed_and_switches():
    args = parse("--data-path 0.5 a 0.5 b --bf16 --rampup-batch-size 32 32 1000 --recompute-modules core_attn mlp")
    assert [w.text for w in args.get("--data-path").values] == ["0.5", "a", "0.5", "b"]
    assert args.get("--bf16").values == []
    assert [w.text for w in args.get("rampup_batch_size").values] == ["32", "32", "1000"]
    assert [w.text for w in args.get("--recompute-modules").values] == ["core_attn", "mlp"]
    assert not args.positionals and not args.opaque


def test_negative_numbers_are_values_but_not_scientific_ones():
    args = parse("--min-lr -0.5 --seed -3 --lr -1e-5 --bf16")
    assert args.get("--min-lr").value.text == "-0.5" and args.get("--seed").value.text == "-3"
    # argparse before Python 3.14 reads -1e-5 as an option: --lr gets no value
    assert args.get("--lr").values == [] and args.get("-1e-5").spec is None


def test_a_switch_does_not_swallow_the_next_word():
    args = parse("--bf16 extra --sequence-parallel")
    assert [w.text for w in args.positionals] == ["extra"]  # argparse: "unrecognized arguments: extra"


def test_a_value_needed_but_an_option_follows():
    args = parse("--micro-batch-size --global-batch-size 8")
    assert args.get("--micro-batch-size").values == [] and args.get("--global-batch-size").value.text == "8"
    assert facts("--micro-batch-size --global-batch-size 8")["batch.micro"].origin == "unresolved"


def test_repeated_flags_last_wins_by_option_or_dest():
    text = "--tensor-model-parallel-size 2 --sequence-parallel --tensor-model-parallel-size 4"
    args = parse(text)
    assert [u.value.text for u in args.all("--tensor-model-parallel-size")] == ["2", "4"]
    assert args.get("tensor_model_parallel_size").value.text == "4"
    f = facts(text)
    assert f["parallel.tp"].value == 4 and at(f["parallel.tp"]) == where(text, "4")


def test_unknown_options_are_kept_in_order_and_set_nothing():
    text = "--tensor-model-parallel 2 --tensor_model_parallel_size=8 --bf16"
    args = parse(text)
    assert [(u.option, u.spec) for u in args.uses[:2]] == [
        ("--tensor-model-parallel", None),
        ("--tensor_model_parallel_size", None),
    ]
    assert args.uses[0].value.text == "2" and args.uses[1].inline_value
    assert facts(text)["parallel.tp"].origin == "default"  # argparse exits on them: they set nothing


def test_words_with_spaces_and_double_dash():
    quoted = Word.of("--fp8-format hybrid")  # one quoted array item: argparse sees a positional
    args = parse_trainer_args([quoted] + words("--bf16 -- --fp16"), load_flag_catalog("0.19"))
    assert [w.text for w in args.positionals] == ["--fp8-format hybrid", "--fp16"]
    assert [u.option for u in args.uses] == ["--bf16"]


def test_unresolved_words():
    args = parse("--num-layers $LAYERS --data-path $DATA $EXTRA_ARGS --lr=$LR --bf16")
    assert args.get("--num-layers").value.text is None  # an unknown word fills a needed value
    assert len(args.get("--data-path").values) == 1  # ...but does not extend a nargs list
    assert [w.display() for w in args.opaque] == ["${EXTRA_ARGS}"]
    lr = args.get("--lr")
    assert lr.inline_value and lr.value.display() == "${LR}" and lr.flag_word.text == "--lr"
    f = facts("--num-layers $LAYERS $EXTRA_ARGS")
    assert f["model.num_layers"].origin == "unresolved" and "$LAYERS has no default" in f["model.num_layers"].note
    # Was: tp 1 (the default) with a caveat. Issue 12 (unknown is never a default): a flag that is not on the
    # known part of the line may be in ${EXTRA_ARGS}, so it is unresolved, and the note names the unknown part.
    assert f["parallel.tp"].value is None and f["parallel.tp"].origin == "unresolved"
    assert "${EXTRA_ARGS}" in f["parallel.tp"].note and "incomplete" in f["parallel.tp"].note


def test_an_option_the_parser_lacks_is_not_in_the_unknown_part():
    """Fugaku-LLM/DeepSpeedFugaku's run_pretrain_gpt_fugaku.sh passes an unset $MODEL_ARGS before its flags: its
    fork (the bigscience parser has no grouped-query attention) keeps one group per head whatever the unknown
    part holds, since argparse would stop at such a flag; under a parser that has them, the gap leaves it open."""
    line = "$MODEL_ARGS --num-attention-heads 16"
    groups = facts(line, "bigscience", "megatron-deepspeed")["model.num_query_groups"]
    assert groups.value == 16 and groups.origin == "derived"
    assert "defines none of --group-query-attention" in groups.note
    assert facts(line)["model.num_query_groups"].origin == "unresolved"


def test_option_with_unknown_name_is_opaque():
    args = parse("--$WHICH 4 --bf16")
    assert [w.display() for w in args.opaque] == ["--${WHICH}"] and [w.text for w in args.positionals] == ["4"]


# ---- facts: values, provenance, defaults ------------------------------------------------------------

LINES = """--tensor-model-parallel-size 4
--pipeline-model-parallel-size 2
--context-parallel-size 2
--expert-model-parallel-size 8
--expert-tensor-parallel-size 1
--sequence-parallel
--use-distributed-optimizer
--micro-batch-size 1
--global-batch-size 512
--num-layers 32
--hidden-size 4096
--ffn-hidden-size 14336
--num-attention-heads 32
--group-query-attention
--num-query-groups 8
--seq-length 8192
--max-position-embeddings 8192
--vocab-size 128256
--num-experts 64
--moe-router-topk 6
--bf16
--recompute-granularity full
--recompute-method uniform
--recompute-num-layers 1
--train-iters 1000"""


@pytest.mark.parametrize(
    "key, value, line",
    [
        ("parallel.tp", 4, 1),
        ("parallel.pp", 2, 2),
        ("parallel.cp", 2, 3),
        ("parallel.ep", 8, 4),
        ("parallel.etp", 1, 5),
        ("parallel.sequence_parallel", True, 6),
        ("parallel.distributed_optimizer", True, 7),
        ("batch.micro", 1, 8),
        ("batch.global", 512, 9),
        ("model.num_layers", 32, 10),
        ("model.hidden_size", 4096, 11),
        ("model.ffn_hidden_size", 14336, 12),
        ("model.num_attention_heads", 32, 13),
        ("model.group_query_attention", True, 14),
        ("model.num_query_groups", 8, 15),
        ("model.seq_length", 8192, 16),
        ("model.max_position_embeddings", 8192, 17),
        ("model.vocab_size", 128256, 18),
        ("model.num_experts", 64, 19),
        ("model.moe_topk", 6, 20),
        ("precision", "bf16", 21),
        ("recompute.granularity", "full", 22),
        ("recompute.method", "uniform", 23),
        ("recompute.num_layers", 1, 24),
        ("train_iters", 1000, 25),
    ],
)
def test_each_layout_field_with_its_provenance(key, value, line):
    v = facts(LINES)[key]
    text = LINES.splitlines()[line - 1]
    col = text.index(" ") + 2 if " " in text else 1  # the value word, or the switch itself
    assert (v.value, v.origin, at(v)) == (value, "literal", (line, col))
    assert v.span.path == "args.sh"


@pytest.mark.parametrize(
    "key, value",
    [
        ("parallel.tp", 1),
        ("parallel.pp", 1),
        ("parallel.cp", 1),
        ("parallel.ep", 1),
        ("parallel.sequence_parallel", False),
        ("parallel.distributed_optimizer", False),
        ("parallel.vpp", None),
        ("batch.global", None),
        ("precision", "fp32"),
        ("recompute.granularity", None),
        ("model.num_experts", None),
        ("model.vocab_size", None),
    ],
)
def test_each_default(key, value):
    v = facts("--num-layers 2")[key]
    assert v.value == value and v.origin == "default" and v.span is None and v.note


def test_missing_micro_batch_is_an_assumption():
    # batch.micro was listed above as a default (1); the trainer's own default is None (it stops without the
    # flag), so 1 is plint's assumption and says so (issue 12: a guess is "assumed" or a real default)
    v = facts("--num-layers 2")["batch.micro"]
    assert (v.value, v.origin) == (1, "assumed") and "assumes 1" in v.note


@pytest.mark.parametrize(
    "key",
    [
        "parallel.tp",
        "parallel.pp",
        "parallel.cp",
        "parallel.ep",
        "parallel.sequence_parallel",
        "parallel.distributed_optimizer",
        "parallel.vpp",
        "batch.micro",
        "batch.global",
        "precision",
        "recompute.granularity",
        "recompute.method",
        "model.num_experts",
        "model.vocab_size",
        "model.seq_length",
        "model.ffn_hidden_size",
        "model.num_query_groups",
    ],
)
def test_no_default_behind_an_unknown_part(key):
    # `$OPTIONS` may hold any flag: what it could set is unresolved, named, never the trainer's default
    v = facts("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 $OPTIONS")[key]
    assert (
        (v.value, v.origin) == (None, "unresolved") and "${OPTIONS}" in v.note and "$OPTIONS has no default" in v.note
    )
    assert at(v) == (1, 60)  # the unknown word, for PL002 to point at


def test_written_values_kept_beside_an_unknown_part():
    f = facts("--tensor-model-parallel-size 2 $OPTIONS --micro-batch-size 4 --bf16")
    tp, micro = f["parallel.tp"], f["batch.micro"]
    # written before the unknown part: kept (origin literal), with a note that a later occurrence would win
    assert (tp.value, tp.origin) == (2, "literal") and "could give it again" in tp.note
    assert (micro.value, micro.origin, micro.note) == (4, "literal", None)  # nothing unknown after it
    assert f["precision"].value == "bf16"  # a written precision flag is a reading
    assert f["parallel.pp"].value is None


def test_release_without_the_option_keeps_its_default():
    # an option the release lacks cannot hide in the unknown part: 0.8 has no --expert-tensor-parallel-size,
    # so experts split over tp as read
    f = facts("--tensor-model-parallel-size 2 $OPTIONS", "0.8")
    assert f["parallel.etp"].value == 2


def test_defaults_come_from_the_release():
    # --recompute-num-layers defaults to None in Megatron-LM and to 1 in the deepspeedai fork
    assert facts("--recompute-granularity full")["recompute.num_layers"].value is None
    assert fork("--recompute-granularity full")["recompute.num_layers"].value == 1
    assert "default in 0.16" in facts("", "0.16")["parallel.tp"].note
    borrowed = facts("", "0.11")["parallel.tp"]
    assert borrowed.value == 1 and "as in 0.10" in borrowed.note


def test_derived_shapes():
    f = facts("--hidden-size 4096 --num-attention-heads 32 --tensor-model-parallel-size 2")
    assert (f["model.ffn_hidden_size"].value, f["model.ffn_hidden_size"].origin) == (16384, "derived")
    assert f["model.num_query_groups"].value == 32 and "model.group_query_attention" not in f
    assert (f["parallel.etp"].value, f["parallel.etp"].origin) == (2, "derived")
    swiglu = facts("--hidden-size 4096 --swiglu")["model.ffn_hidden_size"]
    assert swiglu.value == int((4 * 4096 * 2 / 3) / 64) * 64 == 10880 and "swiglu" in swiglu.note
    gqa = facts("--num-attention-heads 32 --group-query-attention")["model.num_query_groups"]
    assert (gqa.value, gqa.origin) == (1, "default")  # --num-query-groups defaults to 1
    assert facts("--hidden-size $H")["model.ffn_hidden_size"].origin == "unresolved"
    assert facts("--encoder-seq-length 2048")["model.seq_length"].value == 2048


def test_bigcode_multi_query_attention_is_one_query_group():
    """BigCode's fork (and Pai-Megatron-Patch) sets multi-query attention with --attention-head-type multiquery:
    one shared key/value head, read whether or not the assumed parser defines the flag; multihead keeps a group
    per head."""
    line = "--num-attention-heads 48 --attention-head-type multiquery"
    mqa = facts(line)["model.num_query_groups"]
    assert (mqa.value, mqa.origin, at(mqa)) == (1, "literal", where(line, "multiquery"))
    assert facts("--num-attention-heads 48 --attention-head-type multihead")["model.num_query_groups"].value == 48


def test_moe_layer_recompute_is_selective_from_megatron_0_12():
    """From core 0.12 TransformerConfig turns --moe-layer-recompute into selective recompute of the MoE layer;
    0.11 checkpoints the layer on its own and leaves the granularity unset."""
    line = "--num-experts 8 --moe-layer-recompute"
    granularity = facts(line)["recompute.granularity"]
    assert (granularity.value, at(granularity)) == ("selective", where(line, "--moe-layer-recompute"))
    assert facts(line, "0.12")["recompute.granularity"].value == "selective"
    assert facts(line, "0.11")["recompute.granularity"].value is None
    explicit = facts(line + " --recompute-granularity full")["recompute.granularity"]
    assert explicit.value == "full"  # the granularity given wins (Megatron then refuses the pair)


def test_experts():
    assert facts("--num-experts 8")["model.moe_topk"].value == 2  # the release's default
    zero = facts("--num-experts 0")["model.num_experts"]
    assert zero.value is None and zero.origin == "derived"
    assert "model.moe_topk" not in facts("")


# ---- virtual pipeline --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, vpp",
    [
        ("--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2", 4),
        ("--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 8", None),
        (
            "--num-layers 30 --pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split "
            "--account-for-loss-in-pipeline-split --num-layers-per-virtual-pipeline-stage 4",
            2,
        ),
        (
            "--num-layers 31 --pipeline-model-parallel-size 4 --account-for-loss-in-pipeline-split "
            "--num-layers-per-virtual-pipeline-stage 2",
            4,
        ),
        ("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 3", 3),
        ("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 1", None),
        ("--pipeline-model-parallel-size 16 --pipeline-model-parallel-layout Et*3|(tt|)*29,m|L", 2),
        ("--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout E|t*4|t*4|tL", None),
        ("--pipeline-model-parallel-size 2 --hybrid-layer-pattern M*M*|M*M*|M*M*|M*M*", 2),
    ],
)
def test_every_way_of_setting_virtual_stages(line, vpp):
    assert facts(line)["parallel.vpp"].value == vpp


def test_virtual_stage_provenance_and_failures():
    text = "--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2"
    v = facts(text)["parallel.vpp"]
    assert v.origin == "derived" and at(v) == where(text, "2", 1) and "(32 / 4) / 2" in v.note
    bad = facts("--num-layers 30 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2")
    assert bad["parallel.vpp"].value is None and "do not split" in bad["parallel.vpp"].note
    missing = facts("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2")["parallel.vpp"]
    assert missing.origin == "unresolved"
    layout = facts("--pipeline-model-parallel-size 3 --pipeline-model-parallel-layout E|t|t|L")["parallel.vpp"]
    assert layout.value is None and "do not split over pp 3" in layout.note
    two = facts(
        "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
        "--num-layers-per-virtual-pipeline-stage 2 --num-layers 16"
    )
    assert two["parallel.vpp_spellings"].value == 2 and two["parallel.vpp"].value == 2


def test_a_single_virtual_stage_before_0_14_stays_on():
    line = "--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 8"
    assert facts(line, "0.13")["parallel.vpp"].value == 1 and facts(line, "0.14")["parallel.vpp"].value is None


def test_standalone_embedding_stage_of_old_releases():
    line = (
        "--num-layers 24 --pipeline-model-parallel-size 4 --standalone-embedding-stage "
        "--num-layers-per-virtual-pipeline-stage 4"
    )
    assert facts(line, "0.10")["parallel.vpp"].value == 2  # 24 layers over 3 stages, chunks of 4


@pytest.mark.parametrize(
    "layout, stages",
    [
        ("Et*3|(tt|)*29,m|L", 32),
        ("E|t*4|t*4|L", 4),
        ("(t|)*3", 4),
        ("", 1),
        ("Ettt||L", 3),
        ("t*2*2", None),
        ("Ex|y", None),
        ("E t|L", None),
        ("t*99999999999", None),
    ],
)
def test_layout_grammar(layout, stages):
    parsed, why = layout_stages(layout)
    assert (len(parsed) if parsed is not None else None) == stages
    assert (why is None) == (stages is not None)


def test_hybrid_pattern_sets_the_layer_count():
    f = facts("--num-layers 99 --pipeline-model-parallel-size 2 --hybrid-layer-pattern M*M-|M*M-/MM")
    assert f["model.num_layers"].value == 8 and f["model.num_layers"].origin == "derived"


def test_uneven_stages_are_reported():
    f = facts("--decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 6")
    assert (f["parallel.uneven_first"].value, f["parallel.uneven_last"].value) == (7, 6)


# ---- precision and recompute -------------------------------------------------------------------------


def test_precision():
    assert facts("--fp16")["precision"].value == "fp16"
    both = facts("--fp16 --bf16")["precision"]
    assert both.value is None and "both" in both.note and at(both) == (1, 1)
    fp8 = facts("--bf16 --fp8-format hybrid")
    assert fp8["precision"].value == "fp8" and fp8["fp8"].value == "hybrid" and "bf16" in fp8["precision"].note


def test_recompute():
    f = facts("--recompute-granularity full --recompute-activations")
    assert f["recompute.granularity"].value == "selective" and "overriding" in f["recompute.granularity"].note
    assert facts("--recompute-activations")["recompute.granularity"].value == "selective"
    # Megatron-LM's pre-v3 spellings are read as the releases that train with them read them (v3.0 on
    # exit on --checkpoint-activations, which PL502 reports): a launch written for v2.x recomputes in
    # full, and costing it without recompute would call a run that fits out of memory
    old = facts("--checkpoint-activations --checkpoint-num-layers 2")
    assert (old["recompute.granularity"].value, old["recompute.method"].value, old["recompute.num_layers"].value) == (
        "full",
        "uniform",
        2,
    )
    assert "v2.x" in old["recompute.granularity"].note and at(old["recompute.granularity"]) == (1, 1)
    assert facts("--checkpoint-activations")["recompute.num_layers"].value == 1  # v2.x default
    v26 = facts("--activations-checkpoint-method block --activations-checkpoint-num-layers 4")
    assert (v26["recompute.granularity"].value, v26["recompute.method"].value, v26["recompute.num_layers"].value) == (
        "full",
        "block",
        4,
    )
    # the modern flags win where both are written
    assert facts("--recompute-activations --checkpoint-activations")["recompute.granularity"].value == "selective"


def test_legacy_checkpointing_is_not_a_recompute_conflict(tmp_path):
    """PL112's "full recompute needs --recompute-method and --recompute-num-layers" is about
    --recompute-granularity full; a v2.x --checkpoint-activations launch gets PL502 (the flag makes
    later releases exit), not a second error about flags its release never had."""
    from plint.checking.check import check_paths

    launch = (
        "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 24 "
        "--hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
        "--micro-batch-size 1 --global-batch-size 64 --fp16 --checkpoint-activations\n"
    )
    (tmp_path / "launch.sh").write_text(launch)
    (result,) = check_paths([tmp_path / "launch.sh"])
    found = {d.code for d in result.diagnostics}
    assert "PL502" in found and "PL112" not in found
    (tmp_path / "modern.sh").write_text(launch.replace("--checkpoint-activations", "--recompute-granularity full"))
    (modern,) = check_paths([tmp_path / "modern.sh"])
    assert "PL112" in {d.code for d in modern.diagnostics}


# ---- Megatron-DeepSpeed forks ------------------------------------------------------------------------


def test_fork_flags():
    text = (
        "--zero-stage 2 --no-pipeline-parallel --moe-expert-parallel-size 4 --num-experts 16 "
        "--ds-sequence-parallel-size 2 --deepspeed --deepspeed_config ds.json"
    )
    f = fork(text)
    assert (f["parallel.zero_stage"].value, f["parallel.ep"].value, f["ds_sequence_parallel_size"].value) == (2, 4, 2)
    assert f["megatron_deepspeed.no_pipeline_parallel"].value is True and f["deepspeed.enabled"].value is True
    assert f["deepspeed.config_path"].value == "ds.json" and at(f["deepspeed.config_path"]) == where(text, "ds.json")
    assert f["model.moe_topk"].value == 1  # the fork's --topk defaults to 1
    assert f["parallel.cp"].value == 1 and "has no --context-parallel-size" in f["parallel.cp"].note


def test_fork_defaults():
    f = fork("--deepspeed")
    zero = f["parallel.zero_stage"]
    assert (zero.value, type(zero.value), zero.origin) == (1, int, "default") and "1.0" in zero.note
    assert f["megatron_deepspeed.no_pipeline_parallel"].value is False
    assert "parallel.zero_stage" not in facts("")  # Megatron-LM has no ZeRO stage flag


def test_the_fork_without_deepspeed_has_no_zero_stage():
    # megatron/training.py builds Megatron's own optimizer unless args.deepspeed: --zero-stage's default is idle
    assert "parallel.zero_stage" not in fork("--zero-stage 2")
    assert fork("--zero-stage 2 --deepspeed")["parallel.zero_stage"].value == 2


def test_fork_expert_tensor_parallelism():
    assert fork("--tensor-model-parallel-size 2")["parallel.etp"].value == 1
    on = fork("--tensor-model-parallel-size 2 --enable-expert-tensor-parallelism")["parallel.etp"]
    assert (on.value, on.origin) == (2, "derived")


def test_fork_num_experts_list_and_gqa():
    assert fork("--num-experts 1 8")["model.num_experts"].value == 8
    assert fork("--num-experts 1")["model.num_experts"].value is None  # 1 expert: a dense model
    f = fork("--num-attention-heads 32 --num-key-value-heads 8")
    assert f["model.num_query_groups"].value == 8 and f["model.group_query_attention"].value is True
    assert fork("--num-attention-heads 32")["model.num_query_groups"].value == 32


def test_fork_checkpoint_activations_is_full_recompute():
    f = fork("--checkpoint-activations --checkpoint-num-layers 2")
    assert f["recompute.granularity"].value == "full" and f["recompute.num_layers"].value == 2
    assert fork("--checkpoint-activations")["recompute.num_layers"].value == 1
    assert fork("--fp8-hybrid --bf16")["fp8"].value == "hybrid"


def test_fork_virtual_stages_floor_divide_and_keep_one():
    line = "--num-layers 32 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 8"
    assert fork(line)["parallel.vpp"].value == 1


def test_bigscience_fork():
    f = fork(
        "--checkpoint-activations --pp-partition-method type:transformer|embedding --sequence-parallel", "bigscience"
    )
    assert f["recompute.granularity"].value == "full"
    assert f["megatron_deepspeed.pp_partition_method"].value == "type:transformer|embedding"
    sp = f["parallel.sequence_parallel"]  # not a flag of this fork: argparse rejects it, it sets nothing
    assert sp.value is False and "has no --sequence-parallel" in sp.note


def test_bad_values_never_raise():
    f = facts(
        "--tensor-model-parallel-size two --num-layers 1.5 --pipeline-model-parallel-layout Ex "
        "--num-experts --hidden-size"
    )
    assert f["parallel.tp"].value is None and f["parallel.tp"].origin == "unresolved"
    assert f["model.num_layers"].value is None and f["parallel.vpp"].value is None
    assert f["model.num_experts"].value is None and f["model.hidden_size"].value is None


def test_presence_flags_behind_an_unknown_part():
    # rules test these for absence (PL111, PL306): one that may be in $EXTRA is not absent, but unresolved
    f = facts("--overlap-param-gather $EXTRA")
    assert f["overlap_param_gather"].value is True
    assert (f["overlap_grad_reduce"].value, f["overlap_grad_reduce"].origin) == (None, "unresolved")
    assert "overlap_grad_reduce" not in facts("--overlap-param-gather")


def test_template_slots_in_a_data_blend_are_values_not_options():
    from plint.reading.shell.placeholders import slot_reason

    source = SourceFile("args.sh", "x")

    def slot(text):
        return Word((Piece(None, source.span(0, 1), "unresolved", reason=slot_reason(text)),), source.span(0, 1))

    blend = [
        Word.of("--data-path"),
        Word.of("0.2"),
        slot("<PATH TO THE FIRST DATASET>"),
        Word.of("0.8"),
        slot("<PATH TO THE SECOND DATASET>"),
        Word.of("--bf16"),
    ]
    args = parse_trainer_args(blend, load_flag_catalog("0.19"))
    assert args.opaque == [] and [u.option for u in args.uses] == ["--data-path", "--bf16"]
    assert len(args.uses[0].values) == 4
    # an unknown that is not a slot may hold further options: the list ends there, as before
    args = parse("--data-path 0.2 $BLEND --bf16")
    assert [w.display() for w in args.opaque] == ["${BLEND}"]


@pytest.mark.parametrize(
    ("strategy", "sharding"),
    [("no_shard", "none"), ("optim", "optimizer"), ("optim_grads", "gradients"), ("optim_grads_params", "parameters")],
)
def test_megatron_fsdp_strategy_is_the_layouts_sharding(strategy, sharding):
    # megatron/training/arguments.py: --data-parallel-sharding-strategy choices, read only with
    # --use-megatron-fsdp (Megatron-FSDP's user guide: DDP, ZeRO-1, ZeRO-2, ZeRO-3)
    text = f"--use-megatron-fsdp --data-parallel-sharding-strategy {strategy}"
    got = facts(text)["parallel.sharding"]
    assert (got.value, got.origin, got.span.col) == (sharding, "literal", text.index(strategy) + 1)


def test_megatron_fsdp_without_a_strategy_takes_the_default_full_shard():
    got = facts("--use-megatron-fsdp")
    assert got["parallel.sharding"].value == "parameters"  # default='optim_grads_params'
    assert got["megatron_fsdp.strategy"].origin == "default"
    # 0.13 spells the switch --use-custom-fsdp, and its strategy defaulted to no_shard (core_v0.13.0's
    # megatron/training/arguments.py; the flag table holds the release's own default)
    assert facts("--use-custom-fsdp", release="0.13")["parallel.sharding"].value == "none"


def test_no_megatron_fsdp_leaves_sharding_to_the_optimizer():
    # the strategy alone does nothing without --use-megatron-fsdp: the layout derives it from the optimizer
    assert "parallel.sharding" not in facts("--data-parallel-sharding-strategy optim")
