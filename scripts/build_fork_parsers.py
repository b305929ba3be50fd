"""Build schemas/megatron_fork_parsers.json: the whole catalog document (option strings, dest, kind, type, default,
choices, nargs) of forks whose launches spell Megatron's flags their own way, read statically from their public
parser (plint.catalog.parser_source.build_document; facts only, no code). plint reads such a launch with the fork's
parser when the fork is not in the checked tree (catalog.forks.fork_by_spelling): epfLLM/Megatron-LLM's
`--tensor_model_parallel_size` is no flag of any Megatron-LM release.

    python scripts/build_fork_parsers.py --fork epfLLM/Megatron-LLM=/path/to/checkout@COMMIT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from plint.catalog.parser_source import build_document, find_parser

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_fork_flags import fork_arguments, fork_places  # noqa: E402  the same command line as the flag lists

OUT = Path(__file__).resolve().parent.parent / "schemas" / "megatron_fork_parsers.json"


def main() -> None:
    args = fork_arguments(__doc__.splitlines()[0], OUT)
    out = {}
    for name, where, commit in fork_places(args.fork):
        parser = find_parser(where, where)
        if parser is None:
            raise SystemExit(f"{where}: no megatron/arguments.py or megatron/training/arguments.py")
        doc = build_document(parser)
        doc.update(repo=f"https://github.com/{name}", commit=commit or None)
        out[name] = doc
        print(f"{name}: {len(doc['actions'])} actions from {doc['source']}")
    args.out.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n", "utf-8")  # one line


if __name__ == "__main__":
    main()
