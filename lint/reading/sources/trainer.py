"""Which trainer a launch runs: Megatron-LM, Megatron-DeepSpeed, plain DeepSpeed, or unknown.

Megatron's flags go to many scripts besides pretrain_gpt.py (examples/multimodal/train.py, finetune_*.py, a
fork's pretrain_qwen2_moe.py, tasks/main.py), so the trainer is recognised by evidence, strongest first: what
the entry script imports when it lies in the checked tree (`plint.reading.sources.entry_script`, read as text), the
Megatron checkout around it, the entry point's name or path (Megatron's root scripts, a file under a Megatron
folder, `-m megatron...`), and the flags it receives (Megatron's parallel, batch and model-shape flags, in
`--flag value` or `--flag=value` spelling: argparse's `_parse_optional` splits `--x=y` at the `=`). Megatron-
DeepSpeed then shows in DeepSpeed's flags or launcher, the fork-only flags, `import deepspeed` in the script, or
the fork's own files in the repository. The entry-point names are the root scripts of NVIDIA/Megatron-LM
(core_v0.8.0 ... main), deepspeedai/Megatron-DeepSpeed and bigscience-workshop/Megatron-DeepSpeed; the flag
sets are checked against the flag catalog by tests/sources/test_trainer.py.
"""

from __future__ import annotations

import posixpath

from plint.reading.shell.model import Word
from plint.values import Value

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plint.reading.sources.entry_script import EntryScript

MEGATRON_ENTRYPOINTS = frozenset(
    {
        "pretrain_gpt.py",
        "pretrain_bert.py",
        "pretrain_t5.py",
        "pretrain_mamba.py",
        "pretrain_hybrid.py",
        "pretrain_vlm.py",
        "pretrain_retro.py",
        "pretrain_ict.py",
        "pretrain_vision_classify.py",
        "pretrain_vision_dino.py",
        "pretrain_vision_inpaint.py",
        "train_rl.py",
        "pretrain_gpt_core.py",  # deepspeedai/Megatron-DeepSpeed
        "pretrain_prefix_lm.py",
        "pretrain_vit.py",  # bigscience-workshop/Megatron-DeepSpeed
    }
)
# Flags that only the Megatron-DeepSpeed forks define (no Megatron-LM release has them).
FORK_FLAGS = frozenset(
    {
        "--zero-stage",
        "--no-pipeline-parallel",
        "--ds-sequence-parallel-size",
        "--moe-expert-parallel-size",
        "--deepspeed-activation-checkpointing",
        "--partition-activations",
        "--zero-reduce-scatter",
        "--zero-contigious-gradients",
        "--enable-expert-tensor-parallelism",
    }
)
# Flags only the bigscience fork defines (neither Megatron-LM nor the deepspeedai fork).
BIGSCIENCE_FLAGS = frozenset(
    {
        "--glu-activation",
        "--pp-partition-method",
        "--embed-layernorm",
        "--sync-tp-duplicated-parameters",
        "--tokenizer-name-or-path",
        "--pad-vocab-size-to",
        "--loss-on-targets-only",
        "--codecarbon-dir",
    }
)
# Flags only Megatron (and the forks that keep its parser) define under these names: the parallel and batch
# sizes. With the model-shape flags they recognise a Megatron entry point of any name.
MEGATRON_OWN_FLAGS = frozenset(
    {"--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--micro-batch-size", "--global-batch-size"}
)
MEGATRON_SHAPE_FLAGS = frozenset(
    {
        "--num-layers",
        "--hidden-size",
        "--num-attention-heads",
        "--ffn-hidden-size",
        "--seq-length",
        "--max-position-embeddings",
    }
)
# what a training script is named (train.py, pretrain_gpt.py, finetune.py, run_clm.py, sft.py)
TRAINING_NAMES = ("pretrain", "train", "finetune", "run_clm", "run_mlm", "run_pretrain", "sft")
# A training run's length: Megatron-LM's --train-iters / --train-samples, the forks' --train-tokens
# (megatron/arguments.py of microsoft/Megatron-DeepSpeed), tasks/main.py's --epochs. Text generation servers,
# evaluation harnesses and checkpoint tools take Megatron's flags too, but train nothing.
TRAINING_LENGTH_FLAGS = frozenset({"--train-iters", "--train-samples", "--train-tokens", "--epochs"})
# HF TrainingArguments fields: a script taking these is not a Megatron entry point, whatever its name.
HF_FLAGS = frozenset(
    {
        "--per_device_train_batch_size",
        "--output_dir",
        "--model_name_or_path",
        "--gradient_accumulation_steps",
        "--num_train_epochs",
    }
)


def _option_names(args: list[Word]) -> set[str]:
    """Option names among the words, `--x=v` read as `--x`; partly unknown words by their known start."""
    names = set()
    for w in args:
        text = w.text if w.text is not None else (w.pieces[0].text if w.pieces and w.pieces[0].known else "")
        if text and text.startswith("--"):
            names.add(text.split("=", 1)[0])
    return names


def _directories(text: str) -> list[str]:
    """Lower-cased directory names of a path, `${MEGATRON_DIR}` read as its variable's name."""
    parts = text.split("/")[:-1]
    return [p.strip("${}").lower() for p in parts if p]


def _megatron_entrypoint(entrypoint: Word | None, is_module: bool) -> str | None:
    """Why the entry point is Megatron's, or None."""
    if entrypoint is None:
        return None
    text = entrypoint.display()
    if is_module or ("/" not in text and not text.endswith(".py")):
        return f"-m {text}" if text.split(".")[0].lower() == "megatron" else None
    name = posixpath.basename(text)
    if name in MEGATRON_ENTRYPOINTS:
        return name
    folder = next((d for d in _directories(text) if d.startswith("megatron")), None)
    if folder is not None and name.endswith(".py"):
        return f"{name} under {folder}/"
    return None


def _by_flags(flags: set[str], in_checkout: bool) -> str | None:
    """Why the flags alone say Megatron training: the length of a training run, with one of Megatron's own
    parallel/batch flags and one more of its flags, or inside a Megatron checkout one of them."""
    own = sorted(flags & MEGATRON_OWN_FLAGS)
    shape = sorted(flags & MEGATRON_SHAPE_FLAGS)
    if not flags & TRAINING_LENGTH_FLAGS:
        return None
    if in_checkout and (own or shape):
        return f"{(own or shape)[0]} among its flags"
    if own and len(own) + len(shape) >= 2:
        return f"Megatron's own {', '.join((own + shape)[:3])} among its flags"
    return None


def _named_for_training(script: EntryScript) -> bool:
    """A script named for training (train.py, train_async.py) that imports megatron, itself or through the tree's
    modules, trains with it: slime's train.py (megatron's parse_args through slime.utils.arguments, its own loop)."""
    return script.path is not None and posixpath.basename(script.path).startswith(TRAINING_NAMES)


def detect_trainer(
    entrypoint: Word | None,
    launcher: str | None,
    args_words: list[Word],
    is_module: bool = False,
    script: EntryScript | None = None,
) -> Value:
    """ "megatron" | "megatron-deepspeed" | "deepspeed" | "unknown", with the evidence as the note."""
    flags = _option_names(args_words)
    site = entrypoint.value_span if entrypoint is not None else None
    megatron = _megatron_entrypoint(entrypoint, is_module)
    in_fork_tree = entrypoint is not None and any(
        d.replace("_", "-").startswith("megatron-deepspeed") for d in _directories(entrypoint.display())
    )
    tree = script.tree if script is not None else None
    if megatron is not None and flags & HF_FLAGS and not in_fork_tree and " under " not in megatron:
        megatron = None  # an HF-style script that happens to share a Megatron script's name
    if megatron is not None and " under " in megatron and (script is None or script.path is None):
        if flags and not _megatron_flags_among(flags):
            # `.../Megatron-LM/test.py --timestamp T`: a script beside Megatron's, given none of its parser's flags
            megatron = None
    if script is not None and script.path is not None:
        if script.checkpoint_tool:
            megatron = None  # a converter passes training flags too (--train-iters among them)
        elif (
            script.imports_megatron
            and (script.trains or flags & TRAINING_LENGTH_FLAGS or _named_for_training(script))
            and (script.megatron_module is None or _megatron_flags_among(flags))
        ):  # through the tree's modules, Megatron may be one backend of several: then its parser's flags say so
            through = f" through {script.megatron_module}" if script.megatron_module else ""
            megatron = f"{script.path} (it imports megatron{through})"
        elif not (tree is not None and _by_flags(flags, False)):
            megatron = None  # the script is there to read and is no Megatron training entry point
    elif megatron is None and not flags & HF_FLAGS:
        why = _by_flags(flags, tree is not None)
        if why is not None:
            megatron = f"{entrypoint.display() if entrypoint is not None else '?'} ({why})"
    deepspeed_flags = sorted(f for f in flags if f.startswith(("--deepspeed", "--deepscale")))
    if megatron is not None:
        fork_flags = sorted(flags & FORK_FLAGS)
        why = (
            "its path is a Megatron-DeepSpeed checkout"
            if in_fork_tree
            else f"{deepspeed_flags[0]} among its flags"
            if deepspeed_flags
            else "the deepspeed launcher runs it"
            if launcher == "deepspeed" and tree != "megatron"
            else f"{fork_flags[0]} (a Megatron-DeepSpeed flag)"
            if fork_flags
            else f"{script.path} imports deepspeed"
            if script is not None and script.imports_deepspeed
            else script.tree_note
            if script is not None and tree == "megatron-deepspeed"
            else None
        )
        if why is not None:
            return Value("megatron-deepspeed", site, "derived", f"Megatron entry point {megatron}; {why}")
        if launcher == "deepspeed" and script is not None:  # no DeepSpeed flag and a Megatron-LM checkout around
            return Value(
                "megatron",
                site,
                "derived",
                f"Megatron-LM entry point {megatron}; the deepspeed launcher only starts its processes "
                f"({script.tree_note}, without DeepSpeed, and no --deepspeed flag)",
            )
        return Value("megatron", site, "derived", f"Megatron-LM entry point {megatron}")
    if launcher == "deepspeed" or deepspeed_flags:
        why = "the deepspeed launcher" if launcher == "deepspeed" else f"{deepspeed_flags[0]} among its flags"
        return Value("deepspeed", site, "derived", f"{why}, and no Megatron entry point")
    if script is not None and script.path is not None:
        why = (
            "loads or saves checkpoints itself and never calls pretrain() or finetune() (a checkpoint, evaluation "
            "or generation tool)"
            if script.checkpoint_tool
            else "does not train (no pretrain() or finetune() call, no --train-iters)"
            if script.imports_megatron
            else "does not import megatron"
        )
        return Value("unknown", site, "derived", f"{script.path} {why}, and no DeepSpeed")
    return Value("unknown", site, "derived", "neither a Megatron entry point nor DeepSpeed")


def fork_release(entrypoint: Word | None, args_words: list[Word]) -> Value | None:
    """ "bigscience" when a Megatron-DeepSpeed launch shows signs of the bigscience fork (its path, or
    flags only that fork has); None when nothing points away from the deepspeedai fork."""
    site = entrypoint.value_span if entrypoint is not None else None
    if entrypoint is not None and any("bigscience" in d for d in _directories(entrypoint.display())):
        return Value("bigscience", site, "derived", "the entry point lies under a bigscience checkout")
    options = _option_names(args_words)
    own = sorted(options & BIGSCIENCE_FLAGS)
    if own and not _deepspeedai_only(options):
        return Value("bigscience", site, "derived", f"{own[0]} is a flag of the bigscience fork only")
    # flags of both forks (OpenLLM-France's Lucie fork: bigscience's --tokenizer-name-or-path with deepspeedai's
    # --num-key-value-heads): a fork that merged them, whose parser plint does not have; none is recognised
    return None


def _megatron_flags_among(options: set[str]) -> bool:
    """Whether any option is one Megatron-LM's newest parser, or a Megatron-DeepSpeed fork's, defines."""
    from plint.catalog.flags import default_release, load_flag_catalog

    if options & (FORK_FLAGS | BIGSCIENCE_FLAGS) or any(o.startswith("--deepspeed") for o in options):
        return True
    catalog = load_flag_catalog(default_release("megatron"))
    return any(catalog.lookup(o) is not None for o in options)


def _deepspeedai_only(options: set[str]) -> list[str]:
    """The options the deepspeedai fork's parser defines and the bigscience fork's does not."""
    from plint.catalog.flags import load_flag_catalog

    ours, theirs = load_flag_catalog("megatron-deepspeed"), load_flag_catalog("bigscience")
    return sorted(o for o in options if ours.lookup(o) is not None and theirs.lookup(o) is None)
