"""Hostfiles read as DeepSpeed's runner reads them, with its error messages."""

from plint.source import SourceFile
from plint.sources.hostfile import read_hostfile, resolve_resources


def hf(text):
    return read_hostfile(SourceFile("hostfile", text))


def test_lines_comments_and_trailing_text():
    h = hf("# cluster\n\nw0 slots=8\n  w1 slots=4 # half node\n")
    assert [(n, s) for n, s, _ in h.hosts] == [("w0", 8), ("w1", 4)] and not h.problems


def test_deepspeed_error_texts():
    assert hf("w0 slots = 8\n").problems[0].message == "Hostfile contains a bad entry: w0 slots = 8"
    assert hf("w0 slots=8\nw0 slots=8\n").problems[0].message == "Hostfile contains multiple entries for w0"
    assert hf("\n# nothing\n").problems[0].message == "Hostfile is empty or not formatted correctly"


def test_resolution():
    h = hf("w0 slots=8\nw1 slots=8\n")
    res = resolve_resources(h, "w1:0,1", None, None, None)
    assert res.world_size.value == 2 and res.nnodes.value == 1
    res = resolve_resources(h, "w9", None, None, None)
    assert res.problems[0].message == "Hostname 'w9' not found in hostfile"
    res = resolve_resources(h, "w0:9", None, None, None)
    assert res.problems[0].message == "No slot '9' specified on host 'w0'"
    res = resolve_resources(None, None, None, 2, None)
    assert "Num nodes is >1 but no extra nodes available via hostfile" in res.problems[0].message
