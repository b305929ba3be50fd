"""Build schemas/megatron_fork_flags.json: the option strings each widely used Megatron fork's parser
defines, read statically from its public source (plint.catalog.parser_source; facts only, no code).

    python scripts/build_fork_flags.py \\
        --fork bigcode-project/Megatron-LM=/path/to/checkout@COMMIT \\
        --fork alibaba/Pai-Megatron-Patch=/path/to/checkout/megatron_patch/arguments.py@COMMIT ...

A fork is a checkout holding megatron/arguments.py (or megatron/training/arguments.py), or a parser file
itself (a patch package's extra arguments). plint uses the lists to name the forks that define a flag its
assumed release does not know (PL501 as a warning), and the choices to name those that accept a value it
does not (PL506 as a warning).
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

from plint.catalog.parser_source import ParserSource, _collect, _Collected, _parse, find_parser

OUT = Path(__file__).resolve().parent.parent / "schemas" / "megatron_fork_flags.json"


def fork_flags(place: Path) -> tuple[str, list[str], dict[str, list[str]]]:
    if place.is_file():
        parser = ParserSource(place.parent.parent, place)  # its file named from the package folder up
    else:
        parser = find_parser(place, place)
        if parser is None:
            raise SystemExit(f"{place}: no megatron/arguments.py or megatron/training/arguments.py")
    module: ast.Module | None = _parse(parser.path)
    if module is None:
        raise SystemExit(f"{parser.path}: not parseable Python")
    collected = _Collected()
    _collect(module, collected)
    flags = sorted({o for row in collected.actions for o in row[0] if o.startswith("--")})
    # the choices a fork's parser gives an option (row[6]): a value the core release lacks may be its own
    choices = {o: list(row[6]) for row in collected.actions if row[6] for o in row[0] if o.startswith("--")}
    return parser.path.relative_to(parser.tree).as_posix(), flags, dict(sorted(choices.items()))


def fork_arguments(description: str, out: Path) -> argparse.Namespace:
    """The command line of this script and scripts/build_fork_parsers.py: forks as OWNER/NAME=PATH@COMMIT, and --out."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--fork", action="append", required=True, metavar="OWNER/NAME=PATH@COMMIT")
    ap.add_argument("--out", type=Path, default=out)
    return ap.parse_args()


def fork_places(specs: list[str]) -> list[tuple[str, Path, str]]:
    """(owner/name, checkout or parser file, commit) of each OWNER/NAME=PATH@COMMIT."""
    out = []
    for spec in specs:
        name, _, rest = spec.partition("=")
        where, _, commit = rest.partition("@")
        out.append((name, Path(where), commit))
    return out


def main() -> None:
    args = fork_arguments(__doc__.splitlines()[0], OUT)
    doc = {}
    for name, where, commit in fork_places(args.fork):
        file, flags, choices = fork_flags(where)
        doc[name] = {
            "repo": f"https://github.com/{name}",
            "commit": commit or None,
            "file": file,
            "flags": flags,
            "choices": choices,
        }
        print(f"{name}: {len(flags)} options from {file}")
    args.out.write_text(
        json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n", "utf-8"
    )  # one line, as the catalogs


if __name__ == "__main__":
    main()
