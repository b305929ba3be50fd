"""Measure plint's reader on real launch files against hand-written labels.

Each ``benchmarks/corpus/labels/<owner>+<name>.yaml`` names a repository, the commit read, and for
each launch file the layout fields a careful reader gets (see benchmarks/corpus/README.md). This runs
plint on every labelled file the way a user would (``python -m plint check --format json FILE`` in a
subprocess, cwd = the repository's folder in the mirror that ``corpus_mirror.py`` extracts), compares
the first layout with the labels and prints, per file, ``right/total`` and each mismatch, then the
totals: fields right, files that crashed (non-JSON output or an exit code other than 0/1), every
error-level finding for a human to judge, and the silent files (they launch, plint reads no layout and
says nothing about it).

    python benchmarks/corpus.py --mirror /work/corpus/mirror [--labels DIR] [--show-errors] [--json OUT]

A label may name its ``family`` (hf-trainer, rlhf, multimodal, moe, megatron-fork, hpc-slurm,
deepspeed-json): the totals are then also given per family.

Scoring rules (the scorer is ``score_file``; the README says why):
- a field labelled ``null`` is right only where plint's value is null too (a default is a guess);
- a file labelled ``launches: false`` is right (one point) where plint's layout is null;
- a launching file where plint gives no layout scores every labelled field wrong;
- unlabelled fields are not scored;
- ``entrypoint`` compares file names only (``$MEGATRON_PATH/pretrain_gpt.py`` is ``pretrain_gpt.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_LABELS = HERE / "corpus" / "labels"
TIMEOUT_S = 30
NO_LAUNCH_CODE = "PL005"  # "no-launch-found": the info finding that explains an empty reading

# The layout fields a label may carry (dotted JSON names of files[0].layout).
LABEL_FIELDS = (
    "launcher",
    "scheduler",
    "trainer",
    "entrypoint",
    "cluster.nnodes",
    "cluster.gpus_per_node",
    "cluster.world_size",
    "parallel.tp",
    "parallel.pp",
    "parallel.vpp",
    "parallel.cp",
    "parallel.ep",
    "parallel.dp",
    "parallel.sequence_parallel",
    "parallel.distributed_optimizer",
    "parallel.zero_stage",
    "batch.micro",
    "batch.global",
    "batch.grad_accum",
    "model.num_layers",
    "model.hidden_size",
    "model.ffn_hidden_size",
    "model.num_attention_heads",
    "model.num_query_groups",
    "model.seq_length",
    "precision",
    "recompute.granularity",
)


@dataclass
class FileLabel:
    repo: str
    path: str
    launches: bool
    fields: dict[str, Any] = field(default_factory=dict)
    layouts: int | None = None
    notes: str = ""
    family: str = ""  # what kind of launch (hf-trainer, rlhf, hpc-slurm...): scores are also given per family

    @property
    def folder(self) -> str:
        return self.repo.replace("/", "+")

    @property
    def checkout(self) -> str:
        """The tree's folder in the mirror, named as a clone is (corpus_mirror.Wanted.checkout)."""
        return f"{self.folder}/{self.repo.split('/', 1)[1]}"


@dataclass
class PlintRun:
    """What one plint subprocess gave back."""

    returncode: int | None  # None: timed out
    report: dict | None  # the parsed JSON, None where the output was not JSON
    output: str = ""  # stdout+stderr, kept for crashes

    @property
    def crashed(self) -> bool:
        return self.returncode not in (0, 1) or self.report is None


@dataclass
class FileScore:
    repo: str
    path: str
    right: int = 0
    total: int = 0
    mismatches: list[str] = field(default_factory=list)
    crash: str | None = None  # why the run gave no usable report
    crash_output: str = ""  # the tail of what the crashed run printed
    errors: list[str] = field(default_factory=list)  # error-level findings, "CODE file:line message"
    silent: bool = False
    layouts_label: int | None = None
    layouts_plint: int | None = None
    family: str = ""


def load_labels(labels_dir: Path) -> list[FileLabel]:
    labels: list[FileLabel] = []
    for path in sorted(labels_dir.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text()) or {}
        repo = str(doc["repo"])
        for entry in doc.get("files") or []:
            fields = dict(entry.get("fields") or {})
            unknown = sorted(set(fields) - set(LABEL_FIELDS))
            if unknown:
                raise ValueError(f"{path.name}: {entry['path']}: unknown label fields {unknown}")
            labels.append(
                FileLabel(
                    repo=repo,
                    path=str(entry["path"]),
                    launches=bool(entry.get("launches", True)),
                    fields=fields,
                    layouts=entry.get("layouts"),
                    notes=str(entry.get("notes") or ""),
                    family=str(entry.get("family") or ""),
                )
            )
    return labels


def run_plint(repo_dir: Path, rel_path: str, timeout: float = TIMEOUT_S) -> PlintRun:
    """Run plint as a user would, from the repository's root, on one file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLINT_")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "plint", "check", "--format", "json", rel_path],
            cwd=repo_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return PlintRun(None, None, f"timed out after {timeout:g} s")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = None
    return PlintRun(done.returncode, report, (done.stdout + done.stderr)[-4000:])


def _lookup(layout: dict, dotted: str) -> Any:
    node: Any = layout
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _same(label: Any, value: Any, name: str = "") -> bool:
    if name == "entrypoint" and isinstance(label, str) and isinstance(value, str):
        # The entry script is named by its file name: its directory ($MEGATRON_PATH/, ../../) varies.
        return PurePosixPath(label).name == PurePosixPath(value).name
    if label is None or value is None:
        return label is None and value is None
    if isinstance(label, bool) or isinstance(value, bool):
        return label is value
    if isinstance(label, (int, float)) and isinstance(value, (int, float)):
        return float(label) == float(value)
    return str(label).strip().lower() == str(value).strip().lower()


def _show(value: Any) -> str:
    return "null" if value is None else json.dumps(value) if isinstance(value, str) else str(value)


def score_file(label: FileLabel, run: PlintRun) -> FileScore:
    """Compare plint's first layout for one file with its label."""
    score = FileScore(label.repo, label.path, layouts_label=label.layouts, family=label.family)
    total = len(label.fields) if label.launches else 1
    score.total = total
    if run.crashed:
        score.crash = (f"exit {run.returncode}" if run.returncode is not None else "timeout") + (
            "" if run.report is not None else ", output is not JSON"
        )
        score.crash_output = run.output
        score.mismatches.append(f"crash ({score.crash}): every field counts wrong")
        return score
    entry = (run.report.get("files") or [{}])[0]
    layout = entry.get("layout")
    layouts = entry.get("layouts")
    score.layouts_plint = len(layouts) if isinstance(layouts, list) else (1 if layout else 0)
    diagnostics = entry.get("diagnostics") or []
    for d in diagnostics:
        if d.get("severity") == "error":
            score.errors.append(f"{d.get('code')} {d.get('path')}:{d.get('line')} {d.get('message')}")
    if not label.launches:
        if layout is None:
            score.right = 1
        else:
            score.mismatches.append(
                f"launches: label false, plint reads a launch (launcher {_show(layout.get('launcher'))}, "
                f"entrypoint {_show(layout.get('entrypoint'))})"
            )
        return score
    if layout is None:
        score.silent = not any(d.get("code") == NO_LAUNCH_CODE for d in diagnostics)
        score.mismatches.append("no layout: every labelled field counts wrong")
        return score
    provenance = layout.get("provenance") or {}
    for name, want in label.fields.items():
        got = _lookup(layout, name)
        origin = (provenance.get(name) or {}).get("origin", "?")
        if _same(want, got, name) or (want is None and origin == "assumed"):
            # a value plint prints as an assumption (origin "assumed", with its note) is the honest
            # "unknown" the label asks for: it is not passed off as a reading
            score.right += 1
            continue
        score.mismatches.append(f"{name}: label {_show(want)}, plint {_show(got)} (origin {origin})")
    return score


def score_corpus(labels: list[FileLabel], mirror: Path, timeout: float = TIMEOUT_S) -> list[FileScore]:
    scores: list[FileScore] = []
    for label in labels:
        repo_dir = mirror / label.checkout
        if not (repo_dir / label.path).is_file():
            score = FileScore(
                label.repo, label.path, total=len(label.fields) if label.launches else 1, family=label.family
            )
            score.crash = f"missing from the mirror: {repo_dir / label.path} (run corpus_mirror.py)"
            score.mismatches.append(score.crash)
            scores.append(score)
            continue
        scores.append(score_file(label, run_plint(repo_dir, label.path, timeout)))
    return scores


def render(scores: list[FileScore], show_crash_output: bool = False) -> str:
    lines: list[str] = []
    for s in scores:
        lines.append(f"{s.repo}:{s.path}  {s.right}/{s.total}")
        lines.extend(f"    {m}" for m in s.mismatches)
        if s.layouts_label is not None and s.layouts_plint is not None and s.layouts_label != s.layouts_plint:
            lines.append(f"    (not scored) layouts: label {s.layouts_label}, plint {s.layouts_plint}")
    right = sum(s.right for s in scores)
    total = sum(s.total for s in scores)
    pct = 100.0 * right / total if total else 0.0
    crashes = [s for s in scores if s.crash]
    errors = [(s, e) for s in scores for e in s.errors]
    silent = [s for s in scores if s.silent]
    perfect = sum(1 for s in scores if s.right == s.total and not s.crash)
    lines += [
        "",
        f"files: {len(scores)} ({perfect} fully right)",
        f"fields right: {right}/{total} ({pct:.1f}%)",
        f"tracebacks/timeouts/missing: {len(crashes)}",
    ]
    for s in crashes:
        lines.append(f"    {s.repo}:{s.path}: {s.crash}")
        if show_crash_output and s.crash_output:
            lines.extend(f"        | {line}" for line in s.crash_output.splitlines())
    lines.append(f"error-level findings: {len(errors)}")
    lines.extend(f"    {s.repo}:{s.path}: {e}" for s, e in errors)
    lines.append(f"silent files (launch, no layout, no {NO_LAUNCH_CODE}): {len(silent)}")
    lines.extend(f"    {s.repo}:{s.path}" for s in silent)
    lines.extend(render_families(scores))
    return "\n".join(lines)


def render_families(scores: list[FileScore]) -> list[str]:
    """Fields right per family, for labels that name one (nothing where none does)."""
    families = sorted({s.family for s in scores if s.family})
    if not families:
        return []
    lines = ["per family (files, fields right):"]
    for family in families:
        members = [s for s in scores if s.family == family]
        right, total = sum(s.right for s in members), sum(s.total for s in members)
        pct = 100.0 * right / total if total else 0.0
        lines.append(f"    {family}: {len(members)} files, {right}/{total} ({pct:.1f}%)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="folder corpus_mirror.py filled")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument(
        "--show-errors",
        action="store_true",
        help="print the output (traceback) of crashed runs too; error findings are always listed",
    )
    parser.add_argument("--json", type=Path, help="also write every file's score as JSON here")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    args = parser.parse_args(argv)
    labels = load_labels(args.labels)
    scores = score_corpus(labels, args.mirror, args.timeout)
    print(render(scores, show_crash_output=args.show_errors))
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in scores], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
