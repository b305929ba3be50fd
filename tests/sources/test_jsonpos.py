"""JSON with positions: files, heredoc pieces, unknown shell values, what hjson accepts and json.load refuses."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plint.reading.shell.evaluator import EvalOptions, evaluate
from plint.reading.shell.model import MappedText, Piece, unknown
from plint.source import SourceFile
from plint.reading.sources.jsonpos import (
    COMMENT,
    MISSING_COMMA,
    QUOTELESS,
    SINGLE_QUOTES,
    TRAILING_COMMA,
    UNQUOTED_KEY,
    JArray,
    JObject,
    JScalar,
    JUnknown,
    parse_json,
)


def read(text: str, path: str = "ds.json"):
    return parse_json(MappedText.from_source(SourceFile(path, text)), path)


def at(span):
    return (span.line, span.col, span.end_line, span.end_col)


# ---- positions ------------------------------------------------------------------------------------
def test_positions_of_keys_and_values_in_a_file():
    text = (
        "{\n"
        '  "train_batch_size": 64,\n'
        '  "zero_optimization": {\n'
        '    "stage": 3, "offload_param": {"device": "cpu"}\n'
        "  },\n"
        '  "note": "é", "after": [1, 2.5, true, null]\n'
        "}\n"
    )
    doc = read(text)
    assert not doc.problems and not doc.leniencies and doc.json_load_accepts
    root = doc.root
    entry = root.entry("train_batch_size")
    assert at(entry.key_span) == (2, 3, 2, 21) and at(entry.value.span) == (2, 23, 2, 25)
    stage = root.find("zero_optimization", "stage")
    assert stage.value == 3 and at(stage.span) == (4, 14, 4, 15)
    device = root.find("zero_optimization", "offload_param", "device")
    assert device.value == "cpu" and at(device.span) == (4, 45, 4, 50)
    assert at(root.get("zero_optimization").span) == (3, 24, 5, 4)
    after = root.entry("after")  # columns count characters, not bytes: "é" is two bytes
    assert at(after.key_span) == (6, 16, 6, 23)
    assert [type(i) for i in after.value.items] == [JScalar] * 4 and after.value.items[1].value == 2.5
    assert at(after.value.items[3].span) == (6, 40, 6, 44)
    assert root.to_python() == json.loads(text)


HEREDOC_SCRIPT = (
    "#!/bin/bash\n"
    "GBS=32\n" + "".join(f"# line {n}\n" for n in range(3, 10)) + "cat <<EOF > ds.json\n"  # line 10
    "{\n"  # line 11
    '  "train_batch_size": $GBS,\n'  # line 12
    '  "train_micro_batch_size_per_gpu": $MBS,\n'  # line 13
    '  "checkpoint": {"path": "$OUT/ckpt"}\n'  # line 14
    "}\n"
    "EOF\n"
)


def heredoc_pieces(script: SourceFile) -> MappedText:
    """The pieces the evaluator makes of the heredoc above: literal runs of the script, the value
    of $GBS (written on line 2), and unknowns for $MBS and $OUT."""
    data = script.data

    def literal(start: bytes, end: bytes) -> Piece:
        lo = data.index(start)
        hi = data.index(end, lo) if end else lo + len(start)
        return Piece(script.slice(lo, hi), script.span(lo, hi), "literal", True, source=script)

    gbs_at = data.index(b"32")
    mbs_at, out_at = data.index(b"$MBS"), data.index(b"$OUT")
    return MappedText(
        [
            literal(b'{\n  "train_batch_size": ', b"$GBS"),
            Piece("32", script.span(gbs_at, gbs_at + 2), "literal", True, source=script),
            literal(b',\n  "train_micro_batch_size_per_gpu": ', b"$MBS"),
            unknown("$MBS is not set in the script and has no default", "MBS", script.span(mbs_at, mbs_at + 4)),
            literal(b',\n  "checkpoint": {"path": "', b"$OUT"),
            unknown("$OUT is not set in the script and has no default", "OUT", script.span(out_at, out_at + 4)),
            literal(b'/ckpt"}\n}\n', b""),
        ]
    )


def test_positions_in_a_heredoc_that_starts_on_line_10():
    script = SourceFile("train.sh", HEREDOC_SCRIPT)
    doc = parse_json(heredoc_pieces(script), "ds.json")
    assert not doc.problems
    root = doc.root
    assert at(root.span)[:2] == (11, 1)
    tbs = root.entry("train_batch_size")
    assert at(tbs.key_span) == (12, 3, 12, 21) and tbs.key_span.path == "train.sh"
    assert tbs.value.value == 32 and at(tbs.value.span) == (2, 5, 2, 7)  # where 32 was written
    mbs = root.entry("train_micro_batch_size_per_gpu")
    assert at(mbs.key_span)[:2] == (13, 3)
    assert isinstance(mbs.value, JUnknown) and mbs.value.piece.name == "MBS"
    assert at(mbs.value.span) == (13, 37, 13, 41)
    path = root.find("checkpoint", "path")
    assert isinstance(path, JUnknown) and path.shown == "${OUT}/ckpt" and path.piece.name == "OUT"


def test_positions_through_the_shell_evaluator(tmp_path):
    script_path = tmp_path / "train.sh"
    script_path.write_text(HEREDOC_SCRIPT)
    result = evaluate(SourceFile(str(script_path), HEREDOC_SCRIPT), EvalOptions())
    (written,) = [vf for name, vf in result.virtual_files.items() if name.endswith("ds.json")]
    doc = parse_json(written.content, "ds.json")
    assert not doc.problems
    tbs = doc.root.entry("train_batch_size")
    assert (tbs.key_span.line, tbs.key_span.col) == (12, 3) and tbs.value.value == 32
    assert isinstance(doc.root.get("train_micro_batch_size_per_gpu"), JUnknown)


# ---- unknown shell text ---------------------------------------------------------------------------
def pieces(*parts) -> MappedText:
    """Literal strings and unknown pieces (given as the variable name in a 1-tuple)."""
    return MappedText([unknown(f"${p[0]} is unknown", p[0]) if isinstance(p, tuple) else Piece(p) for p in parts])


def test_unknown_values_are_nodes_and_the_document_stays_valid():
    doc = parse_json(
        pieces('{"a": ', ("A",), ', "b": [1, ', ("B",), '], "c": ', ("C",), '0, "d": "x-', ("D",), '", "e": 2}'),
        "x.json",
    )
    assert not doc.problems and not doc.leniencies
    root = doc.root
    a, b, c, d = root.get("a"), root.get("b"), root.get("c"), root.get("d")
    assert isinstance(a, JUnknown) and a.piece.name == "A" and a.piece.reason == "$A is unknown"
    assert isinstance(b, JArray) and isinstance(b.items[1], JUnknown)
    assert isinstance(c, JUnknown) and c.shown == "${C}0"  # partly unknown number: unknown as a whole
    assert isinstance(d, JUnknown) and d.shown == "x-${D}"
    assert root.get("e").value == 2
    assert root.to_python() == {"a": None, "b": [1, None], "c": None, "d": None, "e": 2}


def test_unknown_keys_and_unknown_members():
    doc = parse_json(pieces('{"', ("K",), '": 1, ', ("EXTRA",), ' "z": 2}'), "x.json")
    assert not doc.problems
    (entry_k, entry_z) = doc.root.entries
    assert entry_k.key == "${K}" and entry_k.key_piece.name == "K" and entry_z.key == "z"
    assert [u.piece.name for u in doc.root.unknown_members] == ["EXTRA"]


# ---- what hjson accepts and json.load refuses -----------------------------------------------------
def test_leniencies_are_recorded_with_positions():
    text = (
        "{\n"
        "  // DeepSpeed reads this\n"
        '  "a": 1, # and this\n'
        "  b: 'two',\n"
        '  "c": [1, 2,],\n'
        '  "d": 4 /* block */\n'
        '  "e": 5,\n'
        "}\n"
    )
    doc = read(text)
    assert not doc.problems and doc.deepspeed_accepts and not doc.json_load_accepts
    found = [(message, span.line, span.col) for message, span in doc.leniencies]
    assert found == [
        (COMMENT, 2, 3),
        (COMMENT, 3, 11),
        (UNQUOTED_KEY, 4, 3),
        (SINGLE_QUOTES, 4, 6),
        (TRAILING_COMMA, 5, 13),
        (COMMENT, 6, 10),
        (MISSING_COMMA, 6, 9),
        (TRAILING_COMMA, 7, 9),
    ]
    assert doc.root.to_python() == {"a": 1, "b": "two", "c": [1, 2], "d": 4, "e": 5}


def test_duplicate_keys_are_kept_and_recorded():
    doc = read('{"train_batch_size": 8,\n "nested": {"x": 1, "x": 2},\n "train_batch_size": 16}')
    assert not doc.problems and doc.json_load_accepts and not doc.deepspeed_accepts
    assert [(k, s.line, s.col) for k, s in doc.duplicates] == [("x", 2, 21), ("train_batch_size", 3, 2)]
    assert doc.root.keys() == ["train_batch_size", "nested", "train_batch_size"]
    assert doc.root.get("train_batch_size").value == 16  # the last wins, as json.load keeps it


@pytest.mark.parametrize(
    "text, message, line, col",
    [
        ('{\n  "a": 1\n  "b" 2\n}', "Expecting ':' delimiter", 3, 7),
        ('{"a": 1 "b": 2}', "Expecting ',' delimiter", 1, 9),
        ('{"stage": ZERO_STAGE}', "Expecting value", 1, 11),
        ('{"a": [1, 2}', "Expecting ',' delimiter", 1, 12),
        ('{"a": "unterminated\n}', "Invalid control character at", 1, 20),
        ('{"a": "x\\q"}', "Invalid \\escape", 1, 9),
        ('{"a": 1}}', "Extra data", 1, 9),
        ('{"a": 1,,}', "Expecting property name enclosed in double quotes", 1, 9),
        ("", "Expecting value", 1, 1),
    ],
)
def test_broken_json_is_a_problem_at_its_position(text, message, line, col):
    doc = read(text)
    (problem,) = doc.problems
    assert problem.kind == "syntax" and message in problem.message and "ds.json" in problem.message
    assert (problem.span.line, problem.span.col) == (line, col)
    assert not doc.json_load_accepts and not doc.deepspeed_accepts


def test_a_broken_document_keeps_what_was_read():
    doc = read('{"train_batch_size": 64, "zero_optimization": {"stage": 2, "bad": }, "late": 1}')
    assert doc.problems
    assert doc.root.get("train_batch_size").value == 64
    assert doc.root.find("zero_optimization", "stage").value == 2 and doc.root.get("late") is None


# ---- properties -----------------------------------------------------------------------------------
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)


def containers(inner):
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4))


documents = st.recursive(scalars, containers, max_leaves=12)


def nodes(node):
    yield node
    if isinstance(node, JObject):
        for e in node.entries:
            yield from nodes(e.value)
    elif isinstance(node, JArray):
        for item in node.items:
            yield from nodes(item)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([None, 0, 2]), st.booleans())
def test_agrees_with_json_load_and_every_span_holds_its_value(data, indent, ascii_only):
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    source = SourceFile("p.json", text)
    doc = parse_json(MappedText.from_source(source), "p.json")
    assert not doc.problems and not doc.leniencies
    assert doc.root.to_python() == json.loads(text)
    for node in nodes(doc.root):  # the characters at each span read back as the node's value
        assert json.loads(source.slice(node.span.start, node.span.end)) == node.to_python()


@st.composite
def lenient_texts(draw):
    """A JSON text with hjson's extras inserted between tokens: comments, trailing commas, newlines
    instead of commas."""
    data = draw(
        st.dictionaries(
            st.from_regex(r"[a-z_]{1,6}", fullmatch=True),
            st.integers(-99, 99) | st.lists(st.integers(0, 9), max_size=3),
            min_size=1,
            max_size=5,
        )
    )
    parts = []
    for key, value in data.items():
        extra = draw(st.sampled_from(["", " // note", " # note", " /* note */"]))
        sep = draw(st.sampled_from([",", ",", "\n"]))
        rendered = json.dumps(value)
        if isinstance(value, list) and value and draw(st.booleans()):
            rendered = rendered[:-1] + ",]"
        parts.append(f"{json.dumps(key)}: {rendered}{sep}{extra}\n")
    return "{\n" + "".join(parts) + "}\n", data


@settings(max_examples=150, deadline=None)
@given(lenient_texts())
def test_reads_what_hjson_reads(case):
    hjson = pytest.importorskip("hjson")
    text, data = case
    doc = read(text)
    assert not doc.problems
    assert doc.root.to_python() == data == json.loads(json.dumps(hjson.loads(text)))


@pytest.mark.parametrize(
    "text",
    [
        '{"output_path": /home/cz/runs/0310-1728-t5-1e-5\n}',  # a path left unquoted (CZtheHusky/rt_torch)
        '{"a": foo bar, "b": 1\n}',  # the comma and what follows are the string's
        '{"a": note # no comment here\n, "b": 2}',
        '{"a": 12abc   \n"b": true}',  # not a number: a string, its trailing blanks dropped
        "[\n  alpha\n  2\n]",
    ],
)
def test_a_string_without_quotes_runs_to_the_end_of_its_line_as_in_hjson(text):
    hjson = pytest.importorskip("hjson")
    doc = read(text)
    assert not doc.problems and QUOTELESS in [what for what, _ in doc.leniencies]
    assert not doc.json_load_accepts and doc.deepspeed_accepts
    assert doc.root.to_python() == json.loads(json.dumps(hjson.loads(text)))


def test_a_bare_word_neither_reader_takes_is_said_where_json_stops():
    doc = read('{"stage": ZERO_STAGE}')  # hjson: the string "ZERO_STAGE}" and then no closing brace
    (problem,) = doc.problems
    assert "Expecting value" in problem.message and (problem.span.line, problem.span.col) == (1, 11)


@pytest.mark.parametrize("text", ["0\x000\x00", "\x000\x00"])
def test_a_nul_byte_around_a_digit_is_no_marker_of_an_unknown_piece(text):
    """NUL bytes in a file read as JSON, enclosing a digit that happens to be the index of a (known) piece: the
    shape of the reader's marker for unknown shell text, but json.load refuses the text, and so does plint."""
    doc = read(text)
    assert doc.problems and "Invalid control character" in doc.problems[0].message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}[]:,\"'\\/#*\n 0123456789.-eEtrufalsn\x00", max_size=40))
def test_any_text_gives_a_document_never_an_exception(text):
    doc = read(text)
    assert doc.problems or doc.root is not None
    if not doc.problems and not doc.leniencies:
        assert doc.root.to_python() == json.loads(text)
