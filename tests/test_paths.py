"""plint.source's two path rules beyond pathlib: probe (a path too long or not searchable is not there,
never an error) and display_path (a checked file named relative to the working directory)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from plint.source import display_path, probe

LONG = "a" * 300  # over NAME_MAX (255 bytes): stat raises ENAMETOOLONG


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "f.sh").write_text("echo\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "loop").symlink_to("loop")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "name, exists, is_file, is_dir",
    [
        ("f.sh", True, True, False),
        ("f.sh/", True, True, False),  # pathlib drops a trailing slash
        ("d", True, False, True),
        ("missing.sh", False, False, False),  # ENOENT
        ("f.sh/x", False, False, False),  # ENOTDIR
        ("loop", False, False, False),  # ELOOP
        ("x\0y.sh", False, False, False),  # a NUL byte: ValueError inside pathlib
        (LONG, False, False, False),  # ENAMETOOLONG: pathlib raises, probe says not there
        (f"d/{LONG}/f.sh", False, False, False),
    ],
)
def test_probe_answers_what_is_there(tree, name, exists, is_file, is_dir):
    assert (probe(Path(name).exists), probe(Path(name).is_file), probe(Path(name).is_dir)) == (exists, is_file, is_dir)


def test_pathlib_alone_raises_for_a_long_name(tree):
    """Why probe exists (Python 3.11's pathlib ignores ENOENT, ENOTDIR, EBADF and ELOOP only)."""
    with pytest.raises(OSError) as info:
        Path(LONG).exists()
    assert info.value.errno == errno.ENAMETOOLONG


def _stat_raising(code: int):
    real = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path).endswith("f.sh"):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real(path, *args, **kwargs)

    return stat


def test_a_folder_plint_may_not_search_hides_the_file(tree, monkeypatch):
    monkeypatch.setattr(os, "stat", _stat_raising(errno.EACCES))  # chmod does not stop root
    assert not probe(Path("f.sh").is_file)
    assert not probe(Path("f.sh").exists)


def test_other_errors_still_raise(tree, monkeypatch):
    monkeypatch.setattr(os, "stat", _stat_raising(errno.EIO))
    with pytest.raises(OSError) as info:
        probe(Path("f.sh").is_file)
    assert info.value.errno == errno.EIO


def test_display_path_is_relative_to_the_working_directory(tree, tmp_path_factory):
    assert display_path(tree / "f.sh") == "f.sh"
    assert display_path("./d/../f.sh") == "f.sh"
    assert display_path(str(tree)) == "."
    outside = tmp_path_factory.mktemp("outside") / "o.sh"
    assert display_path(f"{outside.parent}//./o.sh") == str(outside)  # outside: as given, normalised
    assert display_path("x\0y.sh") == "x\0y.sh"  # a NUL byte names no file: as given, no error


def test_display_path_follows_a_symlinked_working_directory(tree, monkeypatch):
    (tree / "link").symlink_to(tree / "d")
    (tree / "d" / "g.sh").write_text("echo\n")
    monkeypatch.chdir(tree / "link")
    assert display_path(tree / "d" / "g.sh") == "g.sh"
