"""Which trainer a launch runs, and why."""

import pytest

from plint.catalog.flags import load_flag_catalog, releases
from plint.reading.shell.model import Piece, Word
from plint.reading.sources.trainer import BIGSCIENCE_FLAGS, FORK_FLAGS, detect_trainer, fork_release


def ws(text: str) -> list[Word]:
    return [Word.of(t) for t in text.split()]


def trainer_of(program: str, launcher: str, args: list[Word], launch) -> object:
    """detect_trainer on `program` started by `launcher` from the launch file `launch`, its entry script read."""
    from plint.reading.sources.entry_script import read_entry_script

    return detect_trainer(Word.of(program), launcher, list(args), False, read_entry_script(program, False, str(launch)))


@pytest.mark.parametrize(
    "entrypoint, launcher, args, trainer",
    [
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
    ],
)
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


# ---- any entry point: flags, the script's imports, the repository around it ----------------------------
@pytest.mark.parametrize(
    "entrypoint, launcher, args, trainer",
    [
        (
            "examples/multimodal/train.py",
            "torchrun",
            "--tensor-model-parallel-size 2 --num-layers 4 --train-iters 9",
            "megatron",
        ),
        ("finetune_gpt.py", "torchrun", "--micro-batch-size 1 --global-batch-size 8 --train-samples 80", "megatron"),
        (
            "tasks/main.py",
            "torchrun",
            "--task MNLI --pipeline-model-parallel-size 2 --hidden-size 64 --epochs 3",
            "megatron",
        ),
        # --flag=value spellings: argparse's _parse_optional splits them at the `=`
        (
            "/ws/patch/pretrain_qwen2_moe.py",
            "torchrun",
            "--tensor-model-parallel-size=2 --seq-length=4096 --train-iters=9",
            "megatron",
        ),
        (
            "finetune_t0_non_causal_decoder.py",
            "deepspeed",
            "--tensor-model-parallel-size 1 --num-layers 2 --train-samples 9",
            "megatron-deepspeed",
        ),
        (
            "my_train.py",
            "torchrun",
            "--micro-batch-size=1 --global-batch-size=8 --train-iters=9 --deepspeed",
            "megatron-deepspeed",
        ),
        # a text generation server or an evaluation harness takes the same flags but trains nothing
        (
            "tools/run_text_generation_server.py",
            "torchrun",
            "--tensor-model-parallel-size 8 --num-layers 80",
            "unknown",
        ),
        # one flag, or only shape flags, or an HF script: not enough
        ("run.py", "torchrun", "--tensor-model-parallel-size 2 --train-iters 9", "unknown"),
        ("train.py", "torchrun", "--num-layers 2 --hidden-size 64 --seq-length 128 --train-iters 9", "unknown"),
        (
            "train.py",
            "torchrun",
            "--micro-batch-size 1 --num-layers 2 --train-iters 9 --per_device_train_batch_size 8",
            "unknown",
        ),
    ],
)
def test_any_entry_point_by_its_flags(entrypoint, launcher, args, trainer):
    v = detect_trainer(Word.of(entrypoint), launcher, ws(args))
    assert v.value == trainer and v.note


def test_the_entry_script_and_its_repository_decide(tmp_path):
    from plint.reading.sources.entry_script import read_entry_script

    (tmp_path / ".git").mkdir()
    (tmp_path / "scripts").mkdir()
    launch = tmp_path / "scripts" / "run.sh"
    launch.write_text("torchrun x.py\n")
    (tmp_path / "sft.py").write_text("import os\nfrom megatron.training import pretrain\npretrain(None, None)\n")
    (tmp_path / "hf.py").write_text("import torch, transformers as tf\n")
    (tmp_path / "mds.py").write_text("from megatron import get_args\nimport deepspeed\n\n    pretrain(x)\n")
    (tmp_path / "serve.py").write_text("from megatron.core.inference import engines\n")
    two = ws("--tensor-model-parallel-size 2 --num-layers 2")

    def trainer(program, args=(), module=False):
        script = read_entry_script(program, module, str(launch))
        return detect_trainer(Word.of(program), "torchrun", list(args), module, script)

    # run from the repository root: the script is found in a folder above the launch file
    assert trainer("sft.py").value == "megatron" and "sft.py (it imports megatron)" in trainer("sft.py").note
    assert trainer("mds.py").value == "megatron-deepspeed" and "imports deepspeed" in trainer("mds.py").note
    serve = trainer("serve.py", two)
    assert serve.value == "unknown" and "does not train" in serve.note
    assert trainer("serve.py", ws("--num-layers 2 --train-iters 5")).value == "megatron"
    hf = trainer("hf.py", two)
    assert hf.value == "unknown" and "does not import megatron" in hf.note  # the script is there to read
    # a script plint cannot find: the repository around the launch (a Megatron-DeepSpeed checkout) decides
    (tmp_path / "megatron" / "model").mkdir(parents=True)
    (tmp_path / "megatron" / "model" / "gpt_model.py").write_text("class GPTModelPipe:\n    pass\n")
    fork = trainer("elsewhere/pretrain_llama.py", ws("--num-layers 2 --train-iters 5"))
    assert fork.value == "megatron-deepspeed" and "GPTModelPipe" in fork.note
    (tmp_path / "megatron" / "model" / "gpt_model.py").write_text("class GPTModel:\n    pass\n")
    assert trainer("elsewhere/pretrain_llama.py", ws("--num-layers 2 --train-iters 5")).value == "megatron"
    assert trainer("elsewhere/pretrain_llama.py").value == "unknown"  # no Megatron flag at all
    # nothing outside the checked tree is read
    outside = tmp_path.parent / f"{tmp_path.name}_outside.py"
    outside.write_text("from megatron.training import pretrain\n")
    assert read_entry_script(str(outside), False, str(launch)).path is None
    (tmp_path / "linked.py").symlink_to(outside)  # nor through a link that leaves it
    assert read_entry_script("linked.py", False, str(launch)).path is None
    (tmp_path / "blob.py").write_bytes(b"\x00\xff" * 100 + b"\nimport megatron\n")  # bytes never raise
    assert read_entry_script("blob.py", False, str(launch)).imports_megatron


def test_an_entry_script_importing_megatron_through_a_module_of_the_tree(tmp_path):
    """MindSpeed-LLM's posttrain_gpt.py imports only mindspeed_llm, whose posttrain launcher imports
    megatron.training: a framework over Megatron, read one module deep as Python finds it from the script's
    folder. A module that does not import megatron, or lies outside the tree, decides nothing."""

    (tmp_path / ".git").mkdir()
    launcher = tmp_path / "framework" / "tasks" / "launcher.py"
    launcher.parent.mkdir(parents=True)
    (tmp_path / "framework" / "__init__.py").write_text("")
    launcher.write_text("from megatron.training import get_args\n")
    (tmp_path / "framework" / "utils.py").write_text("import os\n")
    (tmp_path / "posttrain.py").write_text("from framework import utils\nfrom framework.tasks.launcher import Auto\n")
    (tmp_path / "other.py").write_text("from framework import utils\n")
    launch = tmp_path / "run.sh"
    launch.write_text("torchrun x.py\n")
    args = ws("--tensor-model-parallel-size 4 --num-layers 80 --train-iters 2000")

    def trainer(program):
        return trainer_of(program, "torchrun", args, launch)

    wrapped = trainer("posttrain.py")
    assert wrapped.value == "megatron"
    assert "posttrain.py (it imports megatron through framework/tasks/launcher.py)" in wrapped.note
    assert trainer("other.py").value == "unknown"


def test_megatron_imported_through_a_package_s_relative_import(tmp_path):
    """An older slime (molumolua/RLVE): train.py imports slime.utils.arguments, whose parse_args imports
    slime.backends.megatron_utils inside the function, whose __init__ imports `.arguments`, which imports
    megatron.training: three imports deep, the last relative to its package. `from .. import` climbs a package."""

    (tmp_path / ".git").mkdir()
    backend = tmp_path / "fw" / "backends" / "mu"
    backend.mkdir(parents=True)
    (tmp_path / "fw" / "utils").mkdir()
    (tmp_path / "fw" / "utils" / "arguments.py").write_text(
        "import os\n\ndef parse_args():\n    from fw.backends.mu import parse_args as p\n    return p()\n"
    )
    (backend / "__init__.py").write_text(
        "import logging\nfrom .actor import Actor\nfrom .arguments import (\n  p,\n)\n"
    )
    (backend / "actor.py").write_text("import ray\n")
    (backend / "arguments.py").write_text("from megatron.training.arguments import parse_args\n")
    (tmp_path / "fw" / "backends" / "other.py").write_text("from ..backends.mu import p\n")
    (tmp_path / "train.py").write_text("import ray\nfrom fw.utils.arguments import parse_args\n")
    (tmp_path / "climb.py").write_text("from fw.backends.other import x\n")
    launch = tmp_path / "run.sh"
    launch.write_text("torchrun train.py\n")
    args = ws("--tensor-model-parallel-size 2 --num-layers 36 --train-iters 10")
    found = trainer_of("train.py", "torchrun", args, launch)
    assert found.value == "megatron"
    assert "it imports megatron through fw/backends/mu/arguments.py" in found.note
    climbed = trainer_of("climb.py", "torchrun", args, launch)  # fw/backends/other.py, `..` from fw/backends: fw
    assert climbed.value == "megatron" and "through fw/backends/mu/arguments.py" in climbed.note
    # LLaMA-Factory's src/train.py reaches its optional Megatron-Bridge backend the same way, launched with a YAML
    # of its own and none of Megatron's flags: Megatron is one backend of several, not the trainer
    assert trainer_of("train.py", "torchrun", ws("examples/llama3_lora_sft.yaml"), launch).value == "unknown"


def test_a_module_outside_the_tree_is_not_read_for_megatron(tmp_path):
    """The module an entry script imports is read only inside the checked tree: a link out of it is not followed."""
    from plint.reading.sources.entry_script import read_entry_script

    outside = tmp_path / "outside" / "framework"
    outside.mkdir(parents=True)
    (outside / "launcher.py").write_text("from megatron.training import get_args\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "framework").symlink_to(outside, target_is_directory=True)
    (repo / "posttrain.py").write_text("from framework.launcher import Auto\n")
    launch = repo / "run.sh"
    launch.write_text("torchrun posttrain.py\n")
    script = read_entry_script("posttrain.py", False, str(launch))
    assert script is not None and script.megatron_module is None and not script.imports_megatron


def test_a_checkpoint_tool_taking_training_flags_is_no_training_run(tmp_path):
    """IEIT-Yuan/Yuan-2.0's split_tp_partitions_51B.sh runs tools/split_tp_partitions.py with Megatron's training
    flags (--train-iters, pp 16) under plain python: the script imports megatron, saves the re-partitioned
    checkpoint with torch.save and never calls a training loop. A script that trains and saves is still one."""

    (tmp_path / ".git").mkdir()
    (tmp_path / "split.py").write_text("from megatron.checkpointing import load_checkpoint\ntorch.save(sd, name)\n")
    (tmp_path / "train.py").write_text("from megatron.training import pretrain\npretrain(a, b)\nsave_checkpoint(1)\n")
    launch = tmp_path / "run.sh"
    launch.write_text("python x.py\n")
    args = ws("--pipeline-model-parallel-size 16 --num-layers 42 --train-iters 1")

    def trainer(program):
        return trainer_of(program, "python", args, launch)

    tool = trainer("split.py")
    assert tool.value == "unknown" and "a checkpoint, evaluation or generation tool" in tool.note
    assert trainer("train.py").value == "megatron"
    # a converter that starts Megatron as training does meets its start-up checks (Megatron-DeepSpeed's
    # tools/hf2megads_weight_converter.py: initialize_megatron, then save_checkpoint)
    (tmp_path / "convert.py").write_text(
        "from megatron.initialize import initialize_megatron\ninitialize_megatron()\nsave_checkpoint(1, m)\n"
    )
    assert trainer("convert.py").value == "megatron"


def test_megatron_flag_sets_agree_with_the_catalog():
    from plint.reading.sources.trainer import MEGATRON_OWN_FLAGS, MEGATRON_SHAPE_FLAGS

    names = [r for r in releases()]
    for name in names + ["megatron-deepspeed", "bigscience"]:
        catalog = load_flag_catalog(name)
        for flag in MEGATRON_OWN_FLAGS | MEGATRON_SHAPE_FLAGS | {"--train-iters", "--train-samples"}:
            assert catalog.lookup(flag) is not None, (name, flag)


def test_an_entry_script_wrapping_its_model_in_fsdp_or_ddp_is_data_parallel(tmp_path):
    """A plain PyTorch script that shards or replicates its model with FSDP2/FSDP/DDP trains the whole model
    on every rank: dp is the world (corpus 4: awslabs' FSDP job); one that also splits the model with
    DTensor tensor parallelism is not plain data parallelism."""
    from plint.reading.sources.entry_script import read_entry_script

    (tmp_path / ".git").mkdir()
    launch = tmp_path / "job.sbatch"
    launch.write_text("torchrun train.py\n")
    (tmp_path / "fsdp2.py").write_text(
        "import torch\nfrom torch.distributed.fsdp import fully_shard\n\nfor block in net.blocks:\n"
        "    fully_shard(block, reshard_after_forward=True)\nfully_shard(net)\n"
    )
    (tmp_path / "ddp.py").write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(m)\n"
    )
    (tmp_path / "tp.py").write_text(
        "import torch\nfrom torch.distributed.tensor.parallel import parallelize_module, ColwiseParallel\n"
        "parallelize_module(m, mesh['tp'], {'w1': ColwiseParallel()})\nfully_shard(m, mesh=mesh['dp'])\n"
    )
    (tmp_path / "helper_tp.py").write_text(
        "import torch\nfrom torch.distributed.fsdp import fully_shard\nparallelize_llama(m, world_mesh, parallel_dims)\n"
        "fully_shard(m)\n"
    )
    (tmp_path / "plain.py").write_text("import torch\nmodel = Net().cuda()\n")
    (tmp_path / "notorch.py").write_text("def FSDP(x):\n    return x\nFSDP(1)\n")

    def data_parallel(name: str) -> bool:
        script = read_entry_script(name, False, str(launch))
        return script is not None and script.torch_data_parallel

    assert data_parallel("fsdp2.py") and data_parallel("ddp.py")
    assert not data_parallel("tp.py") and not data_parallel("helper_tp.py")
    assert not data_parallel("plain.py") and not data_parallel("notorch.py")


def test_a_torch_fsdp_launch_reads_dp_as_the_world(tmp_path):
    from plint.reading.read import read_path

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.distributed.fsdp import fully_shard\nfully_shard(model)\n"
    )
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --nproc_per_node=8 --nnodes=2 train.py --epochs 1\n")
    (layout,) = read_path(job).layouts
    assert layout.value("parallel.dp") == 16
    assert layout.get("parallel.dp").origin == "derived"


def test_the_deepspeed_launcher_over_a_megatron_lm_checkout_starts_megatron(tmp_path):
    """A Megatron-LM fork with no DeepSpeed in it, launched by `deepspeed --hostfile ...` as a process launcher
    (a 2025 research fork's examples/ds_run.sh): the trainer is Megatron-LM (fail before: megatron-deepspeed,
    whose PipelineModule would split any layer count, so PL103 was quiet on 3 layers over pp 2)."""
    from plint.reading.sources.entry_script import read_entry_script

    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    (tmp_path / "megatron" / "training").mkdir(parents=True)
    (tmp_path / "megatron" / "training" / "arguments.py").write_text("import argparse\n")
    launch = tmp_path / "examples" / "ds_run.sh"
    launch.write_text("deepspeed x.py\n")
    args = ws("--tensor-model-parallel-size 2 --num-layers 3 --train-iters 5")

    def trainer(program, flags):
        script = read_entry_script(program, False, str(launch))
        return detect_trainer(Word.of(program), "deepspeed", flags, False, script)

    plain = trainer("/elsewhere/Megatron-LM/pretrain_llama.py", args)
    assert plain.value == "megatron" and "the deepspeed launcher only starts its processes" in plain.note
    with_flag = trainer("/elsewhere/Megatron-LM/pretrain_llama.py", args + ws("--deepspeed"))
    assert with_flag.value == "megatron-deepspeed"
    assert detect_trainer(Word.of("pretrain_gpt.py"), "deepspeed", args, False, None).value == "megatron-deepspeed"


def test_an_entry_script_run_after_cd_into_the_author_s_checkout(tmp_path):
    """GAIR-NLP/LIMI: `cd /inspire/.../sunjie/slime` (the author's checkout, outside the tree) and then
    `python3 train_async.py`: the script is looked for where the cd moved, by the tails of that folder inside the
    tree (its slime/ copy), as a sourced file's absolute path is."""
    from plint.checking.check import check_paths
    from plint.report.json_report import file_json

    (tmp_path / ".git").mkdir()
    (tmp_path / "slime").mkdir()
    (tmp_path / "slime" / "train_async.py").write_text("from megatron.training.arguments import parse_args\n")
    (tmp_path / "scripts").mkdir()
    launch = tmp_path / "scripts" / "train.sh"
    flags = "--tensor-model-parallel-size 2 --num-layers 36 --rollout-batch-size 8"  # no training length: the script decides
    launch.write_text(f"cd /home/alice/project/slime\ntorchrun --nproc_per_node 8 train_async.py {flags}\n")
    (result,) = check_paths([launch], root=str(tmp_path))
    assert file_json(result)["layout"]["trainer"] == "megatron"
    launch.write_text(f"cd /home/alice/project/other\ntorchrun --nproc_per_node 8 train_async.py {flags}\n")
    (result,) = check_paths([launch], root=str(tmp_path))
    assert file_json(result)["layout"]["trainer"] != "megatron"  # no tail of that folder holds the script
