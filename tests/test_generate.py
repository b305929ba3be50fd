"""`plint generate`: every template renders launches that check without errors and read back, through
plint's own parser, to the layout they were generated from (a hypothesis test over layouts)."""

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plint.cli.commands import cli
from plint.planning.generate import GenerateError, render, spec_from_layout, verify

SMALL_MODEL = {"num_layers": 24, "hidden_size": 2048, "ffn_hidden_size": 5632, "num_attention_heads": 16,
               "num_query_groups": 4, "seq_length": 4096, "vocab_size": 32000}
ARCHITECTURE = {"swiglu": True, "normalization": "RMSNorm", "untie_embeddings": True, "add_bias_linear": False,
                "position_embedding": "rope", "tokenizer": "meta-llama/Llama-2-7b-hf"}


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
    return {"model": SMALL_MODEL, "architecture": ARCHITECTURE,
            "cluster": {"nnodes": nodes, "gpus_per_node": gpus_per_node, "gpu": "h100-sxm"},
            "parallel": {"tp": tp, "pp": pp, "vpp": vpp, "cp": cp, "ep": 1, "etp": tp, "dp": dp,
                         "sequence_parallel": tp > 1, "distributed_optimizer": True, "zero_stage": None,
                         "sharding": sharding},
            "batch": {"micro": micro, "global": micro * dp * steps},
            "recompute": {"granularity": recompute, "method": "uniform" if recompute == "full" else None,
                          "num_layers": 1 if recompute == "full" else None},
            "precision": "bf16"}


@pytest.mark.parametrize("target", ["torchrun", "slurm", "deepspeed"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_launch_reads_back_to_its_layout(target, data):
    layout = data.draw(layouts(target))
    spec = spec_from_layout(layout, "roundtrip")
    files = render(spec, target)
    assert verify(files, target, spec) == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("target, main", [("torchrun", "launch.sh"), ("slurm", "launch.sbatch"),
                                          ("deepspeed", "launch.sh")])
def test_cli_plans_writes_and_the_result_checks(target, main, tmp_path):
    out = CliRunner().invoke(cli, ["generate", "--target", target, "--model", "llama3-8b", "--nodes", "2",
                                   "--global-batch", "256", "-o", str(tmp_path)])
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
    again = CliRunner().invoke(cli, ["generate", "--target", target, "--model", "llama3-8b", "--nodes", "2",
                                     "--global-batch", "256", "-o", str(tmp_path)])
    assert again.exit_code == 2 and "use --force to overwrite" in again.output


def test_generate_from_a_plan_candidate(tmp_path):
    plan = CliRunner().invoke(cli, ["plan", "--model", "llama3-70b", "--nodes", "8", "--global-batch", "512",
                                    "--top", "3", "--format", "json"])
    (tmp_path / "plan.json").write_text(plan.output)
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm", "--plan", str(tmp_path / "plan.json"),
                                   "--candidate", "2", "--stdout"])
    assert out.exit_code == 0, out.output
    second = json.loads(plan.output)["candidates"][1]["parallel"]
    assert f"--tensor-model-parallel-size {second['tp']}\n" in out.output
    assert f"--pipeline-model-parallel-size {second['pp']}\n" in out.output
    assert "#SBATCH --nodes=8\n" in out.output


def test_generate_from_a_checked_layout(tmp_path):
    checked = CliRunner().invoke(cli, ["check", "--format", "json",
                                       "fixtures/launches/megatron-arrays-llama3-8b/launch.sh"])
    (tmp_path / "check.json").write_text(checked.output)
    out = CliRunner().invoke(cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "check.json"),
                                   "--stdout"])
    assert out.exit_code == 0, out.output
    assert "--tensor-model-parallel-size 2\n" in out.output and "--global-batch-size 128\n" in out.output
    # the architecture comes along: the Llama-3 8B of the fixture, not a GPT of the same size
    for flag in ("--swiglu", "--normalization RMSNorm", "--untie-embeddings-and-output-weights",
                 "--disable-bias-linear", "--position-embedding-type rope", "--num-query-groups 8"):
        assert flag in out.output, flag


def test_generate_refuses_a_layout_without_architecture(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps({"model": SMALL_MODEL, "cluster": {"nnodes": 1, "gpus_per_node": 8},
                                                 "parallel": {"tp": 1}, "batch": {"micro": 1, "global": 8}}))
    out = CliRunner().invoke(cli, ["generate", "--target", "torchrun", "--layout", str(tmp_path / "l.json"), "--stdout"])
    assert out.exit_code == 2 and "no `architecture`" in out.output


def test_generate_refuses_an_approximate_preset():
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm", "--model", "deepseek-v3", "--nodes", "128",
                                   "--global-batch", "4096", "--stdout"])
    assert out.exit_code == 2 and "multi-latent attention" in out.output


def test_deepspeed_target_refuses_context_parallelism():
    layout = {"model": SMALL_MODEL, "architecture": ARCHITECTURE, "cluster": {"nnodes": 1, "gpus_per_node": 8},
              "parallel": {"tp": 2, "pp": 1, "cp": 2}, "batch": {"micro": 1, "global": 16}}
    with pytest.raises(GenerateError, match="does not take context parallelism"):
        render(spec_from_layout(layout, "x"), "deepspeed")


def test_usage_errors():
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm"])
    assert out.exit_code == 2 and "give exactly one of --plan, --layout, or --model" in out.output
    out = CliRunner().invoke(cli, ["generate", "--target", "slurm", "--model", "llama3-8b"])
    assert out.exit_code == 2 and "--nodes is required" in out.output


def _sharded_layout(pp: int = 1) -> dict:
    return {"model": SMALL_MODEL, "architecture": ARCHITECTURE,
            "cluster": {"nnodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm"},
            "parallel": {"tp": 1, "pp": pp, "cp": 1, "ep": 1, "dp": 16 // pp, "sequence_parallel": False,
                         "distributed_optimizer": True, "sharding": "parameters"},
            "batch": {"micro": 1, "global": 64}, "recompute": {"granularity": None}, "precision": "bf16"}


def test_full_shard_is_written_as_megatron_fsdp_for_torchrun():
    files = render(spec_from_layout(_sharded_layout(), "fsdp"), "torchrun")
    text = files["launch.sh"]
    # megatron/training/arguments.py: the strategy's name, the fsdp_dtensor checkpoint format it asserts, and
    # no CUDA_DEVICE_MAX_CONNECTIONS=1 (it asserts that too)
    for flag in ("--use-megatron-fsdp\n", "--data-parallel-sharding-strategy optim_grads_params\n",
                 "--ckpt-format fsdp_dtensor\n", "--use-distributed-optimizer\n"):
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


GPT2_MEDIUM = {"num_layers": 24, "hidden_size": 1024, "num_attention_heads": 16, "num_query_groups": 4,
               "ffn_hidden_size": 4096, "seq_length": 1024, "vocab_size": 50257}


def _generate_checked(model: dict, target: str, tmp_path) -> tuple[str, dict]:
    """(launch text, the layout `plint check` reads from it) for `generate --model-file`."""
    import yaml

    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    out = CliRunner().invoke(cli, ["generate", "--target", target, "--model-file", str(tmp_path / "model.yaml"),
                                   "--nodes", "1", "-o", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    main = tmp_path / "out" / {"torchrun": "launch.sh", "slurm": "launch.sbatch", "deepspeed": "launch.sh"}[target]
    checked = CliRunner().invoke(cli, ["check", "--format", "json", str(main)],
                                 env={"DATA_PATH": "/data/x", "TOKENIZER_MODEL": "/tok"})
    return main.read_text(), json.loads(checked.output)["files"][0]["layout"]


@pytest.mark.parametrize("target", ["torchrun", "slurm", "deepspeed"])
def test_the_model_files_shape_reaches_the_launch_unchanged(target, tmp_path):
    # a GPT-2 vocabulary (50,257) with grouped-query attention: every value as the file gives it, none of
    # plint's stand-ins (32,000 for an unknown vocabulary, heads for the key-value heads, 4h for the MLP)
    text, layout = _generate_checked(GPT2_MEDIUM, target, tmp_path)
    for flag in ("--vocab-size 50257\n", "--num-attention-heads 16\n", "--ffn-hidden-size 4096\n",
                 "--seq-length 1024\n"):
        assert flag in text, flag
    assert ("--num-key-value-heads 4\n" if target == "deepspeed" else "--num-query-groups 4\n") in text
    assert "--vocab-size 50257 is the input's" in text and "must hold 50,257 tokens" in text
    assert "Megatron's default" not in text  # the file leaves nothing to a default
    model = layout["model"]
    assert (model["vocab_size"], model["num_attention_heads"], model["num_query_groups"], model["ffn_hidden_size"],
            model["seq_length"]) == (50257, 16, 4, 4096, 1024)
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
    swiglu = ModelInput(num_layers=2, hidden_size=4096, num_attention_heads=32, seq_length=4096, vocab_size=32000,
                        swiglu=True)
    assert swiglu.ffn_width() == 10880
    assert swiglu.replace(swiglu=False).ffn_width() == 16384 and swiglu.replace(ffn_hidden_size=14336).ffn_width() == 14336
