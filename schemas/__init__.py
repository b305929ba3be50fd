"""JSON schemas and data catalogs shipped with plint."""

import os


def read_json(*parts: str):
    """A JSON file shipped here, decoded (a path under this folder, in parts)."""
    import json  # on use: json costs start-up time

    with open(os.path.join(os.path.dirname(__file__), *parts)) as f:  # as Path.read_text() reads it
        return json.loads(f.read())
