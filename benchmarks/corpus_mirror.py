"""Extract the labelled repositories of the real-file corpus into a local mirror folder.

For every ``benchmarks/corpus/labels/<owner>+<name>.yaml`` this writes the repository's whole tree at
the labelled commit to ``MIRROR/<owner>+<name>/<name>/`` (sourced files, JSON configs and the trainer's
source sit beside each launch file, as they do in a user's checkout). The trees come from bare git
snapshots fetched beforehand under ``/work/.mirror/<owner>+<name>/``; nothing here reaches the network
and nothing of the extracted files is ever committed (they are other people's code).

Idempotent: a tree already extracted at the same commit is left alone (a ``.corpus-commit`` stamp
records which commit a folder holds).

    python benchmarks/corpus_mirror.py [--labels benchmarks/corpus/labels] [--mirror /work/corpus/mirror]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_LABELS = HERE / "corpus" / "labels"
DEFAULT_MIRROR = Path("/work/corpus/mirror")
DEFAULT_SNAPSHOTS = Path("/work/.mirror")
STAMP = ".corpus-commit"


@dataclass(frozen=True)
class Wanted:
    repo: str  # owner/name
    commit: str

    @property
    def folder(self) -> str:
        return self.repo.replace("/", "+")

    @property
    def checkout(self) -> str:
        """Where the tree is extracted: in a folder named as `git clone` names it (the repository's name), so that a
        path the authors wrote into their own checkout (`~/src/NAME/run.sh`) means for plint what it means for a
        user who checks a clone."""
        return f"{self.folder}/{self.repo.split('/', 1)[1]}"


def wanted_trees(labels_dir: Path) -> list[Wanted]:
    """The (repo, commit) pairs the label files name, one per label file."""
    wanted: list[Wanted] = []
    for path in sorted(labels_dir.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text()) or {}
        repo, commit = doc.get("repo"), doc.get("commit")
        if not repo or not commit:
            print(f"{path.name}: no repo/commit, skipped", file=sys.stderr)
            continue
        wanted.append(Wanted(str(repo), str(commit)))
    return wanted


def find_git_dir(snapshot: Path) -> Path | None:
    """The bare git directory inside a fetched snapshot (it holds HEAD and objects/)."""
    if (snapshot / "HEAD").is_file() and (snapshot / "objects").is_dir():
        return snapshot
    for head in sorted(snapshot.rglob("HEAD")):
        candidate = head.parent
        if (candidate / "objects").is_dir() and (candidate / "refs").exists():
            return candidate
    return None


def missing_blobs(git_dir: Path, commit: str) -> list[str] | None:
    """The paths of ``commit`` whose blobs the snapshot lacks (it keeps no file of 4 MiB or more);
    None where the commit's tree cannot be listed."""
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit], capture_output=True, check=False
    )
    if listing.returncode != 0:
        return None
    blobs: list[tuple[str, str]] = []
    for entry in listing.stdout.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            blobs.append((parts[2].decode(), name.decode(errors="surrogateescape")))
    check = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch-check"],
        input="".join(sha + "\n" for sha, _ in blobs).encode(),
        capture_output=True,
        check=False,
    )
    answers = check.stdout.decode().splitlines()
    return [name for (_, name), answer in zip(blobs, answers) if answer.endswith(" missing")]


def archive_tree(git_dir: Path, commit: str, out: Path, excluded: list[str]) -> subprocess.CompletedProcess:
    pathspecs = [f":(exclude,literal){name}" for name in excluded]
    with out.open("wb") as sink:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", "archive", commit, "--", ".", *pathspecs]
            if pathspecs
            else ["git", f"--git-dir={git_dir}", "archive", commit],
            stdout=sink,
            stderr=subprocess.PIPE,
            check=False,
        )


def _inside_tree(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """tarfile's "data" filter, except that a link it refuses (to an absolute path, or out of the tree through
    `..`) is left out rather than failing the whole tree: a launch file is never such a link."""
    try:
        return tarfile.data_filter(member, path)
    except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
        return None


def extract(want: Wanted, snapshots: Path, mirror: Path) -> str:
    """Extract one tree; returns a one-line status."""
    dest = mirror / want.checkout
    stamp = dest / STAMP
    if stamp.is_file() and stamp.read_text().strip() == want.commit:
        return "up to date"
    git_dir = find_git_dir(snapshots / want.folder)
    if git_dir is None:
        return f"no snapshot under {snapshots / want.folder} (fetch github:{want.repo} first)"
    with tempfile.TemporaryDirectory(dir=mirror) as tmp:
        archive = Path(tmp) / "tree.tar"
        # A snapshot lacks files of 4 MiB and more (images, data sets), and git archive stops at the
        # first missing blob: leave those paths out (none is a launch file or a config it reads).
        missing = missing_blobs(git_dir, want.commit)
        if missing is None:
            return f"cannot list {want.commit} in {git_dir}"
        done = archive_tree(git_dir, want.commit, archive, missing)
        if done.returncode != 0:
            return f"git archive failed: {done.stderr.decode(errors='replace').strip()}"
        staging = Path(tmp) / "tree"
        staging.mkdir()
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter=_inside_tree)
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(dest)
    stamp.write_text(want.commit + "\n")
    return "extracted"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument(
        "--snapshots",
        type=Path,
        default=DEFAULT_SNAPSHOTS,
        help="where fetched bare snapshots live (default /work/.mirror)",
    )
    args = parser.parse_args(argv)
    args.mirror.mkdir(parents=True, exist_ok=True)
    failed = 0
    for want in wanted_trees(args.labels):
        status = extract(want, args.snapshots, args.mirror)
        failed += status not in ("extracted", "up to date")
        print(f"{want.repo}@{want.commit[:12]}: {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
