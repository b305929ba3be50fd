"""What the entry script of a launch and the repository around it say about the trainer, read statically.

The script a launch starts (`examples/multimodal/train.py`, `finetune_t0_non_causal_decoder.py`, ...) is read as
text when it lies in the checked tree (the git work tree of the launch file, else its folder), never imported
or run: its `import` lines say whether it is a Megatron entry point (`from megatron...`, `import megatron_patch`)
and whether it builds a DeepSpeed engine (`import deepspeed`). The repository says which Megatron it is: a
`megatron/` package beside the script, and Megatron-DeepSpeed's own files (`megatron/model/gpt_model.py` with its
`GPTModelPipe`, `examples_deepspeed/`; microsoft/Megatron-DeepSpeed and bigscience-workshop/Megatron-DeepSpeed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from plint.record import record
from plint.root import tree_root
from plint.source import probe, read_bytes

_MAX_BYTES = 512 * 1024  # an entry script is small; more is not one
_MAX_LEVELS = 8  # folders walked up from the script towards the root
# `import a, b as c` / `from a.b import c` at the start of a line (indented ones too: imports inside a main())
# a call of Megatron's training loop: megatron.training.pretrain, tasks' finetune (tasks/finetune_utils.py)
_TRAINS = re.compile(rb"\b(?:pretrain|finetune)\s*\(")
# a checkpoint read or written by the script itself (megatron.checkpointing's load_checkpoint, save_checkpoint;
# torch.save of a state dict): without a training-loop call, a converter, evaluation or generation tool that takes
# Megatron's flags
_CHECKPOINT_IO = re.compile(rb"\b(?:save_checkpoint|load_checkpoint|torch\.save)\s*\(")
# ... unless it starts Megatron as a training run does (initialize_megatron: the launch's world and Megatron's
# start-up checks, validate_args among them, apply to it as they do to training; Megatron-DeepSpeed's
# tools/hf2megads_weight_converter.py)
_INITIALIZES = re.compile(rb"\binitialize_megatron\s*\(")
# the HF Trainer built in the script (transformers' Trainer/TrainingArguments, TRL's trainers): data parallel
_HF_TRAINER = re.compile(rb"\b(?:Trainer|TrainingArguments|SFTTrainer|SFTConfig|Seq2SeqTrainer)\s*\(")
# PyTorch's own data parallelism wrapping the model in the script (FSDP2's fully_shard, FSDP, DDP): every rank
# trains the whole model on its own batch ("FSDP is a type of data parallelism", torch.distributed.fsdp docs)
_TORCH_DATA_PARALLEL = re.compile(rb"\b(?:fully_shard|FullyShardedDataParallel|FSDP|DistributedDataParallel|DDP)\s*\(")
# ... unless the script also splits the model itself (DTensor tensor parallelism, pipeline stages), or names such
# a split it may leave to a helper module (a tensor-parallel mesh or size, a parallelize_* function)
_TORCH_MODEL_PARALLEL = re.compile(
    rb"\b(?:parallelize_\w+|ColwiseParallel|RowwiseParallel|SequenceParallel|PipelineStage|context_parallel"
    rb"|tp_mesh|tp_size|tensor_parallel\w*|pipeline_parallel\w*|parallel_dims)\b"
)
# in-tree modules of the entry script read for an import of megatron (megatron_through), and how deep
_MAX_FOLLOWED = 48
_MAX_DEPTH = 3
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b|import[ \t]+([\w., \t]+))", re.M)
# `from .a.b import c` / `from . import c` / `from ..a import (c, d`: a module of the importing module's package
_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([A-Za-z_][\w.]*)?[ \t]+import[ \t]+\(?([\w, \t]*)", re.M)


@record
class EntryScript:
    path: str | None  # the script as found in the tree; None when only the repository was seen
    modules: frozenset[str]  # top-level modules it imports
    tree: str | None  # "megatron-deepspeed" | "megatron" | None: the Megatron checkout it lies in
    tree_note: str | None = None
    trains: bool = False  # it calls Megatron's training loop (pretrain(...), finetune(...))
    hf_trainer: bool = False  # it imports transformers (or trl) and builds an HF Trainer
    torch_data_parallel: bool = False  # it wraps its model in FSDP/DDP and splits it no other way
    # the module of the tree through which it imports megatron, where it does not itself (megatron_through)
    megatron_module: str | None = None
    checkpoint_io: bool = False  # it loads or saves checkpoints itself and does not call initialize_megatron

    @property
    def checkpoint_tool(self) -> bool:
        """It loads or saves a checkpoint itself, never calls a training loop nor starts Megatron as training does:
        Yuan's tools/split_tp_partitions.py (parse_args with its own WORLD_SIZE, then torch.save)."""
        return self.checkpoint_io and not self.trains

    @property
    def imports_megatron(self) -> bool:
        return self.megatron_module is not None or any(m.startswith("megatron") for m in self.modules)

    @property
    def imports_deepspeed(self) -> bool:
        return "deepspeed" in self.modules


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _imports(text: str) -> frozenset[str]:
    found = set()
    for m in _IMPORT.finditer(text):
        if m.group(1):
            found.add(m.group(1).split(".")[0])
        else:
            for part in m.group(2).split(","):
                name = part.strip().split()[0] if part.strip() else ""
                if name:
                    found.add(name.split(".")[0])
    return frozenset(found)


def _dotted_imports(text: str) -> list[str]:
    """The modules the text imports by their full dotted names, in order (`from a.b import c` -> a.b)."""
    found: dict[str, None] = {}  # ordered, each once
    for m in _IMPORT.finditer(text):
        names = [m.group(1)] if m.group(1) else [p.strip().split()[0] for p in m.group(2).split(",") if p.strip()]
        found.update(dict.fromkeys(names))
    return list(found)


def megatron_through(text: str, folder: str, root: str) -> str | None:
    """The module of the checked tree, imported by the script, that imports megatron itself, where the script does
    not: a framework's launcher over Megatron (MindSpeed-LLM's posttrain_gpt.py imports
    mindspeed_llm.tasks.posttrain.launcher, which imports megatron.training; slime's train.py imports
    slime.utils.arguments, which imports slime.backends.megatron_utils, whose __init__ imports .arguments, which
    imports megatron.training.arguments). A module is looked for as Python would find it from the script's folder
    (sys.path[0]): a/b.py or a/b/__init__.py, and a relative import from the importing module's package; modules
    are followed breadth first, _MAX_DEPTH imports deep and at most _MAX_FOLLOWED of them read."""
    seen: set[str] = set()
    level: list[tuple[str, str | None]] = [(text, None)]  # (source, its file: None for the script)
    for _ in range(_MAX_DEPTH):
        following: list[tuple[str, str | None]] = []
        for source, path in level:
            for module in _imported_modules(source, path, folder, root):
                if len(seen) >= _MAX_FOLLOWED:
                    return None
                if module in seen:
                    continue
                seen.add(module)
                head = _head(module)[:_MAX_BYTES].decode("utf-8", "replace")
                if any(m.startswith("megatron") for m in _imports(head)):
                    return os.path.relpath(module, root)
                following.append((head, module))
        level = following
    return None


def _imported_modules(source: str, path: str | None, folder: str, root: str) -> list[str]:
    """The files of the tree a module's imports name: absolute ones from the script's folder, relative ones (in a
    module, not the script) from the module's package."""
    found = [module for dotted in _dotted_imports(source) if (module := _tree_module(dotted, folder, root))]
    if path is not None:
        package = os.path.dirname(path)
        for m in _RELATIVE_IMPORT.finditer(source):
            base = package
            for _ in range(len(m.group(1)) - 1):  # each dot past the first: the package above
                base = os.path.dirname(base)
            names = [m.group(2)] if m.group(2) else [n.strip().split()[0] for n in m.group(3).split(",") if n.strip()]
            found += [module for name in names if (module := _file_of(os.path.join(base, *name.split(".")), root))]
    return found


def _from_folder(program: str, cwd: str | None, root: str, launch_file: str) -> list[str]:
    """Where a relative entry script lies when the launch ran in `cwd` (a `cd` before it): the folder itself inside
    the tree, else the tails of the path inside the tree (plint.reading.shell.source_path.tail_places)."""
    from plint.reading.shell.source_path import tail_places

    if not cwd or not os.path.isabs(cwd):
        return []
    joined = os.path.normpath(os.path.join(cwd, program))
    if _inside(joined, root):
        return [joined]
    return [path for path, _ in tail_places(joined, launch_file)]


def _tree_module(dotted: str, folder: str, root: str) -> str | None:
    """The file of the checked tree a dotted import names, from the script's folder; None for megatron itself and
    for a module outside the tree."""
    if dotted.split(".")[0].startswith("megatron"):
        return None
    return _file_of(os.path.join(folder, *dotted.split(".")), root)


def _file_of(base: str, root: str) -> str | None:
    """base.py or base/__init__.py, the module a dotted path names, when it is a file inside root."""
    return next(
        (f for f in (base + ".py", os.path.join(base, "__init__.py")) if _inside(f, root) and probe(Path(f).is_file)),
        None,
    )


def _checkout(folder: str, root: str) -> tuple[str | None, str | None]:
    """(which Megatron, why) when a `megatron/` package lies in folder or a folder above it inside root."""
    here = os.path.realpath(folder)
    for _ in range(_MAX_LEVELS):
        if not _inside(here, root):
            break
        package = os.path.join(here, "megatron")
        if probe(Path(package).is_dir) and _inside(package, root):
            where = os.path.relpath(package, root)
            pipe = os.path.join(package, "model", "gpt_model.py")
            if probe(Path(here, "examples_deepspeed").is_dir):
                return "megatron-deepspeed", f"{where}/ lies beside examples_deepspeed/ (Megatron-DeepSpeed)"
            if probe(Path(pipe).is_file) and _inside(pipe, root) and b"GPTModelPipe" in _head(pipe):
                return "megatron-deepspeed", f"{where}/model/gpt_model.py defines GPTModelPipe (Megatron-DeepSpeed)"
            return "megatron", f"the repository holds the megatron package ({where}/)"
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return None, None


def _head(path: str) -> bytes:
    try:
        if os.path.getsize(path) > 4 * _MAX_BYTES:
            return b""
        return read_bytes(path)
    except OSError:
        return b""


def absent_entry(program: str | None, is_module: bool, script: EntryScript | None, launch_file: str) -> str | None:
    """The entry script the launch names with its folder (`${SCRIPT_DIR}/pretrain_gpt.py`), inside the checked tree,
    where the tree holds no such file: its own flags are unknown. A bare `pretrain_gpt.py` is the core entry point
    of whatever checkout the job runs in, and a path outside the tree (the author's checkout) is read from its
    tail in the tree."""
    if not program or "/" not in program or is_module or script is None or script.path is not None:
        return None
    if os.path.isabs(program) and not _inside(program, tree_root(launch_file)):
        return None
    return program


def read_entry_script(
    program: str | None, is_module: bool, launch_file: str, cwd: str | None = None
) -> EntryScript | None:
    """The entry script `program` (a path as the launch wrote it, relative to the folder a `cd` moved to, `cwd`, to the
    launch file's folder or, as a script run from the repository root would, to a folder above it) and its
    repository; None when neither the script nor a Megatron checkout around the launch is found inside the checked
    tree. A `cd` to an absolute folder outside the tree (the author's checkout) is looked for by its tails inside it."""
    root = tree_root(launch_file)
    base = os.path.dirname(os.path.realpath(launch_file)) or "."
    script = None
    if program and not is_module and program.endswith(".py"):
        candidates = [program] if os.path.isabs(program) else _from_folder(program, cwd, root, launch_file)
        here = base
        for _ in range(_MAX_LEVELS):
            if not os.path.isabs(program):
                candidates.append(os.path.join(here, program))
            if here == root or not _inside(here, root):
                break
            here = os.path.dirname(here)
        script = next((c for c in candidates if _inside(c, root) and probe(Path(c).is_file)), None)
    modules: frozenset[str] = frozenset()
    trains = hf_trainer = torch_data_parallel = False
    through = None
    checkpoint_io = False
    if script is not None:
        raw = _head(script)[:_MAX_BYTES]
        modules = _imports(raw.decode("utf-8", "replace"))
        if not any(m.startswith("megatron") for m in modules):
            through = megatron_through(raw.decode("utf-8", "replace"), os.path.dirname(script), root)
        trains = _TRAINS.search(raw) is not None
        checkpoint_io = _CHECKPOINT_IO.search(raw) is not None and _INITIALIZES.search(raw) is None
        hf_trainer = bool(modules & {"transformers", "trl"}) and _HF_TRAINER.search(raw) is not None
        torch_data_parallel = (
            "torch" in modules
            and _TORCH_DATA_PARALLEL.search(raw) is not None
            and _TORCH_MODEL_PARALLEL.search(raw) is None
        )
    tree, note = _checkout(os.path.dirname(script) if script else base, root)
    if script is None and tree is None:
        return None
    return EntryScript(
        os.path.relpath(script, root) if script else None,
        modules,
        tree,
        note,
        trains,
        hf_trainer,
        torch_data_parallel,
        through,
        checkpoint_io,
    )
