"""The model a fine-tuning launch trains: its config.json in the tree, [tool.plint] model, the catalog, PL002."""

import json

from plint.checking.check import check_paths

LAUNCH = (
    "deepspeed --num_gpus 8 train.py --model_name_or_path {model} --deepspeed ds.json "
    "--per_device_train_batch_size 4 --gradient_accumulation_steps 4 --bf16 True --model_max_length 2048\n"
)
DS = {
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "zero_optimization": {"stage": 3},
    "bf16": {"enabled": "auto"},
}
SMALL = {
    "model_type": "llama",
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "vocab_size": 32000,
}


def _check(tmp_path, model: str, config: str | None = None):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "ds.json").write_text(json.dumps(DS))
    (tmp_path / "launch.sh").write_text(LAUNCH.format(model=model))
    if config is not None:
        (tmp_path / ".plint.toml").write_text(config)
    (result,) = check_paths([tmp_path / "launch.sh"])
    return result


def test_a_catalog_name_gives_the_shape_and_the_estimate(tmp_path):
    result = _check(tmp_path, "meta-llama/Llama-3.1-8B-Instruct")
    layout = result.layouts[0]
    assert (layout.value("model.num_layers"), layout.value("model.num_query_groups")) == (32, 8)
    assert "llama-3.1-8b" in layout.get("model.hidden_size").note
    assert layout.get("model.hidden_size").span.line == 1  # points at the name
    from plint.cost.layout_estimate import layout_estimate

    assert layout_estimate(layout) is not None


def test_a_config_json_in_the_tree_wins_over_the_catalog(tmp_path):
    folder = tmp_path / "checkpoints" / "llama-2-7b-pruned"  # the name says Llama-2-7B; its config does not
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(SMALL))
    layout = _check(tmp_path, "./checkpoints/llama-2-7b-pruned").layouts[0]
    assert (layout.value("model.num_layers"), layout.value("model.hidden_size")) == (12, 1024)
    assert "config.json" in layout.get("model.num_layers").note


def test_configured_model_wins(tmp_path):
    (tmp_path / "shape.json").write_text(json.dumps(SMALL))
    layout = _check(tmp_path, "my-org/house-model", 'model = "shape.json"\n').layouts[0]
    assert layout.value("model.num_layers") == 12
    layout = _check(tmp_path, "my-org/house-model", 'model = "Qwen/Qwen2.5-7B"\n').layouts[0]
    assert layout.value("model.num_layers") == 28


def test_an_unknown_name_is_pl002_with_how_to_supply_the_shape(tmp_path):
    result = _check(tmp_path, "my-org/house-model")
    (finding,) = [d for d in result.diagnostics if d.code == "PL002" and "house-model" in d.message]
    assert "[tool.plint] model" in finding.message and "config.json" in finding.message
    assert result.layouts[0].value("model.num_layers") is None


def test_a_vision_language_model_counts_its_language_model_and_names_the_rest(tmp_path):
    """MiniCPM-o 2.6: Qwen2.5-7B's shape from the catalog; its encoders are named as not modelled."""
    from plint.cost.layout_estimate import layout_estimate, unmodelled_features

    layout = _check(tmp_path, "openbmb/MiniCPM-o-2_6").layouts[0]
    assert (layout.value("model.num_layers"), layout.value("model.hidden_size")) == (28, 3584)
    assert any("SigLip-400M" in what for what in unmodelled_features(layout))
    estimate = layout_estimate(layout)
    assert estimate is not None and any("not modelled" in n and "Whisper" in n for n in estimate.notes)


def test_gpus_per_node_setting_gives_every_gpu_of_the_launching_node(tmp_path):
    """deepspeed with no hostfile, --num_gpus or --include runs on every GPU of the node: [tool.plint]
    gpus-per-node states how many, and the launch gets its world size and estimate."""
    from plint.cost.layout_estimate import layout_estimate

    bare = LAUNCH.replace("--num_gpus 8 ", "").format(model="meta-llama/Llama-3.1-8B")
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds.json").write_text(json.dumps(DS))
    (tmp_path / "launch.sh").write_text(bare)
    ((layout,),) = [r.layouts for r in check_paths([tmp_path / "launch.sh"])]
    # without the setting plint assumes the node of the (assumed) GPU, and says so with how to state it
    assumed = layout.get("cluster.world_size")
    assert (assumed.value, assumed.origin) == (8, "assumed")
    assert "gpus-per-node" in layout.get("cluster.gpus_per_node").note
    (tmp_path / ".plint.toml").write_text("gpus-per-node = 4\n")
    ((layout,),) = [r.layouts for r in check_paths([tmp_path / "launch.sh"])]
    world = layout.get("cluster.world_size")
    assert (world.value, layout.value("parallel.dp")) == (4, 4) and "[tool.plint] gpus-per-node" in world.note
    assert layout_estimate(layout) is not None
