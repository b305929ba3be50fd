"""`plint generate`: a whole launch rendered from templates/, from a plan candidate or a layout.

The input is one "spec": the keys of the layout contract (model, cluster, parallel, batch, recompute,
precision) plus the uneven pipeline split when there is one. Specs come from `plint plan --format json`
output, from `plint check --format json` output (a layout), or from planning on the spot. What is
rendered is checked by plint itself before anything is written: a launch with an error-level finding,
or one that does not read back to the spec's layout, is never written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from plint.root import read_named

TARGETS = {  # target -> [(template, file written, executable)]
    "torchrun": [("torchrun.sh.j2", "launch.sh", True)],
    "slurm": [("slurm.sbatch.j2", "launch.sbatch", True)],
    "deepspeed": [
        ("deepspeed.sh.j2", "launch.sh", True),
        ("hostfile.j2", "hostfile", False),
        ("ds_config.json.j2", "ds_config.json", False),
    ],
}
MAIN_FILE = {target: files[0][1] for target, files in TARGETS.items()}
MODEL_DEFAULTS = {
    "ffn_hidden_size": None,
    "num_query_groups": None,
    "kv_channels": None,
    "tokenizer": None,
    "swiglu": False,
    "normalization": "LayerNorm",
    "untie_embeddings": False,
    "add_bias_linear": True,
    "position_embedding": None,
    "num_experts": None,
    "moe_topk": 2,
    "moe_ffn_hidden_size": None,
    "moe_shared_expert_size": 0,
    "moe_first_dense_layers": 0,
    "rotary_base": None,
    "rope_scaling": None,
    "norm_epsilon": None,
    "attention_dropout": None,
    "hidden_dropout": None,
    "max_position_embeddings": None,
}
# What a launch needs beyond the shape to train the model it names, each with the dest of the Megatron-LM flag
# that sets it (megatron/training/arguments.py: --rotary-base, --norm-epsilon, --attention-dropout,
# --hidden-dropout); left out, the flag's default of the release in force applies and the launch says so.
TRAINING_SHAPE = {
    "rotary_base": "rotary_base",
    "norm_epsilon": "layernorm_epsilon",
    "attention_dropout": "attention_dropout",
    "hidden_dropout": "hidden_dropout",
}
FORK_DESTS = {"rotary_base": "rope_theta"}  # Megatron-DeepSpeed's --rotary-position-embeddings-theta
# Megatron-LM's one RoPE scaling (--use-rope-scaling, --rope-scaling-factor) is Llama 3.1's, with these fixed:
# megatron/core/models/common/embeddings/rotary_pos_embedding.py, RotaryEmbedding._apply_scaling
MEGATRON_ROPE_SCALING = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# a tokenizer name written into the generated script's hint: nothing a shell would expand
SAFE_TOKENIZER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


SHARDING = ("none", "optimizer", "gradients", "parameters")  # parallel.sharding, in ZeRO's order
# Megatron-FSDP's --data-parallel-sharding-strategy for what the distributed optimizer does not shard
# (megatron/training/arguments.py choices)
FSDP_STRATEGY = {"gradients": "optim_grads", "parameters": "optim_grads_params"}


class GenerateError(ValueError):
    """The spec cannot be rendered for the target, or the rendered launch fails plint's own check."""


def spec_from_candidate(model: dict, candidate: dict, cluster: dict, name: str, precision: str = "bf16") -> dict:
    """A spec from a `plan --format json` candidate and the model it was planned for."""
    return {
        "name": name,
        "model": {**MODEL_DEFAULTS, **model},
        "cluster": dict(cluster),
        "parallel": dict(candidate["parallel"]),
        "batch": dict(candidate["batch"]),
        "recompute": dict(candidate["recompute"]),
        "pipeline": candidate.get("pipeline"),
        "precision": precision,
        "estimate": candidate.get("estimate"),
        "grad_reduce_in_bf16": bool(candidate.get("grad_reduce_in_bf16")),
    }


def spec_from_layout(layout: dict, name: str) -> dict:
    """A spec from a layout object of `plint check --format json` (files[i].layout)."""
    _check(layout, ("model", "architecture", "cluster", "parallel", "batch", "recompute"))
    if not layout.get("architecture"):
        raise GenerateError(
            "the layout has no `architecture` (norm, activation, bias, position embedding, tying): "
            "give the output of `plint check --format json` on a launch with a complete model shape"
        )
    known = {*MODEL_DEFAULTS, "num_layers", "hidden_size", "num_attention_heads", "seq_length", "vocab_size"}
    model = {
        k: v
        for k, v in {**(layout.get("model") or {}), **layout["architecture"]}.items()
        if v is not None and k in known
    }
    missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads", "seq_length") if k not in model]
    parallel = dict(layout.get("parallel") or {})
    if missing or not parallel.get("tp"):
        raise GenerateError(f"the layout lacks {', '.join(missing) or 'parallel.tp'}")
    for k, v in (
        ("pp", 1),
        ("cp", 1),
        ("ep", 1),
        ("vpp", None),
        ("sequence_parallel", parallel.get("tp", 1) > 1),
        ("distributed_optimizer", True),
    ):
        parallel[k] = parallel.get(k) if parallel.get(k) is not None else v
    parallel["etp"] = parallel.get("etp") or parallel["tp"]
    cluster = {k: layout["cluster"].get(k) for k in ("nnodes", "gpus_per_node", "gpu")}
    if not cluster["nnodes"] or not cluster["gpus_per_node"]:
        raise GenerateError("the layout lacks cluster.nnodes or cluster.gpus_per_node")
    batch = dict(layout.get("batch") or {})
    world = cluster["nnodes"] * cluster["gpus_per_node"]
    parallel["dp"] = parallel.get("dp") or world // (parallel["tp"] * parallel["pp"] * parallel["cp"])
    batch["micro"] = batch.get("micro") or 1
    batch["global"] = batch.get("global") or batch["micro"] * parallel["dp"]
    precision = layout.get("precision") if layout.get("precision") in ("bf16", "fp16") else "bf16"
    return {
        "name": name,
        "model": {**MODEL_DEFAULTS, **model},
        "cluster": cluster,
        "parallel": parallel,
        "batch": batch,
        "recompute": dict(layout.get("recompute") or {"granularity": None}),
        "pipeline": None,
        "precision": precision,
        "estimate": layout.get("estimate"),
    }


def model_with_defaults(model: dict, fork: bool = False) -> tuple[dict, list[str]]:
    """The model shape to write, every value the input gives kept as given, and the comment lines that
    say what the input left to a default (the generated launch writes the default out, so that what
    Megatron runs and what plint reads back are the same numbers)."""
    from plint.cost.model_input import default_ffn_hidden_size

    model, notes = {"vocab_size": None, **model}, []
    if not model.get("ffn_hidden_size"):
        model["ffn_hidden_size"] = default_ffn_hidden_size(model["hidden_size"], bool(model.get("swiglu")))
        rule = "4 x hidden x 2/3, down to a multiple of 64 (SwiGLU)" if model.get("swiglu") else "4 x hidden"
        notes.append(
            f"  --ffn-hidden-size {model['ffn_hidden_size']}: Megatron's default, {rule} "
            "(megatron/training/arguments.py)"
        )
    if not model.get("num_query_groups"):
        notes.append(
            f"  no --num-query-groups: Megatron's default, each of the {model['num_attention_heads']} "
            "heads has its own key-value head"
        )
    notes += _training_shape_notes(model, fork)
    vocab = model.get("vocab_size")
    # megatron/core/tokenizers/utils/build_tokenizer.py reads --vocab-size for the Null and TikToken
    # tokenizers only; the Hugging Face tokenizer brings its own vocabulary
    notes.append(
        f"--vocab-size {vocab} is the input's; the Hugging Face tokenizer takes the vocabulary of "
        f"TOKENIZER_MODEL, which must hold {vocab:,} tokens"
        if vocab
        else "no --vocab-size: the input names no vocabulary; the tokenizer sets it at run time"
    )
    return model, notes


def _training_shape_notes(model: dict, fork: bool) -> list[str]:
    """Fill the position table to the sequence (Megatron asserts max_position_embeddings >= seq_length in
    validate_args), and name each training-shape value the input leaves to the trainer's default."""
    from plint.catalog.flags import latest_release, load_flag_catalog, release_label

    notes = []
    seq, positions = model["seq_length"], model.get("max_position_embeddings")
    if positions is None or positions < seq:
        model["max_position_embeddings"] = seq
        if positions is not None:
            notes.append(
                f"  --max-position-embeddings {seq}: the sequence; the published model has {positions:,} "
                "positions, and Megatron requires at least the sequence length"
            )
    release = latest_release("megatron-deepspeed" if fork else "megatron")
    catalog = load_flag_catalog(release)
    for key, dest in TRAINING_SHAPE.items():
        if model.get(key) is None and (key != "rotary_base" or model.get("position_embedding") == "rope"):
            spec = catalog.by_dest(FORK_DESTS.get(key, dest) if fork else dest)
            assert spec is not None  # every release plint ships defines the training-shape flags
            notes.append(
                f"  no {spec.flags[-1]}: the default of {release_label(release)}, {spec.default} (the input names none)"
            )
    return notes


def _rope_scaling(model: dict, target: str) -> float | None:
    """The factor to write for the model's RoPE scaling (None: none given, or no scaling), or a GenerateError
    when the trainer cannot express the scaling."""
    scaling = model.get("rope_scaling")
    if not scaling:
        return None
    kind = scaling.get("type", "llama3")
    fixed = {k: scaling.get(k, v) for k, v in MEGATRON_ROPE_SCALING.items()}
    if kind != "llama3" or fixed != MEGATRON_ROPE_SCALING:
        raise GenerateError(
            f"RoPE scaling {scaling}: Megatron-LM's --use-rope-scaling is Llama 3.1's (low/high "
            "frequency factors 1 and 4 over 8192 positions) and plint writes no other"
        )
    if target == "deepspeed":
        raise GenerateError(
            "the deepspeed target (Megatron-DeepSpeed) has no RoPE scaling flag, and the model "
            "uses Llama 3.1's: use --target torchrun or slurm"
        )
    return float(scaling["factor"]) if scaling.get("factor") is not None else None  # None: the flag's default


def _tokenizer_hint(model: dict) -> str:
    """What the generated script asks TOKENIZER_MODEL to be (a required variable: the tokenizer fixes the
    vocabulary, which the model's shape depends on)."""
    name, vocab = model.get("tokenizer"), model.get("vocab_size")
    size = f" ({vocab:,} tokens)" if vocab else ""
    if name and SAFE_TOKENIZER.fullmatch(name):
        return f"the tokenizer of {name}{size}: its Hugging Face name or a local path"
    return f"a Hugging Face tokenizer name or path{size}"


def _check(doc: dict, sections: tuple[str, ...]) -> None:
    from plint.planning.spec_values import SpecValueError, check_values

    try:
        check_values(doc, sections)
    except SpecValueError as exc:
        raise GenerateError(str(exc)) from None


def _context(spec: dict, target: str) -> dict:
    _check(spec, ("name", "model", "cluster", "parallel", "batch", "recompute", "pipeline"))
    if spec["model"].get("approximate"):
        raise GenerateError(f"{spec['name']}: {spec['model']['approximate']}")
    model, model_notes = model_with_defaults(spec["model"], fork=target == "deepspeed")
    model["rope_scaling_factor"] = _rope_scaling(model, target)
    spec = {**spec, "model": model, "model_notes": model_notes, "tokenizer_hint": _tokenizer_hint(model)}
    p, b = spec["parallel"], spec["batch"]
    dp = p["dp"]
    if b["global"] % (b["micro"] * dp):
        raise GenerateError(f"global batch {b['global']} is not a multiple of micro {b['micro']} x dp {dp}")
    batch = {**b, "grad_accum": b["global"] // (b["micro"] * dp)}
    sharding = p.get("sharding") or ("optimizer" if p.get("distributed_optimizer") else "none")
    if sharding not in SHARDING:
        raise GenerateError(f"parallel.sharding {sharding!r} is not one of {', '.join(SHARDING)}")
    p = {**p, "sharding": sharding, "fsdp_strategy": FSDP_STRATEGY.get(sharding)}
    # DeepSpeed: the ZeRO stage that shards as much (at least 1, the distributed optimizer's equal)
    zero_stage = max(1, SHARDING.index(sharding))
    if target == "deepspeed" and zero_stage >= 2 and p["pp"] > 1:
        raise GenerateError(
            f"ZeRO stage {zero_stage} ({sharding} sharded) with pp {p['pp']}: DeepSpeed's "
            "pipeline engine takes ZeRO-1 only (PL309); plan with pp 1 or shard the optimizer only"
        )
    if target == "deepspeed":
        why = [
            what
            for what, bad in (
                ("context parallelism", p["cp"] > 1),
                ("virtual pipeline stages", p.get("vpp")),
                ("an uneven pipeline", spec.get("pipeline")),
                ("expert parallelism", p.get("ep", 1) > 1 or spec["model"].get("num_experts")),
            )
            if bad
        ]
        if why:
            raise GenerateError(
                f"the deepspeed target (Megatron-DeepSpeed) does not take {', '.join(why)}: "
                "use --target torchrun or slurm"
            )
    est = spec.get("estimate") or {}
    vpp = f" vpp {p['vpp']}" if p.get("vpp") else ""
    summary = (
        f"tp {p['tp']} pp {p['pp']}{vpp} cp {p['cp']} ep {p.get('ep', 1)} dp {dp} on {spec['cluster']['nnodes']} x "
        f"{spec['cluster']['gpus_per_node']} {spec['cluster'].get('gpu') or 'GPUs'}"
    )
    if est.get("tokens_per_s_per_gpu"):
        summary += (
            f"; predicted {est['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, "
            f"MFU {100 * est['mfu']:.1f}%, {est['memory_gib']['total']:.1f} GiB per GPU"
        )
    if p["fsdp_strategy"] and target != "deepspeed":
        summary += f"; Megatron-FSDP {p['fsdp_strategy']}"
    elif target == "deepspeed":
        summary += f"; ZeRO-{zero_stage}"
    return {
        **spec,
        "parallel": p,
        "batch": batch,
        "zero_stage": zero_stage,
        "summary": summary,
        "grad_reduce_in_bf16": bool(spec.get("grad_reduce_in_bf16")) and target != "deepspeed",
    }


def render(spec: dict, target: str) -> dict[str, str]:
    """File name -> text for the target."""
    import jinja2

    if target not in TARGETS:
        raise GenerateError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    context = _context(spec, target)
    return {out: env.get_template(template).render(**context) for template, out, _ in TARGETS[target]}


def _templates_dir() -> Path:
    import plint.templates

    return Path(plint.templates.__file__).parent


def verify(files: dict[str, str], target: str, spec: dict) -> list[str]:
    """Render into a scratch folder, check it with plint, and compare the layout read back with the
    spec; the problems found, empty when the launch is good."""
    from plint.checking.check import check_paths
    from plint.report.json_report import file_json

    with tempfile.TemporaryDirectory(prefix="plint-generate-") as scratch:
        for name, text in files.items():
            (Path(scratch) / name).write_text(text)
        env = {
            "DATA_PATH": "/data/corpus_text_document",
            "TOKENIZER_MODEL": "/tokenizer",
            "NODE_RANK": "0",
            "MASTER_ADDR": "node-00",
            "SLURM_NNODES": str(spec["cluster"]["nnodes"]),
            "SLURM_JOB_ID": "1",
            "SLURM_JOB_NODELIST": "node-[00-99]",
        }
        (result,) = check_paths([Path(scratch) / MAIN_FILE[target]], env=env, isolated=True)
        doc = file_json(result)
    problems = [f"{d['code']} {d['message']}" for d in doc["diagnostics"] if d["severity"] == "error"]
    layout = doc.get("layout")
    if layout is None:
        return problems + ["the generated launch reads as no launch at all"]
    from plint.dryrun.groups import dry_run  # megatron-core's groups with the dryrun extra, else plint's own

    groups = dry_run(result.layouts[0])
    problems += [f"dry run ({groups['backend']}): {p['message']}" for p in groups["problems"]]
    return problems + layout_differences(layout, spec)


def layout_differences(layout: dict, spec: dict) -> list[str]:
    """Where the layout read back differs from the spec it was generated from."""
    p = spec["parallel"]
    expected = {
        "cluster.nnodes": spec["cluster"]["nnodes"],
        "cluster.gpus_per_node": spec["cluster"]["gpus_per_node"],
        "parallel.tp": p["tp"],
        "parallel.pp": p["pp"],
        "parallel.dp": p["dp"],
        "parallel.cp": p["cp"],
        "parallel.vpp": p.get("vpp"),
        "batch.micro": spec["batch"]["micro"],
        "batch.global": spec["batch"]["global"],
        "model.num_layers": spec["model"]["num_layers"],
        "model.hidden_size": spec["model"]["hidden_size"],
        "model.seq_length": spec["model"]["seq_length"],
        "model.num_attention_heads": spec["model"]["num_attention_heads"],
        "recompute.granularity": spec["recompute"].get("granularity"),
    }
    # the model's shape as the input gives it (a default fills only what it leaves out: model_with_defaults)
    model, _ = model_with_defaults(spec["model"])
    for key in ("vocab_size", "ffn_hidden_size", "num_query_groups"):
        if model.get(key):
            expected[f"model.{key}"] = model[key]
    if p.get("ep", 1) > 1:
        expected["parallel.ep"] = p["ep"]
    if p.get("sharding") in SHARDING[1:]:  # "none" is written as ZeRO-1 for DeepSpeed: not compared
        expected["parallel.sharding"] = p["sharding"]
    out = []
    for key, want in expected.items():
        section, field = key.split(".")
        got = (layout.get(section) or {}).get(field)
        if got != want:
            out.append(f"{key} reads back as {got!r}, expected {want!r}")
    return out


def write(files: dict[str, str], target: str, out_dir: Path, force: bool = False) -> list[Path]:
    """Write atomically (a scratch file renamed into place); refuse to overwrite unless forced."""
    out_dir.mkdir(parents=True, exist_ok=True)
    existing = [out_dir / name for name in files if (out_dir / name).exists()]
    if existing and not force:
        raise GenerateError(f"{', '.join(map(str, existing))} exist(s); use --force to overwrite")
    written = []
    executable = {out: ex for _, out, ex in TARGETS[target]}
    for name, text in files.items():
        path = out_dir / name
        fd, scratch = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(scratch, 0o755 if executable.get(name) else 0o644)
        os.replace(scratch, path)
        written.append(path)
    return written


def load_spec(path: Path, candidate: int, name: str | None) -> dict:
    """A spec from a plan JSON (its candidate N, 1-based) or a check JSON / bare layout JSON."""
    try:
        doc = json.loads(read_named(path))
    except (OSError, ValueError) as exc:
        raise GenerateError(f"{path}: {exc}") from None
    if isinstance(doc, dict) and "candidates" in doc:
        if not 1 <= candidate <= len(doc["candidates"]):
            raise GenerateError(
                f"{path} has {len(doc['candidates'])} candidate(s); --candidate {candidate} is out of range"
            )
        if "model_shape" not in doc:
            raise GenerateError(f"{path} has no model_shape: write it with `plint plan --format json`")
        chosen = doc["candidates"][candidate - 1]
        cluster = {"nnodes": doc["nnodes"], "gpus_per_node": doc["gpus_per_node"], "gpu": doc["gpu"]}
        return spec_from_candidate(
            doc["model_shape"], chosen, cluster, name or doc.get("model", "run"), doc.get("precision", "bf16")
        )
    if isinstance(doc, dict) and "files" in doc:
        layouts = [f["layout"] for f in doc["files"] if f.get("layout")]
        if not layouts:
            raise GenerateError(f"{path}: no layout in this check output")
        doc = layouts[0]
    if not isinstance(doc, dict) or "parallel" not in doc:
        raise GenerateError(f"{path}: neither a plan nor a layout")
    return spec_from_layout(doc, name or Path(path).stem)
