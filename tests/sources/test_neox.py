"""GPT-NeoX launches (plint.reading.sources.neox): deepy.py's command line and YAML configs read as
megatron/neox_arguments/arguments.py reads them (consume_deepy_args, from_ymls, calculate_derived)."""

from plint.bounds import MAX_MESSAGE_CHARS
from plint.checking.check import check_paths
from plint.report.json_report import file_json
from plint.report.text import render

MODEL = """{
  "pipe_parallel_size": 2,
  "model_parallel_size": 2,
  "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "num_kv_heads": 4,
  "seq_length": 4096, "max_position_embeddings": 4096,
  "activation": "swiglu", "intermediate_size": 16384, "mlp_multiple_of": 256,
  "zero_optimization": {"stage": 1},
  "bf16": {"enabled": true},
  "train_batch_size": 256,
  "gradient_accumulation_steps": 8,
  "num_gpus": 8,
}
"""


def _read(tmp_path, launch: str, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + launch + "\n")
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    return file_json(result)


def test_a_name_without_suffix_gets_yml_and_the_batch_and_mlp_follow_neox(tmp_path):
    got = _read(tmp_path, "python deepy.py train.py -d configs llama", {"configs/llama.yml": MODEL})
    layout = got["layout"]
    assert layout["parallel"]["dp"] == 2  # 8 GPUs / pp 2 / tp 2
    # micro = train_batch_size // dp // grad_accum (calculate_batch_parameters)
    assert (layout["batch"]["micro"], layout["batch"]["global"], layout["batch"]["grad_accum"]) == (16, 256, 8)
    # ParallelMLP: int(16384 * 2/3) // 2 = 5461, rounded up to 256: 5632
    assert layout["model"]["ffn_hidden_size"] == 5632
    assert layout["model"]["num_query_groups"] == 4
    assert layout["precision"] == "bf16"
    assert layout["provenance"]["batch.global"]["path"].endswith("configs/llama.yml")


def test_a_key_repeated_across_files_stops_neox_only_when_compared_as_written(tmp_path):
    # from_ymls compares each key as written with the keys stored so far (stored with '_'): `seq-length`
    # after `seq_length` is not caught (it replaces it), `seq_length` after `seq-length` is
    files = {"a.yml": MODEL, "late_dash.yml": '{"seq-length": 2048}\n', "late_underscore.yml": '{"seq_length": 2048}\n'}
    dashed = _read(tmp_path, "python deepy.py train.py a.yml late_dash.yml", files)
    assert not [d for d in dashed["diagnostics"] if d["code"] == "PL001"]
    assert dashed["layout"]["model"]["seq_length"] == 2048
    repeated = _read(tmp_path, "python deepy.py train.py a.yml late_underscore.yml", files)
    (error,) = [d for d in repeated["diagnostics"] if d["code"] == "PL001"]
    assert "late_underscore.yml" in error["path"] and error["line"] == 1


def test_the_environments_dlts_hostfile_sizes_the_runner(tmp_path):
    files = {"a.yml": MODEL.replace('"num_gpus": 8,', ""), "hosts": "n0 slots=4\nn1 slots=4\n"}
    got = _read(tmp_path, "export DLTS_HOSTFILE=hosts\npython ./deepy.py train.py a.yml", files)
    assert (got["layout"]["cluster"]["nnodes"], got["layout"]["cluster"]["world_size"]) == (2, 8)


def test_a_config_outside_the_checked_tree_is_not_read(tmp_path):
    inside = tmp_path / "repo"
    inside.mkdir()
    (tmp_path / "secret.yml").write_text(MODEL)
    got = _read(inside, "python deepy.py train.py ../secret.yml", {})
    layout = got["layout"]
    assert layout["parallel"]["tp"] is None
    assert any("secret.yml" in d["message"] for d in got["diagnostics"] if d["code"] == "PL002")


def test_the_vocabulary_is_the_tokenizers_padded_not_the_configs_padded_vocab_size(tmp_path):
    # train.py calls build_tokenizer, which sets padded_vocab_size from the tokenizer whatever the config says
    vocab = "{" + ", ".join(f'"t{i}": {i}' for i in range(300)) + "}"
    stated = '"num_gpus": 8, "vocab_file": "gpt2-vocab.json", "padded_vocab_size": 50304,'
    config = MODEL.replace('"num_gpus": 8,', stated)
    got = _read(tmp_path, "python deepy.py train.py a.yml", {"a.yml": config, "gpt2-vocab.json": vocab})
    assert got["layout"]["model"]["vocab_size"] == 512  # 300 up to a multiple of 128 * model-parallel 2
    hf = '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 2, "content": "<eos>"}]}'
    stated = '"num_gpus": 8, "tokenizer_type": "HFTokenizer", "vocab_file": "tok.json",'
    config = MODEL.replace('"num_gpus": 8,', stated)
    got = _read(tmp_path, "python deepy.py train.py b.yml", {"b.yml": config, "tok.json": hf})
    assert got["layout"]["model"]["vocab_size"] == 256


def test_deepy_in_an_unknown_folder_and_an_attached_short_option_are_read(tmp_path):
    got = _read(
        tmp_path, 'python3 -u "${NEOX_DIR}/deepy.py" train.py -dconfigs llama.yml', {"configs/llama.yml": MODEL}
    )
    assert got["layout"]["parallel"]["tp"] == 2
    assert got["layout"]["trainer"] == "megatron-deepspeed"


ALIAS_BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]
    + ["num_layers: *a11", "hidden_size: 64", "precision: *a11", "fp16: {enabled: true}", "num_gpus: 8"]
)


def test_a_yaml_alias_bomb_is_quoted_bounded(tmp_path):
    """yaml aliases nest one list in another: 11 levels of 10 make a value whose repr is 10**12 items long.
    The typed reads quote a wrong value in their note; quoted whole, the check ran for minutes (fail before)."""
    got = _read(tmp_path, "python deepy.py train.py -d configs bomb.yml", {"configs/bomb.yml": ALIAS_BOMB})
    notes = " ".join(str(v) for v in got["layout"].get("notes", [])) + str(got)
    assert len(notes) < 200_000
    assert "is not an integer" in notes and "..." in notes


def test_the_text_report_quotes_an_alias_bomb_on_lines_of_a_message_s_length(tmp_path):
    # the "no memory or step estimate" line quoted the value to reprlib's default depth: 300 KB (fail before)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/bomb.yml").write_text(ALIAS_BOMB)
    (tmp_path / "run.sh").write_text("python deepy.py train.py -d configs bomb.yml\n")
    (result,) = check_paths([tmp_path / "run.sh"], root=str(tmp_path))
    text = render([result], color=False)
    assert "no memory or step estimate: model.num_layers" in text
    assert max(len(line) for line in text.splitlines()) <= MAX_MESSAGE_CHARS + 100


def _alone(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text)
    run = check_paths([tmp_path / name], root=str(tmp_path))
    (result,) = run
    return file_json(result), run


def test_a_neox_config_named_alone_is_read_as_deepy_merges_one_file(tmp_path):
    """A GPT-NeoX YAML config checked on its own (a pre-commit hook hands plint the changed file): the layout of
    what it states with NeoX's defaults for the rest, no launcher and no GPU count, and no shell error."""
    got, _ = _alone(tmp_path, "model.yml", MODEL.replace('"num_gpus": 8,', ""))
    layout = got["layout"]
    assert not [d for d in got["diagnostics"] if d["severity"] == "error"]
    assert (layout["launcher"], layout["trainer"], layout["cluster"]["world_size"]) == (
        None,
        "megatron-deepspeed",
        None,
    )
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["parallel"]["dp"]) == (2, 2, None)
    assert (layout["batch"]["global"], layout["batch"]["grad_accum"]) == (256, 8)
    assert (layout["model"]["ffn_hidden_size"], layout["model"]["num_query_groups"]) == (5632, 4)
    assert layout["provenance"]["parallel.tp"]["line"] == 3


def test_a_broken_neox_config_is_pl001_and_other_yaml_is_left_alone(tmp_path):
    broken, _ = _alone(tmp_path, "broken.yml", '{\n  "num_layers": 24,\n  "hidden_size": [2048\n}\n')
    assert [d["code"] for d in broken["diagnostics"] if d["severity"] == "error"] == ["PL001"]
    workflow, run = _alone(tmp_path, "ci.yml", "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    assert workflow["layout"] is None and not workflow["diagnostics"]
    assert any("ci.yml: not a GPT-NeoX config" in note for note in run.notes)


def test_a_json_with_one_model_key_among_its_own_is_no_neox_config(tmp_path):
    """zzhx1/Hetaceso-ModelLink's Aceso flexpipe configs: "num_layers" beside "num_stages", "num_gpus" and per-op
    lists, one of them followed by a comment line json cannot read. No NeoX layout, and no "GPT-NeoX cannot load"."""
    flexpipe = '{\n  "comment": "flexpipe only",\n  "num_layers": 2,\n  "num_stages": 2,\n  "num_gpus": [4, 4]\n}\n'
    got, _ = _alone(tmp_path, "test_pretrain.json", flexpipe)
    assert got["layout"] is None and not got["diagnostics"]
    got, _ = _alone(tmp_path, "broken.json", flexpipe + "\n//  assert num_ops_total == 2{\n")
    assert not [d for d in got["diagnostics"] if "GPT-NeoX" in d["message"]]
    two_keys = '{"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "seq_length": 128}\n'
    assert _alone(tmp_path, "neox.json", two_keys)[0]["layout"] is not None  # NeoX's own keys: read as NeoX reads


def test_configs_with_mlp_type_size_the_mlp_as_their_releases_did(tmp_path):
    """Releases with mlp_type (2023-05 to 2024-09): llama takes intermediate_size or 8h/3 rounded up to 256;
    regular takes 4h, or 2h for geglu, whatever intermediate_size says."""
    base = '{"num_layers": 2, "hidden_size": 1000, "num_attention_heads": 8, "seq_length": 128, '
    cases = (
        ('"mlp_type": "llama", "intermediate_size": 2688', 2688),
        ('"mlp_type": "llama"', 2816),  # int(8000/3) = 2666 -> 2816
        ('"mlp_type": "regular", "activation": "geglu", "intermediate_size": 7', 2000),
        ('"mlp_type": "regular"', 4000),
    )
    for keys, ffn in cases:
        got, _ = _alone(tmp_path, "m.yml", base + keys + "}\n")
        assert got["layout"]["model"]["ffn_hidden_size"] == ffn, keys


def test_an_alias_bomb_named_alone_is_quoted_bounded(tmp_path):
    """The config named on the command line goes through the same typed reads as one deepy.py names."""
    got, _ = _alone(tmp_path, "bomb.yml", ALIAS_BOMB)
    assert len(str(got)) < 200_000 and "is not an integer" in str(got)


def test_configs_under_a_conf_dir_known_only_at_run_time_are_read_from_its_tail_in_the_tree(tmp_path):
    """hitz-zentroa/latxa's Leonardo jobs: `deepy.py train.py --conf_dir ${HOME}/llama-eus/leonardo/configs ...`, the
    authors' checkout of the repository, whose configs/ holds the files (fail before: every config unknown). A config
    the script writes under that folder first is the written one; one neither written nor in the tree stays unknown."""
    launch = (
        "printf '{\"train_batch_size\": 128}' > ${WORK}/leonardo/configs/run.yml\n"
        "python deepy.py train.py --conf_dir ${WORK}/leonardo/configs models/llama.yml run.yml"
    )
    got = _read(tmp_path, launch, {"configs/models/llama.yml": MODEL.replace('"train_batch_size": 256,', "")})
    layout = got["layout"]
    assert (layout["parallel"]["tp"], layout["parallel"]["pp"], layout["batch"]["global"]) == (2, 2, 128)
    provenance = layout["provenance"]["parallel.tp"]
    assert (provenance["origin"], provenance["path"].endswith("configs/models/llama.yml")) == ("assumed", True)
    missing = _read(tmp_path, launch.replace("run.yml\n", "other.yml\n"), {})
    assert missing["layout"]["batch"]["global"] is None


def test_a_config_launched_many_times_is_parsed_once(tmp_path, monkeypatch):
    """A fuzzed Slurm job running `srun python ./deepy.py train.py configs/x.yml` a thousand times took 3 CPU s,
    its configs parsed once a launch: each file's text is parsed once, and every launch still gets its own entries."""
    from plint.reading.sources import neox_config

    calls = []
    parse = neox_config._parse_config_file
    monkeypatch.setattr(neox_config, "_PARSED", {})
    monkeypatch.setattr(neox_config, "_parse_config_file", lambda source: calls.append(source.path) or parse(source))
    launch = "\n".join(["srun python deepy.py train.py configs/llama.yml"] * 40)
    got = _read(tmp_path, launch, {"configs/llama.yml": MODEL})
    assert len(calls) == 1
    assert got["layout"]["parallel"]["dp"] == 2
