"""The flag catalog is built from the trainers' argparse dumps and stays in sync with them."""

import json
from pathlib import Path

import pytest

from plint.catalog.flags import default_release, latest_release, load_flag_catalog, releases

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "megatron-flags"


def test_releases_and_lookups():
    assert {"0.8", "0.16", "0.19", "main", "megatron-deepspeed", "bigscience"} <= set(releases())
    assert latest_release() == "0.19" and default_release("megatron-deepspeed") == "megatron-deepspeed"
    c = load_flag_catalog("0.16")
    spec = c.lookup("--tensor-model-parallel-size")
    assert spec.dest == "tensor_model_parallel_size" and spec.default == 1 and spec.takes_value
    assert not c.lookup("--bf16").takes_value
    assert c.lookup("--tensor_model_parallel_size") is None  # no underscore aliases in Megatron-LM
    assert c.lookup("--kitchen-config-file") is not None  # defined in source, added by an extension
    assert load_flag_catalog("0.8").lookup("--local_rank") is not None


@pytest.mark.skipif(not SOURCE.exists(), reason="shared/data is not beside the checkout")
def test_catalog_is_up_to_date(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("build", ROOT / "scripts" / "build_flag_catalog.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for path in build.build(SOURCE, tmp_path):
        committed = ROOT / "schemas" / "megatron_flags" / path.name
        assert json.loads(path.read_text()) == json.loads(committed.read_text()), path.name
