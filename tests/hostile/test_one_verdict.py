"""One verdict per file however it is reached: a DeepSpeed JSON that DeepSpeed cannot load is the same
PL001 error checked alone or through the launch that names it, and no value of the launch comes from it."""

from __future__ import annotations

import json

import pytest

from hostile_helpers import TRAINER, make_tree, plint, time_limit

BROKEN = {
    "empty": b"",
    "nan": b"NaN",
    "top-level-list": b'[{"train_micro_batch_size_per_gpu": 1}]',
    "bom": b'\xef\xbb\xbf{"train_micro_batch_size_per_gpu": 1}',  # json.load refuses a BOM in a str
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "truncated": b'{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}',
}
LAUNCH = f"deepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config ds.json\n"


def _pl001(output: str) -> list[dict]:
    return [d for f in json.loads(output)["files"] for d in f["diagnostics"] if d["code"] == "PL001"]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_deepspeed_json_is_an_error_alone_and_through_the_launch(tmp_path, monkeypatch, name):
    repo, _ = make_tree(tmp_path, {"repo/ds.json": BROKEN[name], "repo/launch.sh": LAUNCH})
    monkeypatch.chdir(repo)
    with time_limit(60):
        alone = plint(["check", "--format", "json", "ds.json"])
        through = plint(["check", "--format", "json", "launch.sh"])
        both = plint(["check", "--format", "json", "ds.json", "launch.sh"])
    assert alone.exit_code == 1 and through.exit_code == 1 and both.exit_code == 1, (alone.output, through.output)
    verdict = [(d["path"], d["line"], d["message"], d["severity"]) for d in _pl001(alone.output)]
    assert verdict and all(v[3] == "error" for v in verdict)
    assert [(d["path"], d["line"], d["message"], d["severity"]) for d in _pl001(through.output)] == verdict
    assert len(_pl001(both.output)) == len(verdict)  # reported once, with the file itself


def test_a_broken_config_sets_no_value_of_the_launch(tmp_path, monkeypatch):
    """A truncated config that says stage 3 does not make the launch ZeRO-3 (DeepSpeed stops on it)."""
    repo, _ = make_tree(tmp_path, {"repo/ds.json": BROKEN["truncated"], "repo/launch.sh": LAUNCH})
    monkeypatch.chdir(repo)
    layout = json.loads(plint(["check", "--format", "json", "launch.sh"]).output)["files"][0]["layout"]
    assert layout["parallel"]["zero_stage"] != 3
    assert layout["provenance"]["parallel.zero_stage"]["path"] != "ds.json"


def test_deeply_nested_yaml_and_json_elsewhere_never_recurse(tmp_path, monkeypatch):
    deep_yaml = "num_processes: " + "[" * 100_000 + "]" * 100_000 + "\n"
    repo, _ = make_tree(
        tmp_path,
        {
            "repo/acc.yaml": deep_yaml,
            "repo/deep.json": BROKEN["deep"],
            "repo/launch.sh": "accelerate launch --config_file acc.yaml train.py\ncat deep.json > ds.json\n" + LAUNCH,
        },
    )
    monkeypatch.chdir(repo)
    for fmt in ("text", "json", "sarif", "github", "markdown"):
        with time_limit(60):
            result = plint(["check", "--format", fmt, "launch.sh", "acc.yaml"])
        assert result.exit_code in (0, 1), (fmt, result.output, result.exc_info)


# YAML configs a launch names, nested past the parser's recursion or holding a number past Python's 4,300-digit limit
# (which PyYAML's int() refuses with ValueError): accelerate's --config_file, ChatLearn's template
HOSTILE_YAML = {
    "deep": b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "huge-int": b"num_processes: " + b"9" * 5000 + b"\nmodels: {policy_trainer: {num_gpu: " + b"9" * 5000 + b"}}\n",
    # a few hundred bytes that alias into a list of 10**9 items where each reader looks for a setting
    "alias-bomb": b"\n".join(
        [b'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
        + [f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]".encode() for p, n in zip("abcdefgh", "bcdefghi")]
        + [
            b"distributed_type: *i",
            b"mixed_precision: *i",
            b"deepspeed_config: {zero_stage: *i, gradient_accumulation_steps: *i, offload_optimizer_device: *i}",
            b"fsdp_config: {fsdp_sharding_strategy: *i}",
            b"runtime_args: {train_backend: megatron, train_global_batch_size: *i, exp_name: *i}",
            b"models: {policy_trainer: {num_gpu: *i, tensor_model_parallel_size: *i, bf16: *i, num_layers: *i}}",
        ]
    )
    + b"\n",
}
YAML_LAUNCHES = {
    "accelerate": "accelerate launch --config_file cfg.yaml train.py --per_device_train_batch_size 2\n",
    "chatlearn": "python chatlearn/entrypoint.py grpo --config-file cfg.yaml runtime_args.exp_name=x\n",
}


@pytest.mark.parametrize("content", sorted(HOSTILE_YAML))
@pytest.mark.parametrize("name", sorted(YAML_LAUNCHES))
def test_a_hostile_yaml_config_is_not_read_and_breaks_nothing(tmp_path, monkeypatch, name, content):
    repo, _ = make_tree(tmp_path, {"repo/cfg.yaml": HOSTILE_YAML[content], "repo/launch.sh": YAML_LAUNCHES[name]})
    monkeypatch.chdir(repo)
    with time_limit(60):
        result = plint(["check", "--format", "json", "launch.sh"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    report = json.loads(result.output)  # a report, not a crash
    assert not [d for f in report["files"] for d in f["diagnostics"] if "please report it" in d["message"]]
