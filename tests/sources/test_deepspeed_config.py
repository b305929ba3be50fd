"""DeepSpeed configs: facts with positions, "auto", unknown shell values, and the batch triple as DeepSpeed derives it."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plint.reading.shell.model import MappedText, Piece, unknown
from plint.source import SourceFile
from plint.reading.sources.deepspeed_config import derive_batch, read_deepspeed_config
from plint.values import Value


def config(text: str):
    return read_deepspeed_config(MappedText.from_source(SourceFile("ds.json", text)), "ds.json")


def dp(n):
    return Value(n, None, "derived", "world size 8")


def triple(batch):
    return batch.micro.value, batch.global_.value, batch.grad_accum.value


# ---- facts and where they were written ------------------------------------------------------------
def test_facts_point_at_their_values_in_the_file():
    cfg = config(
        '{\n  "train_batch_size": 64,\n  "zero_optimization": {\n    "stage": 2,\n'
        '    "offload_optimizer": {"device": "cpu"}\n  },\n  "bf16": {"enabled": true},\n'
        '  "gradient_clipping": 0.5\n}\n'
    )
    assert not cfg.problems
    tbs = cfg.train_batch_size
    assert (tbs.value, tbs.origin, tbs.span.line, tbs.span.col) == (64, "literal", 2, 23)
    assert (cfg.zero_stage.value, cfg.zero_stage.span.line, cfg.zero_stage.span.col) == (2, 4, 14)
    assert (cfg.offload_optimizer.value, cfg.offload_optimizer.span.line) == ("cpu", 5)
    assert cfg.bf16_enabled.value is True and cfg.bf16_enabled.span.line == 7
    assert cfg.fp16_enabled.value is False and cfg.fp16_enabled.origin == "default"
    assert cfg.gradient_clipping.value == 0.5
    assert cfg.offload_param.value is None and cfg.offload_param.origin == "default"
    assert cfg.value("zero_optimization", "offload_optimizer", "device").span.line == 5
    assert cfg.value("zero_optimization", "reduce_bucket_size", absent=5e8).origin == "default"


def test_defaults_when_the_config_says_nothing():
    cfg = config('{"train_micro_batch_size_per_gpu": 4}')
    assert cfg.train_batch_size.value is None and cfg.train_batch_size.origin == "default"
    assert (cfg.zero_stage.value, cfg.zero_stage.origin) == (0, "default")
    assert (cfg.gradient_clipping.value, cfg.gradient_clipping.origin) == (1.0, "default")
    assert "0.19.3" in cfg.gradient_clipping.note
    assert (cfg.overlap_comm.value, cfg.pipeline_stages.value, cfg.optimizer_type.value) == (False, "auto", None)
    assert config('{"zero_optimization": {"stage": 3}}').overlap_comm.value is True  # on at stage 3 only


def test_how_deepspeed_reads_odd_spellings():
    assert config('{"bfloat16": {"enabled": true}}').bf16_enabled.value is True  # the old name
    assert config('{"bf16": {"enabled": false}, "bfloat16": {"enabled": true}}').bf16_enabled.value is False
    assert config('{"bf16": null, "bfloat16": {"enabled": true}}').bf16_enabled.value is True
    legacy = config('{"zero_optimization": true}').zero_stage
    assert legacy.value == 1 and "legacy" in legacy.note
    assert config('{"zero_optimization": {"stage": "2"}}').zero_stage.value == 2
    assert config('{"train_batch_size": 64.0}').train_batch_size.value == 64  # hjson reads 64.0 as 64
    assert config('{"train_batch_size": null}').train_batch_size.origin == "default"  # null is absent
    old = config('{"zero_optimization": {"stage": 2, "cpu_offload": true}}').offload_optimizer
    assert old.value == "cpu" and "deprecated" in old.note
    assert config('{"zero_optimization": {"offload_param": {}}}').offload_param.value == "none"
    assert config('{"sequence_parallel_size": 4}').sequence_parallel_size.value == 4


def test_auto_stays_the_string_auto():
    cfg = config(
        '{"fp16": {"enabled": "auto"}, "zero_optimization": {"stage": "auto", '
        '"offload_param": {"device": "auto"}}, "train_batch_size": "auto", "gradient_clipping": "auto"}'
    )
    for v in (cfg.fp16_enabled, cfg.zero_stage, cfg.offload_param, cfg.train_batch_size, cfg.gradient_clipping):
        assert v.value == "auto" and v.origin == "literal"
    assert "integration" in cfg.fp16_enabled.note and "stage 0" in cfg.zero_stage.note


def test_positions_and_unknowns_in_a_heredoc():
    """`cat <<EOF` on line 10 of a script; $GBS is set on line 2, $GAS is unknown."""
    script = SourceFile(
        "run.sh",
        "#!/bin/bash\nGBS=32\n" + "# ...\n" * 7 + 'cat <<EOF > ds.json\n{"train_batch_size": $GBS,\n'
        ' "gradient_accumulation_steps": $GAS,\n "zero_optimization": {"stage": 3}}\nEOF\n',
    )
    data = script.data

    def literal(text: str) -> Piece:
        at = data.index(text.encode())
        return Piece(text, script.span(at, at + len(text.encode())), "literal", True, source=script)

    gbs = data.index(b"32")
    gas = data.index(b"$GAS")
    text = MappedText(
        [
            literal('{"train_batch_size": '),
            Piece("32", script.span(gbs, gbs + 2), "literal", True, source=script),
            literal(',\n "gradient_accumulation_steps": '),
            unknown(
                "$GAS is not set in the script and has no default",
                "GAS",
                script.span(gas, gas + 4),
                alternatives=("2", "4"),
            ),
            literal(',\n "zero_optimization": {"stage": 3}}\n'),
        ]
    )
    cfg = read_deepspeed_config(text, "ds.json")
    assert not cfg.problems
    assert (cfg.train_batch_size.value, cfg.train_batch_size.span.line, cfg.train_batch_size.span.col) == (32, 2, 5)
    assert (cfg.zero_stage.value, cfg.zero_stage.span.path, cfg.zero_stage.span.line) == (3, "run.sh", 13)
    assert cfg.zero_stage.span.col == 33
    gas_value = cfg.gradient_accumulation_steps
    assert gas_value.value is None and gas_value.origin == "unresolved"
    assert "$GAS is not set" in gas_value.note and "could be 2, 4" in gas_value.note
    assert (gas_value.span.line, gas_value.span.col) == (12, 33)
    batch = derive_batch(cfg, dp(8))  # micro = tbs // dp // gas needs GAS
    assert batch.global_.value == 32 and batch.micro.value is None and "gradient_accumulation_steps" in batch.micro.note


def test_a_default_from_the_script_says_the_environment_may_change_it():
    script = SourceFile("run.sh", "MBS=${MBS:-4}\n")
    at = script.data.index(b"4")
    text = MappedText(
        [
            Piece('{"train_micro_batch_size_per_gpu": '),
            Piece("4", script.span(at, at + 1), "literal", True, source=script, default_of="MBS"),
            Piece("}"),
        ]
    )
    mbs = read_deepspeed_config(text, "ds.json").train_micro_batch_size_per_gpu
    assert mbs.value == 4 and "${MBS:-...}" in mbs.note and mbs.span.col == 12


def test_broken_json_is_reported_and_what_was_read_is_kept():
    cfg = config('{"train_batch_size": 64,\n "zero_optimization": {"stage": ZERO_STAGE}}')
    (problem,) = cfg.problems
    assert problem.kind == "syntax" and (problem.span.line, problem.span.col) == (2, 33)
    assert cfg.train_batch_size.value == 64
    assert config("[1, 2]").problems[0].message.endswith("must be a JSON object")


# ---- the batch triple -----------------------------------------------------------------------------
TBS, MBS, GAS = "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"


def batch_config(tbs=None, mbs=None, gas=None):
    parts = [f'"{k}": {v}' for k, v in ((TBS, tbs), (MBS, mbs), (GAS, gas)) if v is not None]
    return config("{" + ", ".join(parts) + "}")


@pytest.mark.parametrize(
    "given, world, expected, derived_note",
    [
        ((64, 2, 4), 8, (2, 64, 4), None),  # all three: only checked
        ((64, 2, None), 8, (2, 64, 4), "gradient_accumulation_steps = 64 // 2 // 8"),
        ((64, None, 2), 8, (4, 64, 2), "train_micro_batch_size_per_gpu = 64 // 8 // 2"),
        ((None, 2, 4), 8, (2, 64, 4), "train_batch_size = 2 * 4 * 8 (micro * grad_accum * dp"),
        ((64, None, None), 8, (8, 64, 1), "train_micro_batch_size_per_gpu = 64 // 8"),
        ((None, 3, None), 8, (3, 24, 1), "train_batch_size = 3 * 8"),
    ],
)
def test_the_six_ways_deepspeed_completes_the_triple(given, world, expected, derived_note):
    batch = derive_batch(batch_config(*given), dp(world))
    assert triple(batch) == expected and not batch.problems
    derived = [v for v in (batch.micro, batch.global_, batch.grad_accum) if v.origin == "derived"]
    if derived_note is None:
        assert not derived
    else:
        assert any(derived_note in v.note for v in derived)
        assert all(v.span is not None and v.span.line == 1 for v in derived)  # at the key they come from


@pytest.mark.parametrize(
    "given, expected, refusal",
    [
        (
            (60, 2, None),
            (2, 60, 3),
            "AssertionError: Check batch related parameters. train_batch_size is not equal to "
            "micro_batch_per_gpu * gradient_acc_step * world_size 60 != 2 * 3 * 8",
        ),
        ((8, 2, None), (2, 8, 0), "AssertionError: Gradient accumulation steps: 0 has to be greater than 0"),
        ((16, None, 4), (0, 16, 4), "AssertionError: Micro batch size per gpu: 0 has to be greater than 0"),
        ((64, 2, 2), (2, 64, 2), "64 != 2 * 2 * 8"),
        ((0, 2, 1), (2, 0, 1), "AssertionError: Train batch size: 0 has to be greater than 0"),
        (
            (None, None, 4),
            (None, None, 4),
            "AssertionError: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
        ),
        ((None, None, None), (None, None, None), "Either train_batch_size or train_micro_batch_size_per_gpu"),
        (('"64"', 2, None), (2, None, None), "TypeError: unsupported operand type(s) for //: 'str' and 'int'"),
        (('"64"', 2, 4), (2, None, 4), "TypeError: '>' not supported between instances of 'str' and 'int'"),
    ],
)
def test_what_deepspeed_refuses_at_start_up(given, expected, refusal):
    batch = derive_batch(batch_config(*given), dp(8))
    assert triple(batch) == expected
    (problem,) = batch.problems
    assert problem.kind == "deepspeed" and refusal in problem.message and problem.message.startswith("ds.json: ")


def test_the_triple_holds_numbers_only():
    batch = derive_batch(batch_config('"64"', 2, '"auto"'), dp(8))
    assert batch.global_.value is None and batch.global_.span.col == 22
    batch = derive_batch(batch_config(None, None, '"auto"'), dp(8))
    assert batch.grad_accum.value is None and "not a number" in batch.grad_accum.note


def test_an_unknown_dp_leaves_the_derived_values_unresolved_naming_dp():
    world = Value(None, None, "unresolved", "$SLURM_NNODES is not set")
    batch = derive_batch(batch_config(64, 2), world)
    assert (batch.micro.value, batch.global_.value) == (2, 64)
    assert batch.grad_accum.value is None and batch.grad_accum.origin == "unresolved"
    assert "data-parallel size dp" in batch.grad_accum.note and "$SLURM_NNODES" in batch.grad_accum.note
    full = derive_batch(batch_config(64, 2, 4), world)  # nothing to derive; equality unchecked
    assert triple(full) == (2, 64, 4) and not full.problems
    refused = derive_batch(batch_config(0, 2, 4), world)  # refused whatever dp is
    assert "Train batch size: 0" in refused.problems[0].message
    assert derive_batch(batch_config(64, 2), None).grad_accum.value is None


@pytest.mark.parametrize("given", [(64, None, None), (None, 2, None)])
def test_one_batch_size_alone_sets_no_accumulation_whatever_dp_is(given):
    """argonne-lcf/dl_scaling's configs give only train_batch_size: DeepSpeed sets gradient_accumulation_steps to 1
    before it divides by the world (runtime/config.py _set_batch_related_parameters); the other size needs dp."""
    batch = derive_batch(batch_config(*given), None)
    assert batch.grad_accum.value == 1 and batch.grad_accum.origin == "derived"
    assert "DeepSpeed's default when only" in batch.grad_accum.note
    other = batch.micro if given[0] is not None else batch.global_
    assert other.value is None and "needs the data-parallel size dp" in other.note


def test_auto_batch_values_are_left_to_the_integration():
    batch = derive_batch(batch_config('"auto"', '"auto"', 4), dp(8))
    assert batch.global_.value is None and batch.micro.value is None and batch.grad_accum.value == 4
    assert "integration" in batch.global_.note and "HF Trainer" in batch.micro.note
    assert not batch.problems
    partly = derive_batch(batch_config(None, '"auto"'), dp(8))  # train_batch_size waits for the filled micro
    assert partly.global_.value is None and "auto" in partly.global_.note


def test_unknown_shell_values_leave_dependents_unresolved():
    text = MappedText(
        [
            Piece('{"train_batch_size": '),
            unknown("$GBS is unknown", "GBS"),
            Piece(', "train_micro_batch_size_per_gpu": 2}'),
        ]
    )
    batch = derive_batch(read_deepspeed_config(text, "ds.json"), dp(8))
    assert batch.micro.value == 2 and batch.global_.value is None and "$GBS is unknown" in batch.global_.note
    assert batch.grad_accum.value is None and "train_batch_size" in batch.grad_accum.note


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.none(), st.integers(-2, 300)),
    st.one_of(st.none(), st.integers(-1, 40)),
    st.one_of(st.none(), st.integers(-1, 40)),
    st.integers(1, 64),
)
def test_agrees_with_the_installed_deepspeed(tbs, mbs, gas, world):
    """The same triple and the same refusal as DeepSpeed's own DeepSpeedConfig methods."""
    ds_config = pytest.importorskip("deepspeed.runtime.config")
    from types import SimpleNamespace

    theirs = SimpleNamespace(
        train_batch_size=tbs, train_micro_batch_size_per_gpu=mbs, gradient_accumulation_steps=gas, world_size=world
    )
    refusal = None
    try:
        ds_config.DeepSpeedConfig._set_batch_related_parameters(theirs)
        ds_config.DeepSpeedConfig._batch_assertion(theirs)
    except (AssertionError, ZeroDivisionError) as exc:
        refusal = f"{type(exc).__name__}: {exc}"
    batch = derive_batch(batch_config(tbs, mbs, gas), dp(world))
    assert [p.message.split("start-up: ", 1)[1] for p in batch.problems] == ([refusal] if refusal else [])
    if refusal is None or refusal.startswith("AssertionError: Check") or "has to be greater" in refusal:
        assert triple(batch) == (
            theirs.train_micro_batch_size_per_gpu,
            theirs.train_batch_size,
            theirs.gradient_accumulation_steps,
        )
