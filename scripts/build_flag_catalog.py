"""Build plint's trainer flag catalog (schemas/megatron_flags/) from the argparse dumps in
shared/data/megatron-flags: one compact JSON per release plus index.json.

    python scripts/build_flag_catalog.py [SOURCE_DIR] [--out DIR]

Each dump was taken from the trainer's real parser (see that folder's README); this script only
reshapes it: option strings, dest, kind, type, default (repr and, for plain literals, the value),
choices and nargs per action.

Three Megatron-LM releases (0.4, 0.6, 0.11) have names only (`flags_only` in their meta). Their rows
borrow dest/kind/type/default/choices/nargs from the nearest release with a full table (the older
one first) and say which (`shape_from`); names the README says such lists miss (-h/--help, and for
0.11 the names both neighbouring full tables have) are added with `inferred` set.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "megatron-flags"
DEFAULT_OUT = ROOT / "schemas" / "megatron_flags"

# argparse action class -> kind. BooleanOptionalAction gives `--x` (True) and `--no-x` (False).
KINDS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_HelpAction": "help",
    "BooleanOptionalAction": "boolean_optional",
}
FORKS = {
    "deepspeedai-megatron-deepspeed": ("megatron-deepspeed", "megatron-deepspeed"),
    "bigscience-megatron-deepspeed": ("bigscience", "megatron-deepspeed"),
}
FIELDS = ["flags", "dest", "kind", "type", "default_repr", "default", "choices", "nargs"]
BORROWED_FIELDS = FIELDS + ["shape_from", "inferred"]


def release_name(stem: str) -> tuple[str, str]:
    """(release name, flavour) for a dump's file stem: `megatron-lm@core_v0.16.0` -> ("0.16", "megatron")."""
    repo, _, ref = stem.partition("@")
    if repo in FORKS:
        return FORKS[repo]
    m = re.match(r"core_v(\d+)\.(\d+)\.\d+$", ref)
    if m:
        return f"{m.group(1)}.{m.group(2)}", "megatron"
    return ref.split("-")[0], "megatron"  # main-d98e8a6 -> main


def literal(default_repr: str | None):
    """(is a plain literal, value): the default when its repr is a JSON-representable Python literal."""
    if default_repr is None:
        return False, None
    try:
        value = ast.literal_eval(default_repr)
        json.dumps(value, allow_nan=False)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    return True, value


def command_line_choices(choices: list | None, type_name: str | None) -> list | None:
    """The choices as a user types them. argparse converts a value with `type` before it checks
    `choices`, and the dumps hold str() of each choice: for an Enum-typed flag (Megatron's
    `--attention-backend`: type looks the name up, `AttnBackend[name]`; choices=list(AttnBackend)) that is
    `AttnBackend.fused`, while the command line says `fused`. Such choices are stored as member names."""
    if not choices or type_name in (None, "str", "int", "float"):
        return choices
    members = [re.fullmatch(r"([A-Z]\w*)\.(\w+)", c) if isinstance(c, str) else None for c in choices]
    if all(members) and len({m.group(1) for m in members}) == 1:
        return [m.group(2) for m in members]
    return choices


def convert(record: dict) -> list:
    action = record.get("action")
    kind = KINDS.get(action, "other") if action else "unknown"
    _, value = literal(record.get("default"))
    return [
        record["flags"],
        record.get("dest"),
        kind,
        record.get("type"),
        record.get("default"),
        value,
        command_line_choices(record.get("choices"), record.get("type")),
        record.get("nargs"),
    ]


def _read(source: Path) -> list[dict]:
    out = []
    for dump in sorted(source.glob("*.json")):
        if dump.name.endswith(".meta.json"):
            continue
        meta_path = dump.with_name(dump.stem + ".meta.json")
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        name, flavour = release_name(dump.stem)
        out.append({"name": name, "flavour": flavour, "meta": meta, "records": json.loads(dump.read_text())})
    return out


def _by_option(rows: list[list]) -> dict[str, list]:
    return {flag: row for row in rows for flag in row[0]}


def _borrow(release: dict, full: list[dict]) -> list[list]:
    """Rows of a names-only release with their shape taken from the nearest full tables."""
    date = release["meta"].get("date") or ""
    older = [r for r in full if (r["meta"].get("date") or "") < date]
    newer = [r for r in full if (r["meta"].get("date") or "") > date]
    before = older[-1] if older else None
    after = newer[0] if newer else None
    tables = [(r["name"], _by_option(r["rows"])) for r in (before, after) if r is not None]
    rows, listed = [], set()
    for record in release["records"]:
        for flag in record["flags"]:
            listed.add(flag)
            source = next(((name, t[flag]) for name, t in tables if flag in t), None)
            if source is None:
                rows.append([[flag], None, "unknown", None, None, None, None, None, None, False])
            else:
                name, row = source
                rows.append([[flag]] + row[1:] + [name, False])
    # The name lists miss -h/--help, and (between two full tables) names both neighbours have.
    extra: dict[str, tuple[str, list]] = {"-h": ("", ["-h"]), "--help": ("", ["--help"])}
    if before is not None and after is not None:
        old, new = tables[0][1], tables[1][1]
        extra.update({flag: (before["name"], old[flag]) for flag in old if flag in new})
    for flag, (name, row) in sorted(extra.items()):
        if flag in listed:
            continue
        if flag in ("-h", "--help"):
            rows.append([[flag], "help", "help", None, "'==SUPPRESS=='", "==SUPPRESS==", None, 0, None, True])
        else:
            rows.append([[flag]] + row[1:] + [name, True])
    return rows


def build(source: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    releases = _read(source)
    for r in releases:
        r["rows"] = [convert(rec) for rec in r["records"]] if not r["meta"].get("flags_only") else None
    megatron_full = sorted(
        (r for r in releases if r["flavour"] == "megatron" and r["rows"] is not None),
        key=lambda r: r["meta"].get("date") or "",
    )
    index: dict = {"releases": {}, "latest": {}}
    written = []
    for r in sorted(releases, key=lambda r: (r["flavour"], r["meta"].get("date") or "")):
        meta, flags_only = r["meta"], bool(r["meta"].get("flags_only"))
        rows = _borrow(r, megatron_full) if flags_only else r["rows"]
        doc = {
            "release": r["name"],
            "flavour": r["flavour"],
            "repo": meta.get("repo"),
            "ref": meta.get("ref") or meta.get("branch"),
            "commit": meta.get("commit"),
            "date": meta.get("date"),
            "flags_only": flags_only,
            "allow_abbrev": bool(meta.get("allow_abbrev")),
            "extra_flags": meta.get("defined_in_source_but_absent_here", []),
            "fields": BORROWED_FIELDS if flags_only else FIELDS,
            "actions": rows,
        }
        target = out / f"{r['name']}.json"
        target.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        written.append(target)
        index["releases"][r["name"]] = {
            "file": target.name,
            "flavour": r["flavour"],
            "repo": doc["repo"],
            "ref": doc["ref"],
            "commit": doc["commit"],
            "date": doc["date"],
            "flags_only": flags_only,
        }
    numbered = sorted(
        (n for n, info in index["releases"].items() if info["flavour"] == "megatron" and re.fullmatch(r"\d+\.\d+", n)),
        key=lambda n: tuple(map(int, n.split("."))),
    )
    forks = sorted(
        (n for n, info in index["releases"].items() if info["flavour"] == "megatron-deepspeed"),
        key=lambda n: index["releases"][n]["date"] or "",
    )
    snapshots = [n for n, info in index["releases"].items() if info["flavour"] == "megatron" and n not in numbered]
    # "latest" is the newest tagged release (what users pin); "snapshot" an untagged development head
    index["latest"] = {
        "megatron": numbered[-1] if numbered else None,
        "megatron-deepspeed": forks[-1] if forks else None,
        "snapshot": snapshots[0] if snapshots else None,
    }
    index["order"] = {"megatron": numbered + snapshots, "megatron-deepspeed": forks}
    index_path = out / "index.json"
    index_path.write_text(json.dumps(index, separators=(",", ":"), sort_keys=True) + "\n")
    written.append(index_path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    for path in build(args.source, args.out):
        print(path)


if __name__ == "__main__":
    main()
