"""The marshal copies of shipped JSON (plint.schemas.load_json): used while they match the file,
rebuilt when it changes, ignored when damaged, never required."""

import json
import os
import sys

import pytest

from plint.schemas import load_json, read_json


@pytest.fixture
def writing(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # the test environment may turn it off


def cache_of(path):
    folder, name = os.path.split(path)
    return os.path.join(folder, "__pycache__", f"{name}.{sys.implementation.cache_tag}.marshal")


def test_the_copy_is_written_and_then_used(tmp_path, writing):
    path = str(tmp_path / "data.json")
    (tmp_path / "data.json").write_text('{"a": [1, 2.5, null, true, "x"], "b": {"c": -0.0}}')
    assert load_json(path) == {"a": [1, 2.5, None, True, "x"], "b": {"c": -0.0}}
    assert os.path.isfile(cache_of(path))
    assert load_json(path) == {"a": [1, 2.5, None, True, "x"], "b": {"c": -0.0}}


def test_a_changed_file_is_decoded_again(tmp_path, writing):
    file = tmp_path / "data.json"
    file.write_text('{"value": 1}')
    stat = os.stat(file)
    assert load_json(str(file)) == {"value": 1}
    file.write_text('{"value": 2}')  # the same size...
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # ...and a later mtime
    assert load_json(str(file)) == {"value": 2}
    file.write_text('{"value": 33}')  # another size, even with the old mtime
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert load_json(str(file)) == {"value": 33}
    assert load_json(str(file)) == {"value": 33}


def test_a_damaged_or_missing_copy_is_ignored(tmp_path, writing):
    file = tmp_path / "data.json"
    file.write_text('[1, 2, 3]')
    assert load_json(str(file)) == [1, 2, 3]
    with open(cache_of(str(file)), "wb") as f:
        f.write(b"\x00garbage")
    assert load_json(str(file)) == [1, 2, 3]
    os.remove(cache_of(str(file)))
    assert load_json(str(file)) == [1, 2, 3]


def test_no_copy_without_bytecode_writing_or_a_writable_folder(tmp_path, monkeypatch):
    file = tmp_path / "data.json"
    file.write_text('{"k": "v"}')
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert load_json(str(file)) == {"k": "v"}
    assert not os.path.exists(cache_of(str(file)))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "__pycache__").write_text("a file where the folder would be")
    assert load_json(str(file)) == {"k": "v"}


def test_shipped_catalogs_read_as_json_reads_them():
    import plint.schemas

    folder = os.path.dirname(plint.schemas.__file__)
    for parts in (("hardware.json",), ("megatron_flags", "index.json"), ("megatron_flags", "0.19.json")):
        with open(os.path.join(folder, *parts)) as f:
            assert read_json(*parts) == json.load(f)
