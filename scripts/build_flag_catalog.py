"""Build plint's trainer flag catalog (schemas/megatron_flags/) from the argparse dumps in
shared/data/megatron-flags: one compact JSON per release plus an index.

    python scripts/build_flag_catalog.py [SOURCE_DIR] [--out DIR]

Each dump was taken from the trainer's real parser (see that folder's README); this script only
reshapes it: option strings, dest, kind, type, default, choices, nargs per action.
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
KINDS = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
         "_HelpAction": "help", "_StoreConstAction": "store_const", "_AppendAction": "append",
         "BooleanOptionalAction": "boolean_optional", "_CountAction": "count"}
FORKS = {"deepspeedai-megatron-deepspeed": ("megatron-deepspeed", "megatron-deepspeed"),
         "bigscience-megatron-deepspeed": ("bigscience", "megatron-deepspeed")}


def release_name(stem: str) -> tuple[str, str]:
    """(release name, flavour) for a dump's file stem."""
    repo, _, ref = stem.partition("@")
    if repo in FORKS:
        return FORKS[repo]
    m = re.match(r"core_v(\d+)\.(\d+)\.\d+", ref)
    if m:
        return f"{m.group(1)}.{m.group(2)}", "megatron"
    return ref.split("-")[0], "megatron"


def literal(default_repr: str | None):
    """The default as a value when it is a plain Python literal, else None."""
    if default_repr is None:
        return None
    try:
        return ast.literal_eval(default_repr)
    except (ValueError, SyntaxError):
        return None


def convert(records: list[dict]) -> list[list]:
    out = []
    for r in records:
        kind = KINDS.get(r.get("action") or "", "other") if r.get("action") else "store"
        out.append([r["flags"], r.get("dest"), kind, r.get("type"), r.get("default"),
                    literal(r.get("default")), r.get("choices"), r.get("nargs")])
    return out


def build(source: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    index: dict = {"releases": {}, "latest": {}}
    written = []
    for dump in sorted(source.glob("*.json")):
        if dump.name.endswith(".meta.json"):
            continue
        meta_path = dump.with_name(dump.stem + ".meta.json")
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        name, flavour = release_name(dump.stem)
        doc = {
            "release": name, "flavour": flavour, "repo": meta.get("repo"), "ref": meta.get("ref"),
            "commit": meta.get("commit"), "date": meta.get("date"),
            "flags_only": bool(meta.get("flags_only")), "allow_abbrev": bool(meta.get("allow_abbrev")),
            "extra_flags": meta.get("defined_in_source_but_absent_here", []),
            "fields": ["flags", "dest", "kind", "type", "default_repr", "default", "choices", "nargs"],
            "actions": convert(json.loads(dump.read_text())),
        }
        target = out / f"{name}.json"
        target.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=False) + "\n")
        written.append(target)
        index["releases"][name] = {"file": target.name, "flavour": flavour, "date": doc["date"],
                                   "ref": doc["ref"], "commit": doc["commit"], "flags_only": doc["flags_only"]}
    numbered = sorted((n for n, r in index["releases"].items() if r["flavour"] == "megatron"
                       and re.fullmatch(r"\d+\.\d+", n)), key=lambda n: tuple(map(int, n.split("."))))
    index["latest"] = {"megatron": numbered[-1] if numbered else None,
                       "megatron-deepspeed": "megatron-deepspeed"}
    index_path = out / "index.json"
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
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
