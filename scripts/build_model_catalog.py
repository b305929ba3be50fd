"""Build schemas/model_catalog.json: the shapes of public model architectures, by name.

    python scripts/build_model_catalog.py [--check] [OUT]

Each scripts/model_facts/<name>.yaml holds the keys of one model's public config.json that give its shape, where
they were read (a repository, commit and path that vendor the file, or the paper that publishes the numbers), and
the name patterns that find it (`llama-?2-7b`, `vicuna-7b-v1\\.5`: regular expressions over a lower-cased name whose
`_` and spaces read as `-`). The shape is computed here with plint.catalog.models.shape_from_config, the same
function that reads a config.json found in a checked tree, so the catalog and a local config agree. A
vision-language model names its language model's data file (`language_model: qwen2.5-7b`) for its shape and says
what else it holds (`unmodelled:`, the encoders beside it), which the cost model does not count. `--check`
exits 1 when the committed catalog differs from what the facts build.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "scripts" / "model_facts"
DEFAULT_OUT = ROOT / "schemas" / "model_catalog.json"


def _source(source: dict) -> str:
    where = " ".join(str(source[k]) for k in ("repo", "path") if source.get(k))
    if source.get("commit"):
        where += f"@{source['commit'][:12]}"
    if source.get("entry"):
        where += f" [{source['entry']}]"
    return "; ".join(x for x in (source.get("paper"), where) if x)


def build() -> dict:
    sys.path.insert(0, str(ROOT))
    from plint.catalog.models import shape_from_config

    models = []
    for path in sorted(FACTS.glob("*.yaml")):
        facts = yaml.safe_load(path.read_text())
        if "language_model" in facts:  # a vision-language model: its language model's shape, the rest named
            facts["config"] = yaml.safe_load((FACTS / f"{facts['language_model']}.yaml").read_text())["config"]
        shape = shape_from_config(facts["config"])
        if shape is None:
            raise SystemExit(f"{path}: the config gives no layers, width or heads")
        for pattern in facts["names"]:
            re.compile(pattern)
            if "_" in pattern or pattern != pattern.lower():  # names are matched lower-cased, `_` read as `-`
                raise SystemExit(f"{path}: the name pattern {pattern!r} must be lower case without `_`")
        models.append(
            {
                "name": facts["name"],
                "family": facts["family"],
                "hub": facts["hub"],
                "names": facts["names"],
                "shape": shape,
                "source": _source(facts["source"]),
                **({"note": facts["note"]} if facts.get("note") else {}),
                **({"unmodelled": facts["unmodelled"]} if facts.get("unmodelled") else {}),
            }
        )
    return {
        "about": "Built by scripts/build_model_catalog.py from scripts/model_facts/*.yaml; do not edit.",
        "models": models,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(DEFAULT_OUT))
    parser.add_argument("--check", action="store_true", help="fail when the committed catalog is out of date")
    args = parser.parse_args()
    text = json.dumps(build(), indent=1, sort_keys=False) + "\n"
    out = Path(args.out)
    if args.check:
        if not out.exists() or out.read_text() != text:
            raise SystemExit(f"{out} is out of date: run python scripts/build_model_catalog.py")
        return
    out.write_text(text)
    print(f"wrote {out} ({len(json.loads(text)['models'])} models)")


if __name__ == "__main__":
    main()
