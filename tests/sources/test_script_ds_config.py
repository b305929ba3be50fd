"""The DeepSpeed config a training script builds in Python, read with ast (never run)."""

import textwrap

from plint.reading.shell.model import Piece, Word
from plint.reading.sources.script_ds_config import pipeline_module, script_ds_config
from plint.source import SourceFile


def argv(text: str) -> list[Word]:
    source = SourceFile("launch.sh", text)
    out, pos = [], 0
    for token in text.split():
        pos = text.index(token, pos)
        span = source.span(pos, pos + len(token))
        out.append(Word((Piece(token, span, exact=True, source=source),), span))
        pos += len(token)
    return out


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


SCRIPT = """
    import argparse, deepspeed
    from helpers.ds import make_config

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--zero_stage", type=int, default=1)
        parser.add_argument("--offload", action="store_true")
        parser.add_argument("--dtype", default="bf16")
        args = parser.parse_args()
        cfg = make_config(stage=args.zero_stage, offload=args.offload, dtype=args.dtype)
        cfg["train_micro_batch_size_per_gpu"] = 2
        deepspeed.initialize(model=None, config=cfg)
"""
HELPER = """
    def make_config(stage, offload, dtype="fp16"):
        device = "cpu" if offload else "none"
        section = {"enabled": True}
        return {"zero_optimization": {"stage": stage, "offload_optimizer": {"device": device}}, dtype: section}
"""


def test_helper_called_with_the_scripts_arguments(tmp_path):
    script = write(tmp_path, "train.py", SCRIPT)
    write(tmp_path, "helpers/ds.py", HELPER)
    facts = script_ds_config(script, str(tmp_path), argv("--zero_stage 3 --offload")).facts
    assert facts["parallel.zero_stage"].value == 3 and facts["parallel.zero_stage"].span.path == "launch.sh"
    assert facts["offload.offload_optimizer"].value == "cpu"
    assert facts["precision"].value == "bf16" and facts["batch.micro"].value == 2


def test_argparse_defaults_stand_when_the_launch_is_silent(tmp_path):
    script = write(tmp_path, "train.py", SCRIPT)
    write(tmp_path, "helpers/ds.py", HELPER)
    facts = script_ds_config(script, str(tmp_path), argv("")).facts
    assert facts["parallel.zero_stage"].value == 1 and facts["parallel.zero_stage"].origin == "default"
    assert "offload.offload_optimizer" not in facts  # store_true defaults to False: device "none"


def test_an_unknown_argument_leaves_the_stage_unresolved(tmp_path):
    script = write(tmp_path, "train.py", SCRIPT.replace("stage=args.zero_stage", "stage=compute_stage()"))
    write(tmp_path, "helpers/ds.py", HELPER)
    stage = script_ds_config(script, str(tmp_path), argv("")).facts["parallel.zero_stage"]
    assert stage.value is None and stage.origin == "unresolved"


def test_json_load_names_the_config_file(tmp_path):
    script = write(
        tmp_path,
        "train.py",
        """
        import json, deepspeed
        def main():
            with open("configs/ds.json") as f:
                cfg = json.load(f)
            deepspeed.initialize(model=None, config=cfg)
    """,
    )
    facts = script_ds_config(script, str(tmp_path), argv("")).facts
    assert facts["deepspeed.config_path"].value == "configs/ds.json"


def test_a_script_without_a_config_gives_none(tmp_path):
    assert script_ds_config(write(tmp_path, "train.py", "print('hello')\n"), str(tmp_path), []) is None


def test_pipeline_module_built_in_the_script(tmp_path):
    script = write(
        tmp_path,
        "train.py",
        """
        from deepspeed.pipe import PipelineModule, LayerSpec
        class GPTPipe(PipelineModule):
            pass
        model = GPTPipe(layers=[], num_stages=2)
    """,
    )
    found = pipeline_module(script, str(tmp_path))
    assert found is not None and found.span.line == 5


def test_the_scripts_own_defaults(tmp_path):
    from plint.reading.sources.script_ds_config import script_defaults

    script = write(
        tmp_path,
        "train.py",
        """
        import argparse
        from dataclasses import dataclass, field

        @dataclass
        class TrainingArguments:
            model_max_length: int = field(default=512, metadata={"help": "Maximum sequence length."})
            cache_dir: str = None

        parser = argparse.ArgumentParser()
        parser.add_argument("--per_device_train_batch_size", type=int, default=16)
    """,
    )
    found = script_defaults(script, str(tmp_path))
    assert found["model_max_length"].value == 512 and found["model_max_length"].origin == "default"
    assert found["per_device_train_batch_size"].value == 16 and "cache_dir" not in found


def test_the_older_bfloat16_section(tmp_path):
    script = write(
        tmp_path,
        "train.py",
        """
        import deepspeed
        def main():
            cfg = {"zero_optimization": {"stage": 2}, "bfloat16": {"enabled": True}}
            deepspeed.initialize(model=None, config=cfg)
    """,
    )
    facts = script_ds_config(script, str(tmp_path), argv("")).facts
    assert facts["precision"].value == "bf16" and facts["parallel.zero_stage"].value == 2


def test_a_section_named_at_run_time_leaves_the_precision_and_stage_unknown(tmp_path):
    # HelloDeepSpeed's train_bert_ds.py: `ds_config = {dtype: {"enabled": True}, ...}` with dtype a parameter
    # plint cannot evaluate: any section may be that key, so no "fp32" or "stage 0" default is claimed
    script = write(
        tmp_path,
        "train.py",
        """
        import deepspeed

        def train(model, dtype):
            ds_config = {"train_micro_batch_size_per_gpu": 8, dtype: {"enabled": True}}
            deepspeed.initialize(model=model, config=ds_config)
    """,
    )
    found = script_ds_config(script, str(tmp_path), argv("--x 1"))
    assert found is not None
    assert found.facts["precision"].value is None and found.facts["precision"].origin == "unresolved"
    assert found.facts["parallel.zero_stage"].value is None
    assert found.facts["batch.micro"].value == 8
