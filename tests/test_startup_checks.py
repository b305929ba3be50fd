"""Start-up checks of the trainers: the batch-size ramp and step schedule (PL102, PL113), a DeepSpeed
batch triple written for another world size (PL106), optimizer params the built optimizer refuses
(PL508, from schemas/deepspeed_optimizers.json)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from plint.checking.check import check_paths

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (
    "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
    "--max-position-embeddings 2048 --bf16"
)


def run(tmp_path, files: dict[str, str], main: str = "launch.sh") -> list[tuple[str, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / main])
    return [(d.code, d.message) for d in result.diagnostics]


def megatron(tmp_path, flags: str, release: str | None = "0.15", nodes: int = 2) -> list[tuple[str, str]]:
    """A Megatron-LM launch on nodes x 8 GPUs with TP 2, under a named release."""
    files = {
        "launch.sh": "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        f"torchrun --nnodes {nodes} --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
        f"--sequence-parallel {flags} {SHAPE}\n"
    }
    if release:
        files["pyproject.toml"] = f'[tool.plint]\nmegatron = "{release}"\n'
    return run(tmp_path, files)


def messages(found, code):
    return [m for c, m in found if c == code]


# ---- --rampup-batch-size (micro 2 x dp 8 = 16 in these launches) ---------------------------------------
def test_a_ramp_of_multiples_of_micro_times_dp_is_quiet(tmp_path):
    found = megatron(tmp_path, "--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size 16 16 5000000")
    assert messages(found, "PL102") == []


def test_a_ramp_that_starts_off_the_grid_stops_the_first_step(tmp_path):
    found = megatron(tmp_path, "--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size 8 8 5000000")
    (message,) = messages(found, "PL102")
    assert "batch size 8, 24, 40" in message and "micro-batch 2 * dp 8 = 16" in message
    assert "at the first step" in message and "multiples of 16" in message


def test_a_ramp_that_leaves_the_grid_midway_names_when(tmp_path):
    found = megatron(tmp_path, "--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size 16 24 5000000")
    (message,) = messages(found, "PL102")
    # 16 -> 256 in 10 increments of 24: 40 is reached after 1/10 of the 5,000,000 ramp-up samples
    assert "batch size 40, 88, 136, 184, 232 are not divisible" in message and "after about 500,000 samples" in message


@pytest.mark.parametrize(
    "ramp, words",
    [
        ("24 16 1000", "global - start = 256 - 24 = 232 is not divisible by the increment 16"),
        ("512 16 1000", "the start batch 512 is larger than the global batch 256"),
        ("256 16 1000", "ZeroDivisionError"),
        ("0 16 1000", "must be positive"),
    ],
)
def test_the_ramp_calculator_refuses_at_start_up(tmp_path, ramp, words):
    found = megatron(tmp_path, f"--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size {ramp}")
    (message,) = messages(found, "PL102")
    assert words in message and "start-up" in message


def test_decrease_batch_size_if_needed_rounds_instead_of_asserting(tmp_path):
    found = megatron(
        tmp_path,
        "--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size 8 8 5000000 --decrease-batch-size-if-needed",
    )
    assert messages(found, "PL102") == []


def test_releases_that_ignore_the_ramp_do_not_check_it(tmp_path):
    found = megatron(
        tmp_path, "--micro-batch-size 2 --global-batch-size 256 --rampup-batch-size 8 8 5000000", release="0.18"
    )
    assert messages(found, "PL102") == []
    assert any("--rampup-batch-size" in m for m in messages(found, "PL502"))


def test_a_global_batch_below_micro_times_dp_names_one_nearest_value(tmp_path):
    (message,) = messages(megatron(tmp_path, "--micro-batch-size 2 --global-batch-size 8"), "PL102")
    assert "global batch 8 is not divisible by micro-batch 2 * dp 8 = 16; nearest valid value: 16;" in message


def test_a_global_batch_between_multiples_names_both_neighbours(tmp_path):
    (message,) = messages(megatron(tmp_path, "--micro-batch-size 2 --global-batch-size 40"), "PL102")
    assert "nearest valid values: 32 or 48;" in message


# ---- --step-batch-size-schedule (Megatron-LM core 0.18 on) ---------------------------------------------
def test_schedule_with_global_batch_or_decrease_is_refused(tmp_path):
    found = megatron(
        tmp_path,
        "--micro-batch-size 2 --global-batch-size 256 --decrease-batch-size-if-needed "
        '--step-batch-size-schedule "0:128 1B:256"',
        release="0.19",
    )
    got = messages(found, "PL113")
    assert len(got) == 2
    assert "--global-batch-size 256: validate_args raises 'ValueError: Cannot specify both" in got[0]
    assert "--decrease-batch-size-if-needed" in got[1]


def test_schedule_alone_is_accepted_and_its_sizes_checked(tmp_path):
    found = megatron(
        tmp_path, '--micro-batch-size 2 --step-batch-size-schedule "0:128, 1.5B:200 3B:256"', release="0.19"
    )
    assert messages(found, "PL113") == []
    (message,) = messages(found, "PL102")
    assert "batch size 200 is not divisible by micro-batch 2 * dp 8 = 16" in message


def test_schedule_in_a_release_without_it_is_left_to_pl501(tmp_path):
    found = megatron(tmp_path, '--micro-batch-size 2 --global-batch-size 256 --step-batch-size-schedule "0:128"')
    assert messages(found, "PL113") == [] and any("--step-batch-size-schedule" in m for m in messages(found, "PL501"))


# ---- PL106: the DeepSpeed triple at another world size ---------------------------------------------------
def deepspeed(tmp_path, config: dict) -> list[tuple[str, str]]:
    return run(
        tmp_path,
        {
            "launch.sh": "deepspeed --hostfile hostfile train.py --deepspeed_config ds.json\n",
            "hostfile": "a slots=8\nb slots=8\n",
            "ds.json": json.dumps(config),
        },
    )


def test_a_triple_written_for_eight_gpus_says_so(tmp_path):
    found = deepspeed(
        tmp_path, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}
    )
    (message,) = messages(found, "PL106")
    assert "64 != micro 2 * grad_accum 4 * dp 16 = 128" in message
    assert "agrees only at dp 8 (8 GPUs)" in message
    assert "set train_batch_size 128 or gradient_accumulation_steps 2" in message


def test_a_triple_that_agrees_nowhere(tmp_path):
    found = deepspeed(
        tmp_path, {"train_batch_size": 60, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4}
    )
    (message,) = messages(found, "PL106")
    assert "agrees at no dp: train_batch_size is not a multiple of micro * grad_accum = 16" in message


def test_a_pair_names_the_nearest_batch_for_this_dp(tmp_path):
    found = deepspeed(tmp_path, {"train_batch_size": 48, "train_micro_batch_size_per_gpu": 2})
    (message,) = messages(found, "PL106")
    assert "train_batch_size / micro = 24 agrees with a dp that divides 24" in message
    assert "a multiple of micro * dp = 32 (nearest: 32 or 64)" in message


def test_a_triple_that_holds_is_quiet(tmp_path):
    found = deepspeed(
        tmp_path, {"train_batch_size": 128, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}
    )
    assert messages(found, "PL106") == []


# ---- PL508: optimizer params -------------------------------------------------------------------------------
def optimizer(tmp_path, section: dict, **top) -> list[str]:
    config = {"train_batch_size": 32, "optimizer": section, **top}
    return messages(run(tmp_path, {"ds.json": json.dumps(config)}, "ds.json"), "PL508")


def test_max_grad_norm_is_refused_under_any_type(tmp_path):
    for kind in ("Adam", "Lamb", "SGD", "MuAdam"):
        got = optimizer(tmp_path, {"type": kind, "params": {"lr": 1e-3, "max_grad_norm": 1.0}})
        assert any("max_grad_norm" in m and "ValueError" in m and "gradient_clipping" in m for m in got), kind


def test_lamb_takes_max_grad_norm_as_a_parameter_but_deepspeed_refuses_first(tmp_path):
    got = optimizer(tmp_path, {"type": "Lamb", "params": {"lr": 1e-3, "max_grad_norm": 1.0}})
    assert len(got) == 1  # the ValueError, not a second TypeError finding


def test_adam_builds_fused_adam_without_offload(tmp_path):
    got = optimizer(
        tmp_path,
        {
            "type": "Adam",
            "params": {"lr": 1e-3, "momentum": 0.9, "adam_w_mode": False, "torch_adam": False, "set_grad_none": True},
        },
    )
    (message,) = got
    assert "optimizer.params.momentum" in message and "builds FusedAdam" in message and "TypeError" in message


def test_offload_builds_cpu_adam_which_deepspeed_gives_adamw_mode(tmp_path):
    got = optimizer(
        tmp_path,
        {"type": "AdamW", "params": {"lr": 1e-3, "adamw_mode": True, "set_grad_none": True}},
        zero_optimization={"stage": 2, "offload_optimizer": {"device": "cpu"}},
    )
    assert any("passes adamw_mode to DeepSpeedCPUAdam itself" in m for m in got)
    assert any("params.set_grad_none" in m and "DeepSpeedCPUAdam" in m for m in got)


def test_torch_adam_builds_torch_adam(tmp_path):
    assert (
        optimizer(
            tmp_path, {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True, "fused": True, "foreach": False}}
        )
        == []
    )
    got = optimizer(tmp_path, {"type": "Adam", "params": {"torch_adam": True, "bias_correction": True}})
    assert len(got) == 1 and "builds Adam" in got[0]


def test_other_types_are_torch_optimizers_by_their_exact_name(tmp_path):
    (message,) = optimizer(tmp_path, {"type": "SGD", "params": {"lr": 0.1, "betas": [0.9, 0.99]}})
    assert "builds SGD" in message and "momentum" in message
    # was "OneBitLamb", which DeepSpeed builds (ONEBIT_LAMB_OPTIMIZER in DEEPSPEED_OPTIMIZERS, runtime/config.py;
    # engine.py imports runtime/fp16/onebit/lamb.py): a name in neither table is "OneBitSGD"
    (message,) = optimizer(tmp_path, {"type": "OneBitSGD", "params": {"lr": 1e-3}})
    assert "neither a DeepSpeed optimizer nor a class of torch.optim" in message
    (message,) = optimizer(tmp_path, {"type": "sgd", "params": {"lr": 0.1}})
    assert 'did you mean "SGD"' in message


def test_unread_constructors_and_megatron_deepspeed_are_left_alone(tmp_path):
    assert optimizer(tmp_path, {"type": "MuAdamW", "params": {"lr": 1e-3, "anything": 1}}) == []
    (tmp_path / "ds.json").write_text(
        json.dumps(
            {
                "train_batch_size": 32,
                "train_micro_batch_size_per_gpu": 4,
                "optimizer": {"type": "Adam", "params": {"momentum": 0.9}},
            }
        )
    )
    (tmp_path / "launch.sh").write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 4 --global-batch-size 32 "
        f"{SHAPE} --deepspeed --deepspeed_config ds.json\n"
    )
    (result,) = check_paths([tmp_path / "launch.sh"])
    assert result.reading.layouts[0].value("trainer") == "megatron-deepspeed"
    assert "PL508" not in [d.code for d in result.diagnostics]


# ---- the table's builder ------------------------------------------------------------------------------------
def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_optimizer_table", ROOT / "scripts" / "build_optimizer_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_constructor_keywords_are_read_from_source():
    source = (
        "class Opt(Base):\n    def __init__(self, params, lr=1e-3, *, foreach=None):\n        pass\n"
        "class Loose:\n    def __init__(self, params, **kwargs):\n        pass\n"
    )
    build = _builder()
    assert build.constructor(source, "Opt") == {"params": ["lr", "foreach"], "var_keyword": False}
    assert build.constructor(source, "Loose") == {"params": [], "var_keyword": True}
    assert build.constructor(source, "Missing") is None


def test_the_table_covers_every_built_in_type():
    table = json.loads((ROOT / "schemas" / "deepspeed_optimizers.json").read_text())
    # DEEPSPEED_OPTIMIZERS in deepspeed/runtime/config.py; the 1-bit types (onebitadam, onebitlamb,
    # zerooneadam) were missing, which made PL508 refuse "OneBitAdam" (issue 12: bing_bert 1-bit Adam)
    assert set(table["types"]) | set(table["unchecked"]) == {
        "adagrad",
        "adam",
        "adamw",
        "lamb",
        "muadam",
        "muadamw",
        "musgd",
        "lion",
        "muon",
        "onebitadam",
        "onebitlamb",
        "zerooneadam",
    }
    for kind in table["types"].values():
        assert all(c in table["classes"] for c in kind["builds"].values())
    assert "momentum" not in table["classes"]["deepspeed.ops.adam.fused_adam.FusedAdam"]["params"]


@pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None or importlib.util.find_spec("torch") is None,
    reason="needs DeepSpeed and torch installed",
)
def test_the_table_matches_the_installed_packages():
    build = _builder()
    table = build.build(build.package_dir("deepspeed", None), build.package_dir("torch", None))
    stored = json.loads((ROOT / "schemas" / "deepspeed_optimizers.json").read_text())
    if table["x-deepspeed-version"] != stored["x-deepspeed-version"]:
        pytest.skip("another DeepSpeed release is installed")
    assert table["types"] == stored["types"] and table["classes"] == stored["classes"]


# ---- the unsafe fixes, pinned on the fixtures they exist for -----------------------------------------------
def _fixed(name, tmp_path):
    import shutil

    from plint.fixing.fix import fix_paths

    work = tmp_path / name
    shutil.copytree(ROOT / "fixtures" / "launches" / name, work)
    fix_paths([work / "launch.sh"], unsafe=True)
    return work


def test_fix_moves_the_ramp_onto_the_grid(tmp_path):
    work = _fixed("wrong-rampup-micro", tmp_path)
    assert 'RAMPUP="32 32 5_000_000"' in (work / "launch.sh").read_text()


def test_fix_drops_the_global_batch_beside_a_schedule(tmp_path):
    text = (_fixed("wrong-step-schedule-global", tmp_path) / "launch.sh").read_text()
    assert "    --global-batch-size" not in text and '--step-batch-size-schedule "0:128 20B:256 80B:512"' in text


def test_fix_rewrites_the_json_for_the_launch(tmp_path):
    config = json.loads((_fixed("wrong-ds-json-other-world", tmp_path) / "ds_config.json").read_text())
    assert config["train_batch_size"] == 128 and config["gradient_accumulation_steps"] == 4
    assert config["optimizer"]["params"] == {"lr": 2e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}


# ---- PL111: an overlap flag whose requirement sits in an unknown part of the line ---------------------
def _overlap_launch(tmp_path, extra: str) -> list[str]:
    """Requirements in a variable set only when $DO / $SP (never set) say so, as real runner scripts do."""
    text = (
        '#!/bin/bash\nif [ "$DO" = true ]; then do_options="--use-distributed-optimizer"; fi\n'
        'if [ "$SP" = true ]; then sp_options="--sequence-parallel"; fi\n'
        "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
        f"--overlap-grad-reduce {extra} {SHAPE}\n"
    )
    return messages(run(tmp_path, {"launch.sh": text, "pyproject.toml": '[tool.plint]\nmegatron = "0.15"\n'}), "PL111")


def test_overlap_requirements_in_an_unknown_variable_are_not_errors(tmp_path):
    assert _overlap_launch(tmp_path, "--tp-comm-overlap --overlap-param-gather ${do_options} ${sp_options}") == []


def test_overlap_requirements_known_missing_are_errors(tmp_path):
    got = _overlap_launch(tmp_path, "--tp-comm-overlap --overlap-param-gather")
    assert sorted(got) == [
        "--overlap-param-gather requires --use-distributed-optimizer",
        "--tp-comm-overlap requires --sequence-parallel (and tensor parallelism > 1)",
    ]


@pytest.mark.parametrize(("release", "expected"), [("0.8", []), ("0.10", ["error"]), (None, ["warning"])])
def test_tp_comm_overlap_at_tp_1_with_sequence_parallel_written_depends_on_the_release(tmp_path, release, expected):
    """Kwai's ATC'24 baseline runs a January 2024 Megatron-LM with --tp-comm-overlap --sequence-parallel at tp 1: its
    validate_args asserts sequence parallelism before turning it off at tp 1 (passes); from 0.10 after (fails).
    Under an assumed release the rejection is a warning."""
    text = (
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --sequence-parallel "
        f"--tp-comm-overlap {SHAPE}\n"
    )
    files = {"launch.sh": text}
    if release:
        files["pyproject.toml"] = f'[tool.plint]\nmegatron = "{release}"\n'
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    (result,) = check_paths([tmp_path / "launch.sh"])
    found = [d.severity for d in result.diagnostics if d.code == "PL111" and "tp-comm-overlap" in d.message]
    assert found == expected


def test_one_bit_optimizers_are_deepspeed_built_ins(tmp_path):
    config = {
        "train_batch_size": 64,
        "optimizer": {"type": "OneBitAdam", "params": {"lr": 4e-4, "freeze_step": 2000, "cuda_aware": False}},
    }
    assert optimizer(tmp_path, config["optimizer"], train_batch_size=64) == []
