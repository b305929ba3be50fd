"""NeMo RL's drivers (plint.reading.sources.nemo_rl): the config and its defaults chain read from the tree, the
overrides over it, the Megatron policy's layout on the cluster the driver builds."""

from plint.checking.check import check_paths
from plint.report.json_report import file_json

BASE = """
policy:
  model_name: Qwen/Qwen2.5-1.5B
  precision: bfloat16
  train_global_batch_size: 512
  train_micro_batch_size: 4
  sequence_packing:
    enabled: true
  megatron_cfg:
    enabled: false
    tensor_model_parallel_size: 1
    pipeline_model_parallel_size: 1
    context_parallel_size: 1
    expert_model_parallel_size: 1
    expert_tensor_parallel_size: null
    sequence_parallel: false
    activation_checkpointing: false
    optimizer:
      use_distributed_optimizer: true
cluster:
  num_nodes: 1
  gpus_per_node: 8
"""
RECIPE = """defaults: ../../base.yaml
policy:
  sequence_packing:
    enabled: false
  megatron_cfg:
    enabled: true
    tensor_model_parallel_size: 2
    sequence_parallel: true
    activation_checkpointing: true
cluster:
  num_nodes: 4
"""


def _check(tmp_path, launch: str, driver: str = "run_grpo.py", recipe: str = RECIPE, base: str = BASE) -> dict:
    (tmp_path / ".git").mkdir(exist_ok=True)
    recipes = tmp_path / "examples" / "configs" / "recipes" / "llm"
    recipes.mkdir(parents=True, exist_ok=True)
    (tmp_path / "examples" / "configs" / "base.yaml").write_text(base)
    (recipes / "recipe.yaml").write_text(recipe)
    (tmp_path / "examples" / driver).write_text("from nemo_rl.algorithms.grpo import grpo_train\n")
    (tmp_path / "run.sh").write_text(launch)
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    return file_json(result)


def test_the_recipe_merged_over_its_defaults_and_the_overrides(tmp_path):
    # fail before: no launch (python of a script plint did not know, given a config)
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml policy.train_micro_batch_size=2\n"
    result = _check(tmp_path, launch)
    layout = result["layout"]
    assert (layout["trainer"], layout["cluster"]["nnodes"], layout["cluster"]["world_size"]) == ("megatron", 4, 32)
    parallel = layout["parallel"]
    assert (parallel["tp"], parallel["pp"], parallel["dp"], parallel["sequence_parallel"]) == (2, 1, 16, True)
    assert parallel["distributed_optimizer"] is True  # from the base, under the recipe
    assert (layout["batch"]["global"], layout["batch"]["micro"], layout["batch"]["grad_accum"]) == (512, 2, 16)
    assert layout["precision"] == "bf16" and layout["recompute"]["granularity"] == "full"
    assert not [d for d in result["diagnostics"] if d["code"] == "PL601"]  # no Megatron-LM validate_args runs


def test_dpo_counts_both_sequences_of_a_pair_and_packing_hides_the_micro_batch(tmp_path):
    launch = "uv run examples/run_dpo.py --config examples/configs/recipes/llm/recipe.yaml\n"
    layout = _check(tmp_path, launch, driver="run_dpo.py")["layout"]
    assert (layout["batch"]["global"], layout["batch"]["micro"]) == (1024, 8)
    packed = RECIPE.replace("enabled: false", "enabled: true", 1)
    layout = _check(tmp_path, launch.replace("run_dpo", "run_grpo"), recipe=packed)["layout"]
    assert layout["batch"]["micro"] is None and "sequence_packing" in layout["provenance"]["batch.micro"]["note"]


def test_a_policy_not_on_megatron_and_a_missing_parent(tmp_path):
    launch = "uv run examples/run_sft.py --config examples/configs/recipes/llm/recipe.yaml\n"
    dtensor = _check(tmp_path, launch, driver="run_sft.py", recipe=RECIPE.replace("enabled: true", "enabled: false"))
    assert dtensor["layout"]["trainer"] == "unknown" and dtensor["layout"]["cluster"]["world_size"] == 32
    missing = _check(tmp_path, launch, driver="run_sft.py", recipe=RECIPE.replace("../../base.yaml", "../nope.yaml"))
    assert (missing["layout"] or {}).get("trainer") != "megatron"


def test_the_rules_name_nemo_rl_s_own_keys_and_read_its_overlaps(tmp_path):
    """PL303 asks for policy.megatron_cfg.sequence_parallel=true, not Megatron-LM's --sequence-parallel; the overlaps of
    distributed_data_parallel_config (on in NeMo RL's base configs) keep PL306 quiet, and off it names their keys."""
    recipe = RECIPE.replace("sequence_parallel: true", "sequence_parallel: false")
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml\n"

    def diagnostics(overlap: str) -> dict:
        ddp = f"    distributed_data_parallel_config:\n      overlap_grad_reduce: {overlap}\n"
        ddp += f"      overlap_param_gather: {overlap}\n"
        base = BASE.replace("    optimizer:\n", ddp + "    optimizer:\n")
        return {d["code"]: d["message"] for d in _check(tmp_path, launch, recipe=recipe, base=base)["diagnostics"]}

    on = diagnostics("true")
    assert "without policy.megatron_cfg.sequence_parallel=true" in on["PL303"] and "PL306" not in on
    off = diagnostics("false")
    assert "policy.megatron_cfg.distributed_data_parallel_config.overlap_grad_reduce=true" in off["PL306"]


def test_a_hostile_recipe_is_not_read_and_nothing_breaks(tmp_path):
    """YAML nested past the parser's recursion, and aliases that make a small file a tree of 2**24 leaves merged over
    a parent of the same shape: the config is not read (no layout from it), and plint reports no internal error."""
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml\n"
    deep = "defaults: ../../base.yaml\npolicy: " + "[" * 5000 + "]" * 5000 + "\n"
    laughs = ["l0: &l0 {a: 1, b: 2}"] + [f"l{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, 25)]
    base = "\n".join(laughs) + "\npolicy: {}\ncluster: {}\n"
    for recipe, parent in ((deep, BASE), ("defaults: ../../base.yaml\n" + base, base)):
        result = _check(tmp_path, launch, recipe=recipe, base=parent)
        assert (result["layout"] or {}).get("trainer") != "megatron"
        assert not [d for d in result["diagnostics"] if d["code"] == "PL001"]


def test_an_override_no_yaml_reads_is_its_text(tmp_path):
    """`policy.precision=@bf16` or `cluster.num_nodes=[2,`: OmegaConf would refuse them; plint takes the text as
    written (so the value is no precision or count it knows) instead of failing on the file."""
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml policy.precision=@bf16 cluster.num_nodes=[2,\n"
    result = _check(tmp_path, launch)
    assert result["layout"]["precision"] is None and result["layout"]["cluster"]["nnodes"] is None
    assert not [d for d in result["diagnostics"] if d["code"] == "PL001"]


def test_a_huge_aliased_mapping_is_never_printed(tmp_path):
    laughs = "\n".join(["l0: &l0 {a: 1, b: 2}"] + [f"l{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, 25)])
    recipe = laughs + "\n" + RECIPE.replace("  num_nodes: 4", "  num_nodes: *l24")
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml\n"
    layout = _check(tmp_path, launch, recipe=recipe)["layout"]
    assert layout["cluster"]["nnodes"] is None and "a mapping" in layout["provenance"]["cluster.nnodes"]["note"]


def test_a_defaults_file_outside_the_checked_tree_is_not_read(tmp_path):
    """`defaults: ../../../../../outside/base.yaml` climbs out of the repository: plint opens nothing there, so the
    recipe is not read (its parent is missing) and no layout comes from the outside file."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "base.yaml").write_text(BASE.replace("enabled: false", "enabled: true", 1))
    recipe = "defaults: ../../../../../outside/base.yaml\npolicy:\n  megatron_cfg:\n    enabled: true\ncluster:\n  num_nodes: 2\n"
    launch = "uv run examples/run_grpo.py --config examples/configs/recipes/llm/recipe.yaml\n"
    result = _check(repo, launch, recipe=recipe)
    assert (result["layout"] or {}).get("trainer") != "megatron"
    assert any("outside the checked tree: not read" in d["message"] for d in result["diagnostics"])
