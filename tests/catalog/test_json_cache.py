"""The marshal copies of shipped JSON (plint.schemas.load_json): used while they match the file,
rebuilt when it changes, ignored when damaged, never required."""

import json
import os
import sys

import pytest

from plint.schemas import cache_file as cache_of
from plint.schemas import load_json, read_json


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def writing(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # the test environment may turn it off


def test_the_copy_is_written_and_then_used(tmp_path, writing):
    path = str(tmp_path / "data.json")
    (tmp_path / "data.json").write_text('{"a": [1, 2.5, null, true, "x"], "b": {"c": -0.0}}')
    assert load_json(path) == {"a": [1, 2.5, None, True, "x"], "b": {"c": -0.0}}
    assert os.path.isfile(cache_of(path)) and cache_of(path).startswith(os.environ["XDG_CACHE_HOME"])
    assert load_json(path) == {"a": [1, 2.5, None, True, "x"], "b": {"c": -0.0}}
    stat = os.stat(path)  # the file changed behind the stamp's back (same size, same mtime)...
    (tmp_path / "data.json").write_text('{"a": [1, 2.5, null, true, "y"], "b": {"c": -0.0}}')
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert load_json(path)["a"][-1] == "x"  # ...so the copy answers: it is what is read


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
    file.write_text("[1, 2, 3]")
    assert load_json(str(file)) == [1, 2, 3]
    with open(cache_of(str(file)), "wb") as f:
        f.write(b"\x00garbage")
    assert load_json(str(file)) == [1, 2, 3]
    os.remove(cache_of(str(file)))
    assert load_json(str(file)) == [1, 2, 3]


def test_no_copy_without_bytecode_writing_or_a_writable_folder(tmp_path, monkeypatch, cache_home):
    file = tmp_path / "data.json"
    file.write_text('{"k": "v"}')
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert load_json(str(file)) == {"k": "v"}
    assert not os.path.exists(cache_of(str(file)))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache_home.write_text("a file where the folder would be")
    assert load_json(str(file)) == {"k": "v"}


def test_each_file_has_its_own_copy(tmp_path, writing):
    """Two files of the same name, size and mtime (two installs) never read each other's copy."""
    a, b = tmp_path / "a" / "data.json", tmp_path / "b" / "data.json"
    for file, text in ((a, '{"v": 1}'), (b, '{"v": 2}')):
        file.parent.mkdir()
        file.write_text(text)
    os.utime(b, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns))
    assert cache_of(str(a)) != cache_of(str(b))
    assert [load_json(str(a)), load_json(str(b)), load_json(str(a))] == [{"v": 1}, {"v": 2}, {"v": 1}]


def test_shipped_catalogs_read_as_json_reads_them():
    import plint.schemas

    folder = os.path.dirname(plint.schemas.__file__)
    for parts in (("hardware.json",), ("megatron_flags", "index.json"), ("megatron_flags", "0.19.json")):
        with open(os.path.join(folder, *parts)) as f:
            assert read_json(*parts) == json.load(f)


def test_no_copy_without_an_absolute_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_of("/x/data.json").startswith(str(tmp_path / "home" / ".cache" / "plint"))
    monkeypatch.setenv("HOME", "not/absolute")
    assert cache_of("/x/data.json") is None


def test_copies_of_files_that_are_gone_are_removed_when_a_copy_is_written(tmp_path, writing, cache_home):
    """A removed environment (pre-commit and tox build new ones) leaves no copy behind for long: the next
    copy written clears the copies whose file no longer exists, and only those."""
    kept, gone, new = (tmp_path / name / "data.json" for name in ("kept", "gone", "new%2F:odd"))
    for file in (kept, gone, new):
        file.parent.mkdir()
        file.write_text('{"v": 1}')
    load_json(str(kept))
    load_json(str(gone))
    other = cache_home / "plint" / "notes.txt"  # not a copy: never touched
    other.write_text("x")
    gone.unlink()
    assert os.path.exists(cache_of(str(gone)))
    load_json(str(kept))  # a copy that is read: nothing is written, nothing removed
    assert os.path.exists(cache_of(str(gone)))
    load_json(str(new))  # a copy that is written
    assert not os.path.exists(cache_of(str(gone)))
    assert os.path.exists(cache_of(str(kept))) and os.path.exists(cache_of(str(new))) and other.exists()
