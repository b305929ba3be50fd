"""OpenRLHF's trainers (plint.reading.sources.openrlhf): DeepSpeed under the trainer's own arguments, in the underscored
spelling of releases before v0.10.4 and the dotted one after, launched by deepspeed, torchrun or a Ray job."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json


def _layout(tmp_path, text: str, files: dict[str, str] | None = None) -> dict:
    for name, body in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "train.sh").write_text(text)
    (result,) = check_paths([tmp_path / "train.sh"], root=str(tmp_path))
    layout = file_json(result)["layout"]
    assert layout is not None
    return layout


def test_underscored_arguments_give_zero_ring_batch_precision_and_recompute(tmp_path):
    # fail before: trainer deepspeed by its launcher, but ZeRO, micro and global unknown, dp unknown (the ring size)
    layout = _layout(
        tmp_path,
        "deepspeed --module openrlhf.cli.train_sft --pretrain meta-llama/Llama-3.1-8B --zero_stage 3 "
        "--micro_train_batch_size 2 --train_batch_size 64 --ring_attn_size 2 --bf16 --gradient_checkpointing\n",
    )
    assert layout["trainer"] == "deepspeed"
    assert (layout["parallel"]["zero_stage"], layout["parallel"]["cp"], layout["parallel"]["dp"]) == (3, 2, 4)
    assert (layout["batch"]["micro"], layout["batch"]["grad_accum"], layout["batch"]["global"]) == (2, 8, 64)
    assert layout["precision"] == "bf16" and layout["recompute"]["granularity"] == "full"
    assert "DeepspeedStrategy" in layout["provenance"]["parallel.cp"]["note"]


def test_dotted_arguments_and_their_defaults(tmp_path):
    """v0.10.4 on: --ds.tensor_parallel_size is DeepSpeed AutoTP (dp = world / tp); no --ds.zero_stage is stage 2,
    no --ds.param_dtype bf16, both OpenRLHF's defaults."""
    layout = _layout(
        tmp_path,
        "torchrun --nproc_per_node 8 -m openrlhf.cli.train_sft --train.micro_batch_size 1 --train.batch_size 16 "
        "--ds.tensor_parallel_size 2 --model.gradient_checkpointing_enable\n",
    )
    assert (layout["parallel"]["tp"], layout["parallel"]["dp"], layout["batch"]["grad_accum"]) == (2, 4, 4)
    assert layout["parallel"]["zero_stage"] == 2 and layout["provenance"]["parallel.zero_stage"]["origin"] == "default"
    assert layout["precision"] == "bf16" and layout["provenance"]["precision"]["origin"] == "default"
    assert layout["recompute"]["granularity"] == "full"


def test_the_global_batch_defaults_to_128_and_an_unknown_argument_keeps_every_default_out(tmp_path):
    layout = _layout(tmp_path, "deepspeed --module openrlhf.cli.train_dpo --micro_train_batch_size 4\n")
    assert (layout["batch"]["global"], layout["batch"]["grad_accum"], layout["parallel"]["zero_stage"]) == (128, 4, 2)
    gap = _layout(tmp_path, "deepspeed --module openrlhf.cli.train_dpo --micro_train_batch_size 4 $EXTRA\n")
    assert gap["parallel"]["zero_stage"] is None and gap["batch"]["global"] is None


def test_a_ray_job_sizes_the_actor_and_a_copy_in_the_tree_is_recognised(tmp_path):
    """astOwOlfo/swe_bench_rl: `ray job submit -- python -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1
    --actor_num_gpus_per_node 8`; ZetangForward/MyRLHF: `deepspeed cli/train_sft.py` inside its copy of OpenRLHF."""
    ray = _layout(
        tmp_path,
        "ray job submit --address=http://127.0.0.1:8265 -- python3 -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1 "
        "--actor_num_gpus_per_node 8 --micro_train_batch_size 1 --train_batch_size 8 --zero_stage 3\n",
    )
    assert (ray["launcher"], ray["cluster"]["world_size"], ray["parallel"]["dp"]) == ("ray", 8, 8)
    assert (ray["batch"]["grad_accum"], ray["parallel"]["zero_stage"]) == (1, 3)
    dotted = _layout(
        tmp_path,
        "ray job submit -- python3 -m openrlhf.cli.train_ppo_ray --actor.num_nodes 2 --actor.num_gpus_per_node 8 "
        "--train.micro_batch_size 2 --train.batch_size 128 --ds.ring_attn_size 4\n",
    )
    assert (dotted["cluster"]["world_size"], dotted["parallel"]["cp"], dotted["batch"]["grad_accum"]) == (16, 4, 16)
    copy = _layout(
        tmp_path,
        "deepspeed --num_gpus 4 cli/train_sft.py --micro_train_batch_size 1 --train_batch_size 16\n",
        {"cli/train_sft.py": "from openrlhf.utils import get_strategy\n"},
    )
    assert (copy["trainer"], copy["batch"]["grad_accum"]) == ("deepspeed", 4)
    other = _layout(
        tmp_path,
        "deepspeed --num_gpus 4 cli/train_sft.py --micro_train_batch_size 1\n",
        {"cli/train_sft.py": "import deepspeed\n"},
    )
    assert other["batch"]["micro"] is None  # not OpenRLHF: its flags are the script's own
