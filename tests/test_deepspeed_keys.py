"""DeepSpeed config keys against the schema built from the installed DeepSpeed."""

import json
import re
from pathlib import Path

import pytest

from plint.checking.check import check_paths

ROOT = Path(__file__).resolve().parent.parent


def findings(tmp_path, files, main):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (result,) = check_paths([tmp_path / main])
    return [(d.code, d.message, d.line) for d in result.diagnostics]


def codes(items):
    return [c for c, _, _ in items]


def test_unknown_removed_and_nested_keys(tmp_path):
    cfg = (
        '{\n "train_batch_size": 32,\n "zero_optimisation": {"stage": 3},\n "curriculum_learning": {"enabled": false},\n'
        ' "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memroy": true}}\n}\n'
    )
    out = findings(tmp_path, {"ds.json": cfg}, "ds.json")
    messages = [m for c, m, _ in out if c == "PL504"]
    assert any(
        'silently ignores the unknown key "zero_optimisation"; did you mean "zero_optimization"' in m for m in messages
    )
    assert any('"curriculum_learning" was removed' in m for m in messages)
    assert any(
        'rejects "zero_optimization.offload_optimizer.pin_memroy"' in m and '"pin_memory"' in m for m in messages
    )
    assert [line for c, _, line in out if c == "PL504"] == [3, 4, 5]


def test_json_that_is_not_a_deepspeed_config_is_left_alone(tmp_path):
    assert findings(tmp_path, {"package.json": '{"name": "x", "scripts": {"a": "b"}}\n'}, "package.json") == []


def test_auto_with_and_without_an_integration(tmp_path):
    cfg = '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}\n'
    hf = findings(
        tmp_path,
        {
            "ds.json": cfg,
            "run.sh": "accelerate launch --num_processes 8 train.py "
            "--per_device_train_batch_size 4 --deepspeed ds.json\n",
        },
        "run.sh",
    )
    assert "PL505" not in codes(hf) and "PL504" not in codes(hf)
    bare = findings(
        tmp_path, {"ds.json": cfg, "run.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n"}, "run.sh"
    )
    assert codes(bare).count("PL505") == 2
    assert any(c == "PL504" and "reduce_bucket_size" in m and "dropped" in m for c, m, _ in bare)


def test_stage3_keys_at_stage_2(tmp_path):
    out = findings(
        tmp_path,
        {"ds.json": '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e9}}\n'},
        "ds.json",
    )
    assert ("PL507" in codes(out)) and "stage3_max_live_parameters" in out[codes(out).index("PL507")][1]


def test_schema_matches_the_installed_deepspeed(tmp_path):
    pytest.importorskip("deepspeed")
    import importlib.util

    spec = importlib.util.spec_from_file_location("build", ROOT / "scripts" / "build_deepspeed_schema.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    committed = json.loads((ROOT / "schemas" / "deepspeed_config.schema.json").read_text())
    fresh = build.build()
    if fresh["x-deepspeed-version"] != committed["x-deepspeed-version"]:
        pytest.skip(f"installed DeepSpeed {fresh['x-deepspeed-version']} is not the one the schema was built from")
    assert fresh == committed


def test_typos_inside_leniently_read_sections(tmp_path):
    cfg = '{"train_batch_size": 8, "aio": {"thread_count": 4}, "activation_checkpointing": {"partition_activation": true}}\n'
    out = findings(tmp_path, {"ds.json": cfg}, "ds.json")
    messages = [m for c, m, _ in out if c == "PL504"]
    # renamed intra_op_parallelism in 0.16.4: the message says so rather than guess a spelling
    assert any(
        m.endswith('silently ignores "aio.thread_count", which it renamed "intra_op_parallelism"') for m in messages
    )
    # a key with no rename and nothing close gets no hint at all
    odd = findings(tmp_path, {"odd.json": '{"train_batch_size": 8, "aio": {"xyzzy": 1}}\n'}, "odd.json")
    assert [m for c, m, _ in odd if c == "PL504"] == [
        f'{tmp_path / "odd.json"}: DeepSpeed silently ignores "aio.xyzzy"'
    ]
    assert any(
        '"activation_checkpointing.partition_activation"; did you mean "partition_activations"' in m for m in messages
    )


def _removed_and_renamed(tmp_path, config_line):
    cfg = '{"train_batch_size": 32, "curriculum_learning": {"enabled": false},\n "aio": {"thread_count": 2}}\n'
    if config_line:
        (tmp_path / ".plint.toml").write_text(config_line)
    (tmp_path / "ds.json").write_text(cfg)
    (result,) = check_paths([tmp_path / "ds.json"])
    return [(d.code, d.severity, d.message) for d in result.diagnostics if d.code == "PL504"]


def test_keys_follow_the_deepspeed_release_in_force(tmp_path):
    # 0.16.0: the removed blocks are still accepted and aio.thread_count is still the key's name
    assert _removed_and_renamed(tmp_path, 'deepspeed = "0.16.0"\n') == []
    # 0.16.4 renamed thread_count; 0.19.6 on rejects the removed blocks
    found = _removed_and_renamed(tmp_path, 'deepspeed = "0.19.8"\n')
    assert [(c, s) for c, s, _ in found] == [("PL504", "error"), ("PL504", "error")]
    assert "DeepSpeed 0.19.8 as configured rejects the config" in found[0][2]
    assert 'renamed "intra_op_parallelism"' in found[1][2]


def test_an_assumed_deepspeed_release_only_warns_of_removed_blocks(tmp_path, monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    found = _removed_and_renamed(tmp_path, None)
    removed = [f for f in found if "curriculum_learning" in f[2]]
    assert removed and removed[0][1] == "warning" and "assumed" in removed[0][2]


BF16_WITH_FP16_KEYS = '{"train_batch_size": 32, "bf16": {"enabled": true, "loss_scale": 0, "hysteresis": 2}}\n'


def _pinned(tmp_path, files: dict[str, str]) -> list[tuple[str, str, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "ds.json").write_text(BF16_WITH_FP16_KEYS)
    (result,) = check_paths([tmp_path / "ds.json"])
    return [(d.code, d.severity, d.message) for d in result.diagnostics if d.code == "PL504"]


def test_a_section_strict_only_after_the_pinned_release_warns_that_it_ignores(tmp_path):
    """hkust-nlp/deita pins deepspeed==0.12.2 and copies fp16's loss-scaling keys into bf16: DeepSpeed read bf16 with
    dict.get until 0.17.1 made it a pydantic model, so the pinned release passes over them; a later one refuses."""
    found = _pinned(tmp_path, {"requirements.txt": "torch>=2.0\ndeepspeed==0.12.2  # pinned\n"})
    assert [(c, s) for c, s, _ in found] == [("PL504", "warning"), ("PL504", "warning")]
    assert 'DeepSpeed 0.12.2 as pinned in requirements.txt silently ignores "bf16.loss_scale"' in found[0][2]
    assert "0.17.1 and later reject it" in found[0][2]


@pytest.mark.parametrize(
    "files, named",
    [
        ({}, False),  # the installed or shipped release: 0.17.1 or later
        ({"requirements.txt": "deepspeed>=0.12\n"}, False),  # a range pins nothing
        ({"requirements.txt": "deepspeed==0.12.2\n", "requirements-dev.txt": "deepspeed==0.18.0\n"}, False),  # disagree
        ({"requirements.txt": "deepspeed==0.12.2\n", ".plint.toml": 'deepspeed = "0.19.8"\n'}, True),  # configured wins
        ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["DeepSpeed[autotuning] == 0.18.1"]\n'}, True),
    ],
)
def test_a_release_with_the_section_strict_rejects_the_keys(tmp_path, files, named):
    """`named`: the release is configured or pinned. Where it is not, the installed DeepSpeed is in force; without one
    (the test extras alone) the shipped release is only assumed, and its rejection a warning (the next test holds
    that case on its own)."""
    from plint.catalog.deepspeed_release import deepspeed_in_force

    found = _pinned(tmp_path, files)
    severity = "warning" if not named and deepspeed_in_force(None, "0.19.8").assumed else "error"
    assert [(c, s) for c, s, _ in found] == [("PL504", severity), ("PL504", severity)]
    # which release rejects it (bf16 became strict in 0.17.1, after the pydantic sections of 0.7.0)
    assert re.search(r'DeepSpeed 0\.1[789]\.\d+\b[^"]*rejects "bf16\.loss_scale"', found[0][2])
    assert "releases before 0.17.1 ignore it" in found[0][2]


def test_an_assumed_release_only_warns_of_a_section_strict_since_a_later_release(tmp_path, monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    found = _pinned(tmp_path, {})
    assert [(c, s) for c, s, _ in found] == [("PL504", "warning"), ("PL504", "warning")]
    assert "assumed rejects" in found[0][2]


def test_a_section_strict_since_the_first_pydantic_release_is_rejected_by_an_assumed_release(tmp_path, monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    (tmp_path / "ds.json").write_text('{"train_batch_size": 32, "zero_optimization": {"stage": 2, "stagee": 1}}\n')
    (result,) = check_paths([tmp_path / "ds.json"])
    (found,) = [d for d in result.diagnostics if d.code == "PL504"]
    assert found.severity == "error" and 'DeepSpeed rejects "zero_optimization.stagee"' in found.message


def test_removed_blocks_are_accepted_by_the_pinned_release(tmp_path):
    (tmp_path / "requirements.txt").write_text("deepspeed==0.16.0 ; sys_platform == 'linux'\n")
    assert _removed_and_renamed(tmp_path, None) == []


# ---- the schema walk that replaces jsonschema at check time ----------------------------------------


def _jsonschema_unknowns(data, schema) -> set[str]:
    """What PL504 read from jsonschema before: additionalProperties errors, anyOf contexts included."""
    import jsonschema

    def errors(items):
        for error in items:
            yield error
            yield from errors(error.context or [])

    found = set()
    for error in errors(jsonschema.Draft202012Validator(schema).iter_errors(data)):
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            base = ".".join(str(p) for p in error.absolute_path)
            found.update(f"{base}.{key}" if base else key for key in error.instance if key not in allowed)
    return found


def _walk_unknowns(data, schema) -> set[str]:
    from plint.rules.deepspeed_keys import schema_errors

    found = set()
    for path, unknown in schema_errors(data, schema):
        base = ".".join(str(p) for p in path)
        found.update(f"{base}.{key}" if base else key for key in unknown or ())
    return found


def test_the_schema_uses_only_the_keywords_the_walk_knows():
    from plint.rules.deepspeed_keys import SCHEMA_KEYWORDS, schema

    used = set()

    def walk(node):
        if isinstance(node, dict):
            used.update(node)
            for key, value in node.items():
                for sub in value.values() if key == "properties" else value if key == "anyOf" else ():
                    walk(sub)

    walk(schema())
    annotations = {"$schema", "title", "description", "default"}
    assert {k for k in used if not k.startswith("x-")} - annotations <= SCHEMA_KEYWORDS


def _deepspeed_configs():
    configs = []
    for path in sorted((ROOT / "fixtures").rglob("*.json")):
        if path.name == "golden.json":
            continue
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and {
            "zero_optimization",
            "train_batch_size",
            "train_micro_batch_size_per_gpu",
            "fp16",
            "bf16",
        } & set(data):
            configs.append(data)
    return configs


def test_the_schema_walk_finds_what_jsonschema_finds():
    """On every DeepSpeed config of the fixtures and seeded mutations of each (wrong types, "auto",
    unknown keys at every depth), the walk reports exactly the unknown keys jsonschema reported."""
    import copy
    import random

    from plint.rules.deepspeed_keys import schema

    configs = _deepspeed_configs()
    assert len(configs) >= 10
    rng = random.Random(0)
    values = [None, True, False, 0, 1, 1.0, 1.5, "auto", "x", [], {}, {"zz": 1}, [1]]
    differ, unknown_seen = [], 0
    for config in configs:
        for i in range(40):
            data = copy.deepcopy(config)
            for _ in range(i and rng.randint(1, 4)):
                objects = []

                def collect(node):
                    if isinstance(node, dict):
                        objects.append(node)
                        for value in list(node.values()):
                            collect(value)

                collect(data)
                target = rng.choice(objects)
                key = rng.choice(list(target) or ["stage"])
                target[key] = copy.deepcopy(rng.choice(values))
                if rng.random() < 0.5:
                    target[rng.choice([key + "x", "bogus", "stage", "enabled", "device"])] = copy.deepcopy(
                        rng.choice(values)
                    )
            expected = _jsonschema_unknowns(data, schema())
            unknown_seen += bool(expected)
            if _walk_unknowns(data, schema()) != expected:
                differ.append(data)
    assert unknown_seen > 50  # the mutations reach the strict sections
    assert not differ, differ[:3]


@pytest.mark.parametrize("name", ["deepspeed", "click", "jsonschema", "tree-sitter-bash", "no-such-dist-plint"])
def test_the_cheap_installed_check_never_misses_a_distribution(name):
    """The release in force skips importing importlib.metadata when no distribution of the name can be
    on sys.path; it must say "may be" for every name importlib.metadata finds."""
    from importlib.metadata import PackageNotFoundError, version

    from plint.catalog.deepspeed_release import _may_be_installed

    try:
        version(name)
        found = True
    except PackageNotFoundError:
        found = False
    assert _may_be_installed(name) or not found
    if name == "click":
        assert _may_be_installed(name)


# ---- PL510: the config as the program that loads it reads it ----------------------------------------

HJSON_CONFIG = (
    '{\n  "train_micro_batch_size_per_gpu": "auto",\n  // ZeRO-2\n  "zero_optimization": {"stage": 2,},\n'
    '  "gradient_clipping": 1.0,\n  "gradient_clipping": 0.5\n}\n'
)


def _syntax(tmp_path, launch: str) -> list[tuple[str, int, int, str]]:
    (tmp_path / "ds.json").write_text(HJSON_CONFIG)
    (tmp_path / "launch.sh").write_text(launch)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return [(d.severity, d.line, d.col, d.message) for d in result.diagnostics if d.code == "PL510"]


def test_hjson_syntax_where_the_hf_trainer_reads_the_config_with_json_load(tmp_path):
    """accelerate's HfDeepSpeedConfig (which the HF Trainer's config subclasses) opens the path with json.load: a
    comment or a trailing comma that DeepSpeed's hjson reader would skip stops the job; a repeated key last-wins."""
    found = _syntax(tmp_path, "deepspeed --num_gpus 8 train.py --deepspeed ds.json --per_device_train_batch_size 4\n")
    assert [(s, line, col) for s, line, col, _ in found] == [("error", 3, 3), ("error", 4, 35), ("warning", 6, 3)]
    assert found[0][3].endswith(
        "ds.json: a comment: the HF Trainer reads this config with json.load, which refuses it (JSONDecodeError at "
        "start-up; DeepSpeed alone would accept it)"
    )
    assert '"gradient_clipping" is given twice' in found[2][3] and "keeps the last value" in found[2][3]
    accelerate = "accelerate launch --use_deepspeed --deepspeed_config_file ds.json --num_processes 8 train.py\n"
    assert all(": Accelerate reads this config" in m for _, _, _, m in _syntax(tmp_path, accelerate))
    assert len(_syntax(tmp_path, accelerate)) == 3


def test_hjson_syntax_is_no_finding_where_deepspeed_itself_reads_the_config(tmp_path):
    """A client script handing the path to deepspeed.initialize: DeepSpeed reads it with hjson, so a comment is
    fine; and the config checked alone may be read by either."""
    assert _syntax(tmp_path, "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n") == []
    # a script with HF-style batch flags that hands DeepSpeed's own --deepspeed_config to deepspeed.initialize
    own = "deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds.json --per_device_train_batch_size 4\n"
    assert _syntax(tmp_path, own) == []
    (result,) = check_paths([tmp_path / "ds.json"])
    assert not [d for d in result.diagnostics if d.code == "PL510"]
