"""`plint generate`: every template renders launches that check without errors and read back, through
plint's own parser, to the layout they were generated from (a hypothesis test over layouts)."""

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from fixture_paths import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plint.cli.commands import cli
from plint.planning.generate import GenerateError, render, spec_from_layout, verify

SMALL_MODEL = {
    "num_layers": 24,
    "hidden_size": 2048,
    "ffn_hidden_size": 5632,
    "num_attention_heads": 16,
    "num_query_groups": 4,
    "seq_length": 4096,
    "vocab_size": 32000,
}
ARCHITECTURE = {
    "swiglu": True,
    "normalization": "RMSNorm",
    "untie_embeddings": True,
    "add_bias_linear": False,
    "position_embedding": "rope",
    "tokenizer": "meta-llama/Llama-2-7b-hf",
}


@st.composite
def layouts(draw, target):
    tp = draw(st.sampled_from([1, 2, 4]))
    pp = draw(st.sampled_from([1, 2, 3, 4]))
    cp = 1 if target == "deepspeed" else draw(st.sampled_from([1, 2]))
    nodes = draw(st.sampled_from([1, 2, 4]))
    gpus_per_node = 8
    world = nodes * gpus_per_node
    if world % (tp * pp * cp):
        pp = 1
    dp = world // (tp * pp * cp)
    micro = draw(st.sampled_from([1, 2]))
    steps = draw(st.integers(min_value=max(1, pp if pp > 1 else 1), max_value=8))
    vpp = None
    if target != "deepspeed" and pp > 1 and (24 // pp) % 2 == 0 and draw(st.booleans()):
        vpp = 2
    recompute = draw(st.sampled_from([None, "selective", "full"]))
    # sharding beyond the optimizer without a pipeline (DeepSpeed's pipeline engine takes ZeRO-1 only)
    sharding = draw(st.sampled_from(["optimizer", "gradients", "parameters"])) if pp == 1 and dp > 1 else "optimizer"
    return {
        "model": SMALL_MODEL,
        "architecture": ARCHITECTURE,
        "cluster": {"nnodes": nodes, "gpus_per_node": gpus_per_node, "gpu": "h100-sxm"},
        "parallel": {
            "tp": tp,
            "pp": pp,
            "vpp": vpp,
            "cp": cp,
            "ep": 1,
            "etp": tp,
            "dp": dp,
            "sequence_parallel": tp > 1,
            "distributed_optimizer": True,
            "zero_stage": None,
            "sharding": sharding,
        },
        "batch": {"micro": micro, "global": micro * dp * steps},
        "recompute": {
            "granularity": recompute,
            "method": "uniform" if recompute == "full" else None,
            "num_layers": 1 if recompute == "full" else None,
        },
        "precision": "bf16",
    }


@pytest.mark.parametrize("target", ["torchrun", "slurm", "deepspeed"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_launch_reads_back_to_its_layout(target, data):
    layout = data.draw(layouts(target))
    spec = spec_from_layout(layout, "roundtrip")
    files = render(spec, target)
    assert verify(files, target, spec) == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    "target, main", [("torchrun", "launch.sh"), ("slurm", "launch.sbatch"), ("deepspeed", "launch.sh")]
)
def test_cli_plans_writes_and_the_result_checks(target, main, tmp_path):
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            target,
            "--model",
            "llama3-8b",
            "--nodes",
            "2",
            "--global-batch",
            "256",
            "-o",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0, out.output
    assert f"wrote {tmp_path / main}" in out.output
    assert subprocess.run(["bash", "-n", str(tmp_path / main)]).returncode == 0
    assert (tmp_path / main).stat().st_mode & 0o111  # executable
    checked = CliRunner().invoke(cli, ["check", "--format", "json", str(tmp_path / main)])
    assert checked.exit_code == 0, checked.output
    doc = json.loads(checked.output)
    assert not [d for d in doc["files"][0]["diagnostics"] if d["severity"] == "error"]
    assert doc["files"][0]["layout"]["cluster"]["world_size"] == 16
    # a second run does not overwrite what is there
    again = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            target,
            "--model",
            "llama3-8b",
            "--nodes",
            "2",
            "--global-batch",
            "256",
            "-o",
            str(tmp_path),
        ],
    )
    assert again.exit_code == 2 and "use --force to overwrite" in again.output


def test_generate_from_a_plan_candidate(tmp_path):
    plan = CliRunner().invoke(
        cli,
        ["plan", "--model", "llama3-70b", "--nodes", "8", "--global-batch", "512", "--top", "3", "--format", "json"],
    )
    (tmp_path / "plan.json").write_text(plan.output)
    out = CliRunner().invoke(
        cli, ["generate", "--target", "slurm", "--plan", str(tmp_path / "plan.json"), "--candidate", "2", "--stdout"]
    )
    assert out.exit_code == 0, out.output
    second = json.loads(plan.output)["candidates"][1]["parallel"]
    assert f"--tensor-model-parallel-size {second['tp']}\n" in out.output
    assert f"--pipeline-model-parallel-size {second['pp']}\n" in out.output
    assert "#SBATCH --nodes=8\n" in out.output


def test_generate_from_a_checked_layout(tmp_path):
    checked = CliRunner().invoke(
        cli, ["check", "--format", "json", "fixtures/launches/megatron-arrays-llama3-8b/launch.sh"]
    )
    (tmp_path / "check.json").write_text(checked.output)
    out = CliRunner().invoke(
        cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "check.json"), "--stdout"]
    )
    assert out.exit_code == 0, out.output
    assert "--tensor-model-parallel-size 2\n" in out.output and "--global-batch-size 128\n" in out.output
    # the architecture comes along: the Llama-3 8B of the fixture, not a GPT of the same size
    for flag in (
        "--swiglu",
        "--normalization RMSNorm",
        "--untie-embeddings-and-output-weights",
        "--disable-bias-linear",
        "--position-embedding-type rope",
        "--num-query-groups 8",
    ):
        assert flag in out.output, flag


def test_generate_refuses_a_layout_without_architecture(tmp_path):
    (tmp_path / "l.json").write_text(
        json.dumps(
            {
                "model": SMALL_MODEL,
                "cluster": {"nnodes": 1, "gpus_per_node": 8},
                "parallel": {"tp": 1},
                "batch": {"micro": 1, "global": 8},
            }
        )
    )
    out = CliRunner().invoke(
        cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "l.json"), "--stdout"]
    )
    assert out.exit_code == 2 and "no `architecture`" in out.output


def test_generate_refuses_an_approximate_preset():
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "slurm",
            "--model",
            "deepseek-v3",
            "--nodes",
            "128",
            "--global-batch",
            "4096",
            "--stdout",
        ],
    )
    assert out.exit_code == 2 and "multi-latent attention" in out.output


def test_deepspeed_target_refuses_context_parallelism():
    layout = {
        "model": SMALL_MODEL,
        "architecture": ARCHITECTURE,
        "cluster": {"nnodes": 1, "gpus_per_node": 8},
        "parallel": {"tp": 2, "pp": 1, "cp": 2},
        "batch": {"micro": 1, "global": 16},
    }
    with pytest.raises(GenerateError, match="does not take context parallelism"):
        render(spec_from_layout(layout, "x"), "deepspeed")


def test_usage_errors():
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm"])
    assert out.exit_code == 2 and "give exactly one of --plan, --layout, or --model" in out.output
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm", "--model", "llama3-8b"])
    assert out.exit_code == 2 and "--nodes is required" in out.output


def _sharded_layout(pp: int = 1) -> dict:
    return {
        "model": SMALL_MODEL,
        "architecture": ARCHITECTURE,
        "cluster": {"nnodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "parallel": {
            "tp": 1,
            "pp": pp,
            "cp": 1,
            "ep": 1,
            "dp": 16 // pp,
            "sequence_parallel": False,
            "distributed_optimizer": True,
            "sharding": "parameters",
        },
        "batch": {"micro": 1, "global": 64},
        "recompute": {"granularity": None},
        "precision": "bf16",
    }


def test_full_shard_is_written_as_megatron_fsdp_for_torchrun():
    files = render(spec_from_layout(_sharded_layout(), "fsdp"), "torchrun")
    text = files["launch.sh"]
    # megatron/training/arguments.py: the strategy's name, the fsdp_dtensor checkpoint format it asserts, and
    # no CUDA_DEVICE_MAX_CONNECTIONS=1 (it asserts that too)
    for flag in (
        "--use-megatron-fsdp\n",
        "--data-parallel-sharding-strategy optim_grads_params\n",
        "--ckpt-format fsdp_dtensor\n",
        "--use-distributed-optimizer\n",
    ):
        assert flag in text, flag
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1" not in text
    assert verify(files, "torchrun", spec_from_layout(_sharded_layout(), "fsdp")) == []


def test_full_shard_is_zero3_for_the_deepspeed_target():
    files = render(spec_from_layout(_sharded_layout(), "zero3"), "deepspeed")
    assert json.loads(files["ds_config.json"])["zero_optimization"]["stage"] == 3
    assert "--zero-stage 3\n" in files["launch.sh"] and "--no-pipeline-parallel" in files["launch.sh"]
    assert verify(files, "deepspeed", spec_from_layout(_sharded_layout(), "zero3")) == []
    with pytest.raises(GenerateError, match="PL309"):  # ZeRO-3 beside DeepSpeed's pipeline engine
        render(spec_from_layout(_sharded_layout(pp=2), "zero3"), "deepspeed")


GPT2_MEDIUM = {
    "num_layers": 24,
    "hidden_size": 1024,
    "num_attention_heads": 16,
    "num_query_groups": 4,
    "ffn_hidden_size": 4096,
    "seq_length": 1024,
    "vocab_size": 50257,
    "norm_epsilon": 1.0e-5,
    "attention_dropout": 0.1,
    "hidden_dropout": 0.1,
}


def _generate_checked(model: dict, target: str, tmp_path) -> tuple[str, dict]:
    """(launch text, the layout `plint check` reads from it) for `generate --model-file`."""
    import yaml

    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            target,
            "--model-file",
            str(tmp_path / "model.yaml"),
            "--nodes",
            "1",
            "-o",
            str(tmp_path / "out"),
        ],
    )
    assert out.exit_code == 0, out.output
    main = tmp_path / "out" / {"torchrun": "launch.sh", "slurm": "launch.sbatch", "deepspeed": "launch.sh"}[target]
    checked = CliRunner().invoke(
        cli, ["check", "--format", "json", str(main)], env={"DATA_PATH": "/data/x", "TOKENIZER_MODEL": "/tok"}
    )
    return main.read_text(), json.loads(checked.output)["files"][0]["layout"]


@pytest.mark.parametrize("target", ["torchrun", "slurm", "deepspeed"])
def test_the_model_files_shape_reaches_the_launch_unchanged(target, tmp_path):
    # a GPT-2 vocabulary (50,257) with grouped-query attention: every value as the file gives it, none of
    # plint's stand-ins (32,000 for an unknown vocabulary, heads for the key-value heads, 4h for the MLP)
    text, layout = _generate_checked(GPT2_MEDIUM, target, tmp_path)
    for flag in (
        "--vocab-size 50257\n",
        "--num-attention-heads 16\n",
        "--ffn-hidden-size 4096\n",
        "--seq-length 1024\n",
    ):
        assert flag in text, flag
    assert ("--num-key-value-heads 4\n" if target == "deepspeed" else "--num-query-groups 4\n") in text
    assert "--vocab-size 50257 is the input's" in text and "must hold 50,257 tokens" in text
    assert "Megatron's default" not in text and "the default of" not in text  # the file leaves nothing to a default
    model = layout["model"]
    assert (
        model["vocab_size"],
        model["num_attention_heads"],
        model["num_query_groups"],
        model["ffn_hidden_size"],
        model["seq_length"],
    ) == (50257, 16, 4, 4096, 1024)
    assert layout["provenance"]["model.vocab_size"]["origin"] == "literal"


def test_what_the_model_file_leaves_out_is_a_default_said_to_be_one(tmp_path):
    # SwiGLU without --ffn-hidden-size: Megatron's validate_args takes int(4 x 1024 x 2/3 / 64) x 64 =
    # int(2730.67 / 64) x 64 = 42 x 64 = 2688; no key-value heads: one per attention head (16)
    model = {k: v for k, v in GPT2_MEDIUM.items() if k not in ("ffn_hidden_size", "num_query_groups")}
    text, layout = _generate_checked({**model, "swiglu": True}, "torchrun", tmp_path)
    assert "--ffn-hidden-size 2688\n" in text and "#   --ffn-hidden-size 2688: Megatron's default" in text
    assert "--num-query-groups" not in text.replace("no --num-query-groups", "")
    assert "#   no --num-query-groups: Megatron's default, each of the 16 heads" in text
    assert "--vocab-size 50257\n" in text  # what the file does say is kept
    assert (layout["model"]["ffn_hidden_size"], layout["model"]["num_query_groups"]) == (2688, 16)


def test_the_cost_model_takes_megatrons_swiglu_width_when_none_is_given():
    from plint.cost import ModelInput

    # 4 x 4096 x 2/3 = 10,922.67; / 64 = 170.67, down to 170; x 64 = 10,880 (Megatron's validate_args)
    swiglu = ModelInput(
        num_layers=2, hidden_size=4096, num_attention_heads=32, seq_length=4096, vocab_size=32000, swiglu=True
    )
    assert swiglu.ffn_width() == 10880
    assert (
        swiglu.replace(swiglu=False).ffn_width() == 16384 and swiglu.replace(ffn_hidden_size=14336).ffn_width() == 14336
    )


# ---- issue 29: `generate --model NAME` writes the model it names ----------------------------------------

# the published config.json's keys (or GPT-2's, for GPT-3) -> the preset's
CONFIG_TO_PRESET = {
    "num_hidden_layers": "num_layers",
    "hidden_size": "hidden_size",
    "intermediate_size": "ffn_hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_query_groups",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings",
    "rope_theta": "rotary_base",
    "rms_norm_eps": "norm_epsilon",
    "layer_norm_epsilon": "norm_epsilon",
    "attention_dropout": "attention_dropout",
    "attn_pdrop": "attention_dropout",
    "resid_pdrop": "hidden_dropout",
    "num_local_experts": "num_experts",
    "n_routed_experts": "num_experts",
    "num_experts_per_tok": "moe_topk",
}
# every preset names these; a rotary base where positions are rotary
TRAINING_SHAPE_KEYS = (
    "norm_epsilon",
    "attention_dropout",
    "hidden_dropout",
    "max_position_embeddings",
    "untie_embeddings",
    "vocab_size",
    "tokenizer",
)
# preset -> (nodes, global batch) that plan quickly to a layout each target can write
GENERATED = {
    "llama3-8b": (2, 256),
    "llama3-70b": (8, 512),
    "llama3-405b": (64, 512),
    "gpt3-175b": (64, 1536),
    "mixtral-8x7b": (8, 512),
}


def _published() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "tests" / "data" / "published_model_configs.yaml").read_text())


def _presets() -> dict:
    from plint.planning.plan import presets

    return presets()


def test_every_preset_has_a_published_config():
    assert set(_presets()) == set(_published())
    assert all(entry["source"] and entry["read_in"] for entry in _published().values())


@pytest.mark.parametrize("name", sorted(_presets()))
def test_each_preset_carries_its_published_config(name):
    preset, published = _presets()[name], _published()[name]
    for key in TRAINING_SHAPE_KEYS + (("rotary_base",) if preset.get("position_embedding") == "rope" else ()):
        assert preset.get(key) is not None, f"{name} does not name {key}"
    config = published["config"]
    for config_key, value in {**config, **published.get("implied", {})}.items():
        if config_key in ("tie_word_embeddings", "rope_scaling"):
            continue
        assert preset[CONFIG_TO_PRESET.get(config_key, config_key)] == value, (name, config_key)
    assert preset["untie_embeddings"] is (not config["tie_word_embeddings"])
    scaling = config.get("rope_scaling")
    if scaling:  # the config's rope_type is the preset's type
        assert {("type" if k == "rope_type" else k): v for k, v in scaling.items()} == preset["rope_scaling"]
    else:
        assert not preset.get("rope_scaling")
    assert preset["seq_length"] <= preset["max_position_embeddings"]


def _model_args(text: str) -> dict[str, str | None]:
    """MODEL_ARGS of a generated launch: flag -> its value (None for a switch)."""
    import re

    body = re.search(r"^MODEL_ARGS=\((.*?)^\)", text, re.S | re.M).group(1).split()
    args: dict[str, str | None] = {}
    for i, word in enumerate(body):
        if word.startswith("--"):
            following = body[i + 1] if i + 1 < len(body) else "--"
            args[word] = None if following.startswith("--") else following
    return args


def _flag_catalog(target: str):
    from plint.catalog.flags import latest_release, load_flag_catalog

    return load_flag_catalog(latest_release("megatron-deepspeed" if target == "deepspeed" else "megatron"))


def _generated(target: str, name: str) -> str:
    nodes, batch = GENERATED[name]
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            target,
            "--model",
            name,
            "--nodes",
            str(nodes),
            "--global-batch",
            str(batch),
            "--stdout",
        ],
    )
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize("target", ["torchrun", "slurm", "deepspeed"])
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_generated_launch_writes_every_value_of_the_preset(target, name):
    """Before issue 29 `--model llama3-70b` left out the rotary base (Megatron's 10,000 applied where Llama 3
    uses 500,000) and the zero dropouts. Every flag is the one the release in force defines (its catalog)."""
    preset = _presets()[name]
    if target == "deepspeed" and (preset.get("num_experts") or preset.get("rope_scaling")):
        return  # Megatron-DeepSpeed cannot express it: test_the_deepspeed_target_refuses_rope_scaling
    args = _model_args(_generated(target, name))
    catalog = _flag_catalog(target)
    assert [flag for flag in args if catalog.lookup(flag) is None] == []
    fork = target == "deepspeed"
    expected = {
        "--max-position-embeddings": preset["max_position_embeddings"],
        "--layernorm-epsilon" if fork else "--norm-epsilon": preset["norm_epsilon"],
        "--attention-dropout": preset["attention_dropout"],
        "--hidden-dropout": preset["hidden_dropout"],
        "--vocab-size": preset["vocab_size"],
    }
    if preset.get("rotary_base"):
        expected["--rotary-position-embeddings-theta" if fork else "--rotary-base"] = preset["rotary_base"]
    for flag, value in expected.items():
        assert args.get(flag) is not None and float(args[flag]) == value, (flag, args.get(flag), value)
    assert ("--untie-embeddings-and-output-weights" in args) is preset["untie_embeddings"]
    if preset.get("rope_scaling"):
        assert "--use-rope-scaling" in args and float(args["--rope-scaling-factor"]) == preset["rope_scaling"]["factor"]
    else:
        assert "--use-rope-scaling" not in args


def test_the_deepspeed_target_refuses_rope_scaling():
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "deepspeed",
            "--model",
            "llama3-405b",
            "--nodes",
            "64",
            "--global-batch",
            "512",
            "--stdout",
        ],
    )
    assert out.exit_code == 2 and "has no RoPE scaling flag" in out.output


def test_a_rope_scaling_megatron_cannot_express_is_refused(tmp_path):
    import yaml

    model = {**GPT2_MEDIUM, "position_embedding": "rope", "rope_scaling": {"type": "yarn", "factor": 40}}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    out = CliRunner().invoke(
        cli,
        ["generate", "--target", "torchrun", "--model-file", str(tmp_path / "model.yaml"), "--nodes", "1", "--stdout"],
    )
    assert out.exit_code == 2 and "Llama 3.1's" in out.output, out.output


def test_what_the_model_file_leaves_of_the_training_shape_is_named_with_the_releases_default(tmp_path):
    model = {k: v for k, v in GPT2_MEDIUM.items() if k not in ("norm_epsilon", "attention_dropout", "hidden_dropout")}
    text, _ = _generate_checked({**model, "position_embedding": "rope"}, "torchrun", tmp_path)
    for flag, default in (
        ("--rotary-base", "10000"),
        ("--norm-epsilon", "1e-05"),
        ("--attention-dropout", "0.1"),
        ("--hidden-dropout", "0.1"),
    ):
        assert f"#   no {flag}: the default of Megatron-LM 0.19, {default} (the input names none)" in text
        assert flag not in _model_args(text)


def test_a_sequence_beyond_the_published_positions_raises_the_position_table(tmp_path):
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "torchrun",
            "--model",
            "llama3-8b",
            "--nodes",
            "2",
            "--global-batch",
            "256",
            "--seq-length",
            "16384",
            "--stdout",
        ],
    )
    assert out.exit_code == 0, out.output
    assert _model_args(out.output)["--max-position-embeddings"] == "16384"  # Megatron asserts >= seq_length
    assert "--max-position-embeddings 16384: the sequence; the published model has 8,192 positions" in out.output


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_tokenizer_is_required_when_the_launch_runs(tmp_path):
    """The README promises `${TOKENIZER_MODEL:?...}`: before issue 29 a preset's tokenizer name was a silent
    default. Run with DATA_PATH but no TOKENIZER_MODEL, the script stops at that line, naming the preset's."""
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "torchrun",
            "--model",
            "llama3-8b",
            "--nodes",
            "1",
            "--global-batch",
            "128",
            "-o",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0, out.output
    done = subprocess.run(
        ["bash", str(tmp_path / "launch.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DATA_PATH": "/data/x"},
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert (
        "TOKENIZER_MODEL: set TOKENIZER_MODEL to the tokenizer of meta-llama/Meta-Llama-3-8B (128,256 tokens)"
        in done.stderr
    ), done.stderr


def test_a_tokenizer_name_a_shell_would_expand_is_not_written(tmp_path):
    text, _ = _generate_checked({**GPT2_MEDIUM, "tokenizer": "gpt2$(touch pwned)"}, "torchrun", tmp_path)
    assert "pwned" not in text
    assert (
        "TOKENIZER_MODEL=${TOKENIZER_MODEL:?set TOKENIZER_MODEL to a Hugging Face tokenizer name or path "
        "(50,257 tokens)}" in text
    )


def test_a_checked_launchs_training_shape_reaches_the_generated_launch(tmp_path):
    """`generate --layout` of the Llama 3 8B fixture keeps what it sets beyond the shape (layout.architecture:
    rotary base, RoPE scaling, dropouts) instead of writing Megatron's defaults (10,000 and 0.1)."""
    checked = CliRunner().invoke(
        cli, ["check", "--format", "json", "fixtures/launches/megatron-arrays-llama3-8b/launch.sh"]
    )
    (tmp_path / "check.json").write_text(checked.output)
    architecture = json.loads(checked.output)["files"][0]["layout"]["architecture"]
    assert (architecture["rotary_base"], architecture["rope_scaling"], architecture["hidden_dropout"]) == (
        500000,
        {"type": "llama3"},
        0.0,
    )
    out = CliRunner().invoke(
        cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "check.json"), "--stdout"]
    )
    assert out.exit_code == 0, out.output
    args = _model_args(out.output)
    assert args["--rotary-base"] == "500000" and "--use-rope-scaling" in args and "--rope-scaling-factor" not in args
    assert (args["--attention-dropout"], args["--hidden-dropout"]) == ("0.0", "0.0")
    assert "no --norm-epsilon: the default of Megatron-LM 0.19, 1e-05" in out.output  # the launch sets none


def test_the_deepspeed_target_names_the_forks_flags_and_defaults(tmp_path):
    model = {k: v for k, v in GPT2_MEDIUM.items() if k not in ("norm_epsilon", "attention_dropout", "hidden_dropout")}
    text, _ = _generate_checked({**model, "position_embedding": "rope"}, "deepspeed", tmp_path)
    for flag, default in (("--rotary-position-embeddings-theta", "10000"), ("--layernorm-epsilon", "1e-05")):
        assert f"#   no {flag}: the default of Megatron-DeepSpeed (deepspeedai), {default}" in text


def _checked_layout() -> dict:
    checked = CliRunner().invoke(
        cli, ["check", "--format", "json", "fixtures/launches/megatron-arrays-llama3-8b/launch.sh"]
    )
    return json.loads(checked.output)["files"][0]["layout"]


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("cluster", "gpu", "h100-sxm\ntouch pwned"),
        ("recompute", "method", "uniform $(touch pwned)"),
        ("parallel", "sharding", "optimizer;touch pwned"),
    ],
)
def test_a_layout_text_a_shell_would_run_is_refused(tmp_path, section, key, value):
    """`generate --layout` takes a JSON file, perhaps a pull request's: text from it that a shell would run
    (a newline ends the comment it is written into; $(...) and ; run commands) is refused, not written."""
    layout = _checked_layout()
    layout[section][key] = value
    (tmp_path / "l.json").write_text(json.dumps(layout))
    out = CliRunner().invoke(
        cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "l.json"), "-o", str(tmp_path / "out")]
    )
    assert out.exit_code == 2, out.output
    assert f"{section}.{key}" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("parallel", "tp", "2 $(id)"),
        ("batch", "micro", 1.5),
        ("parallel", "pp", True),
        ("batch", "global", "64"),
        ("model", "hidden_size", "4096"),
        ("architecture", "kv_channels", [128]),
    ],
)
def test_a_layout_count_that_is_not_a_whole_number_is_refused(tmp_path, section, key, value):
    layout = _checked_layout()
    layout[section][key] = value
    (tmp_path / "l.json").write_text(json.dumps(layout))
    out = CliRunner().invoke(
        cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "l.json"), "--stdout"]
    )
    assert out.exit_code == 2, out.output
    assert f"{section}.{key}" in out.output and "Traceback" not in out.output


def test_a_name_a_shell_would_run_is_refused(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps(_checked_layout()))
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "slurm",
            "--layout",
            str(tmp_path / "l.json"),
            "--name",
            "run\n#SBATCH --wrap=id",
            "--stdout",
        ],
    )
    assert out.exit_code == 2 and "name is" in out.output, out.output


def test_a_planned_pipeline_layout_is_written_and_checks_clean(tmp_path):
    """Issue 24: 61 layers do not divide over pp 2 x vpp 5; the plan's candidate spreads them with
    --pipeline-model-parallel-layout, the generated launch writes that flag (not --num-virtual-stages-per-
    pipeline-rank, which Megatron refuses beside it) and checks clean, the layout read back as vpp 5."""
    (tmp_path / "m.yaml").write_text(
        "model: {num_layers: 61, hidden_size: 4096, ffn_hidden_size: 11008, num_attention_heads: 32, "
        "seq_length: 4096, vocab_size: 32000, swiglu: true, normalization: RMSNorm, untie_embeddings: true, "
        "add_bias_linear: false, tokenizer: meta-llama/Llama-2-7b-hf}\n"
    )
    plan = CliRunner().invoke(
        cli,
        ["plan", "--model-file", str(tmp_path / "m.yaml"), "--nodes", "4", "--global-batch", "256", "--format", "json"],
    )
    assert plan.exit_code == 0, plan.output
    (tmp_path / "plan.json").write_text(plan.output)
    candidates = json.loads(plan.output)["candidates"]
    n, laid = next((n, c) for n, c in enumerate(candidates, 1) if (c.get("pipeline") or {}).get("layout"))
    out = CliRunner().invoke(
        cli,
        [
            "generate",
            "--target",
            "torchrun",
            "--plan",
            str(tmp_path / "plan.json"),
            "--candidate",
            str(n),
            "-o",
            str(tmp_path / "run"),
        ],
    )
    assert out.exit_code == 0, out.output
    text = (tmp_path / "run" / "launch.sh").read_text()
    assert f'--pipeline-model-parallel-layout "{laid["pipeline"]["layout"]}"' in text
    assert "--num-virtual-stages-per-pipeline-rank" not in text
    checked = CliRunner().invoke(cli, ["check", str(tmp_path / "run" / "launch.sh"), "--format", "json"])
    report = json.loads(checked.output)
    layout = report["files"][0]["layout"]
    assert layout["parallel"]["vpp"] == laid["parallel"]["vpp"]
    assert not any("not modelled" in n for n in layout["estimate"]["notes"])
    assert not [d for d in report["files"][0]["diagnostics"] if d["severity"] == "error"]


def test_a_pipeline_layout_a_shell_would_expand_is_refused():
    """The planned layout string is written inside double quotes: Megatron's grammar passes, $(...) does not."""
    from plint.planning.spec_values import SpecValueError, check_values

    check_values({"pipeline": {"layout": "E|(t|)*126L"}}, ("pipeline",))
    with pytest.raises(SpecValueError, match="pipeline.layout"):
        check_values({"pipeline": {"layout": "E|$(touch pwned)|L"}}, ("pipeline",))
