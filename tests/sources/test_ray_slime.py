"""`ray job submit -- python train.py`: Ray's job driver, its ranks from the trainer's actor flags and its environment
from --runtime-env-json (plint.reading.sources.launch_ray); a Megatron framework found through the entry script's
imports two modules deep, and what slime sets over Megatron's parser (plint.reading.sources.megatron_frameworks)."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

MODEL = (
    "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 1"
)
LAUNCH = (
    'RUNTIME_ENV_JSON=\'{"env_vars": {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_X": "\'$UNSET\'"}}\'\n'
    'ray job submit --address="http://127.0.0.1:8265" --runtime-env-json="${RUNTIME_ENV_JSON}" -- python3 train.py '
    "--actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate --tensor-model-parallel-size 2 "
    f"--rollout-batch-size 32 --n-samples-per-prompt 8 --num-steps-per-rollout 4 {MODEL}\n"
)


def _tree(tmp_path, framework: str = "slime") -> None:
    (tmp_path / "train.py").write_text(f"from {framework}.utils.arguments import parse_args\n\nparse_args()\n")
    utils = tmp_path / framework / "utils"
    backend = tmp_path / framework / "backends" / "megatron_utils"
    utils.mkdir(parents=True)
    backend.mkdir(parents=True)
    (utils / "arguments.py").write_text(
        f"def parse_args():\n    from {framework}.backends.megatron_utils.arguments import megatron_parse_args\n"
    )
    (backend / "arguments.py").write_text("from megatron.training.arguments import parse_args\n")


def _checked(tmp_path, text: str = LAUNCH):
    (tmp_path / "run.sh").write_text(text)
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    return file_json(result)["layout"], {d.code for d in result.diagnostics}


def test_slime_through_ray_is_megatron_with_what_slime_sets(tmp_path):
    # fail before: no launch (ray job submit was no launcher plint knew)
    _tree(tmp_path)
    layout, codes = _checked(tmp_path)
    assert (layout["launcher"], layout["trainer"], layout["cluster"]["world_size"]) == ("ray", "megatron", 8)
    assert (layout["parallel"]["tp"], layout["parallel"]["dp"]) == (2, 4)
    # slime turns on the distributed optimizer and bf16 itself; its global batch is 32 x 8 // 4
    assert (layout["precision"], layout["parallel"]["distributed_optimizer"]) == ("bf16", True)
    assert layout["batch"]["global"] == 64
    # CUDA_DEVICE_MAX_CONNECTIONS comes from the job's runtime env: no PL601; no PL305 either
    assert not codes & {"PL601", "PL305"}


def test_another_framework_keeps_megatrons_defaults(tmp_path):
    _tree(tmp_path, "myrl")
    layout, codes = _checked(tmp_path)
    assert layout["trainer"] == "megatron"  # megatron imported two modules deep by a script named train.py
    assert (layout["precision"], layout["parallel"]["distributed_optimizer"]) == ("fp32", False)
    assert layout["batch"]["global"] == 4  # Megatron's own default, micro x dp: slime's rule is slime's
    assert "PL601" not in codes


def test_without_the_runtime_env_the_variable_is_missing(tmp_path):
    _tree(tmp_path)
    _, codes = _checked(tmp_path, LAUNCH.replace('--runtime-env-json="${RUNTIME_ENV_JSON}" ', ""))
    assert "PL601" in codes


def test_miles_turns_the_distributed_optimizer_on_for_adam_only(tmp_path):
    _tree(tmp_path, "miles")
    layout, codes = _checked(tmp_path)
    assert (layout["precision"], layout["parallel"]["distributed_optimizer"]) == ("bf16", True)
    assert layout["batch"]["global"] == 64
    layout, _ = _checked(tmp_path, LAUNCH.replace("--colocate", "--colocate --optimizer muon"))
    assert layout["parallel"]["distributed_optimizer"] is False


def test_a_switch_the_parser_does_not_know_does_not_swallow_an_unknown_word(tmp_path):
    # miles: `--colocate ${MODEL_ARGS[@]}` with the model's flags printed by a Python helper; was PL105 (ep 4 with
    # "no --num-experts": the unknown word read as --colocate's value, the list as known in full)
    _tree(tmp_path)
    text = (
        'MODEL_ARGS_LINE="$(python3 model_args.py qwen3-30B-A3B)" || exit 1\nread -ra MODEL_ARGS <<< "$MODEL_ARGS_LINE"\n'
        "ray job submit -- python3 train.py --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate "
        "${MODEL_ARGS[@]} --expert-model-parallel-size 4 --micro-batch-size 1\n"
    )
    layout, codes = _checked(tmp_path, text)
    assert "PL105" not in codes
    assert layout["model"]["num_experts"] is None
    assert layout["provenance"]["model.num_experts"]["origin"] == "unresolved"


def test_a_ray_job_after_an_exit_is_pl005(tmp_path):
    # was silent: `ray job submit` was no launch word for PL005
    _tree(tmp_path)
    text = 'if [ -z "${BASE_FOLDER:-}" ]; then\n  exit 1\nfi\n' + LAUNCH
    _, codes = _checked(tmp_path, text)
    assert "PL005" in codes
