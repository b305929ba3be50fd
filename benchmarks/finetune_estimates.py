"""How often plint knows enough about a fine-tuning launch to estimate its memory.

    python benchmarks/finetune_estimates.py [--root DIR] [--show] PATH...
    python benchmarks/finetune_estimates.py [--show] --corpus LABELS MIRROR [--corpus LABELS MIRROR]...

Every shell launch file under PATH (`*.sh`, `*.slurm`, `*.sbatch`) that names the model a fine-tuning script
trains (`--model_name_or_path`, DeepSpeed-Chat's `--actor_model_name_or_path`) is checked; for each launch plint
reads, the estimate is present or not, and when not, the first reason: the model's shape unknown (a name
outside the catalog, a path with no config.json in the tree), or the launch itself (GPU count, batch,
sequence length or precision unknown). Prints per-file lines with --show, then the totals. Files of other
people's repositories are read where they lie (a local checkout or mirror) and never copied.

With --corpus, the launches are those of a labelled corpus (benchmarks/corpus.py's labels and mirror): every file
labelled `launches: true` that names a model, checked with its repository's mirror as the root.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAMES_A_MODEL = re.compile(r"--(?:actor_)?model_name_or_path\b")
SUFFIXES = (".sh", ".slurm", ".sbatch")
# what an estimate needs, in the order a reason is given (plint.cost.layout_estimate._SHAPE and _NEEDED)
NEEDED = (
    "model.num_layers",
    "model.hidden_size",
    "model.num_attention_heads",
    "model.seq_length",
    "cluster.world_size",
    "batch.micro",
    "batch.global",
    "precision",
    "parallel.zero_stage",
)


def launch_files(paths: list[str]) -> list[Path]:
    found = []
    for given in paths:
        path = Path(given)
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES)
        for file in candidates:
            try:
                if NAMES_A_MODEL.search(file.read_text(errors="replace")):
                    found.append(file)
            except OSError:
                continue
    return found


def corpus_launches(labels: str, mirror: str) -> list[tuple[Path, str]]:
    """(file, its repository's root) for each labelled launch of a corpus that names a model."""
    import yaml

    found = []
    for label_file in sorted(Path(labels).glob("*.yaml")):
        label = yaml.safe_load(label_file.read_text())
        root = Path(mirror) / label["repo"].replace("/", "+")
        for entry in label.get("files") or []:
            file = root / entry["path"]
            if entry.get("launches") and file.is_file() and NAMES_A_MODEL.search(file.read_text(errors="replace")):
                found.append((file, str(root)))
    return found


def why_missing(layout) -> str:
    """The first field the estimate lacks, and why (its note)."""
    for key in NEEDED:
        value = layout.get(key)
        if value is None or value.value is None:
            if key.startswith("model.") and key != "model.seq_length":
                return "model shape unknown"
            return f"{key} unknown"
    return "estimate not made (see its notes)"


def measure(files: list[tuple[Path, str | None]]) -> list[tuple[Path, str]]:
    """For each (launch file, its checked tree or None for the file's folder): the outcome of each layout."""
    from plint.checking.check import CheckOptions, check_paths
    from plint.cost.layout_estimate import layout_estimate

    rows = []
    for file, root in files:
        try:
            (result,) = check_paths([file], CheckOptions(root=root or str(file.parent)))
        except Exception as error:  # a crash is a finding of its own, never hidden
            rows.append((file, f"crash: {type(error).__name__}"))
            continue
        layouts = [lay for lay in result.layouts if lay is not None]
        if not layouts:
            rows.append((file, "no launch read"))
            continue
        for layout in layouts:
            est = layout_estimate(layout)
            outcome = "estimate" if est is not None else why_missing(layout)
            rows.append(
                (
                    file,
                    outcome
                    if model_known(layout) or outcome == "model shape unknown"
                    else f"{outcome}; model shape unknown",
                )
            )
    return rows


def model_known(layout) -> bool:
    return all(
        layout.value(key) is not None for key in NEEDED if key.startswith("model.") and key != "model.seq_length"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument(
        "--corpus",
        nargs=2,
        action="append",
        default=[],
        metavar=("LABELS", "MIRROR"),
        help="the labelled launches of a corpus (repeatable)",
    )
    parser.add_argument("--root", help="the checked tree (default: each file's folder)")
    parser.add_argument("--show", action="store_true", help="one line per launch")
    args = parser.parse_args()
    if not args.paths and not args.corpus:
        parser.error("give PATH or --corpus LABELS MIRROR")
    files = [(file, args.root) for file in launch_files(args.paths)]
    files += [pair for labels, mirror in args.corpus for pair in corpus_launches(labels, mirror)]
    rows = measure(files)
    if args.show:
        for file, outcome in rows:
            print(f"{outcome:32} {file}")
    counts = Counter(outcome for _, outcome in rows)
    launches = [o for o in counts.elements() if o not in ("no launch read",) and not o.startswith("crash")]
    present = counts["estimate"]
    print(
        f"{len({f for f, _ in rows})} files, {len(launches)} launches read: estimate present for {present} "
        f"({100 * present / max(1, len(launches)):.0f}%)"
    )
    shape_unknown = sum(1 for o in launches if "model shape unknown" in o)
    print(
        f"  model shape known for {len(launches) - shape_unknown} "
        f"({100 * (len(launches) - shape_unknown) / max(1, len(launches)):.0f}%)"
    )
    for outcome, n in counts.most_common():
        if outcome != "estimate":
            print(f"  {n:4}  {outcome}")


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
