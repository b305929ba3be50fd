"""File-derived text cannot act in any output: no link, mention, HTML or emphasis in the markdown (the
PR comment), no control byte or rich markup in the terminal, no extra workflow command in GitHub
annotations, valid JSON and SARIF."""

from __future__ import annotations

import json
import re

from markdown_it import MarkdownIt

from hostile_helpers import TRAINER, all_formats, make_tree
from plint.report.markdown import inline_markdown, code_span

INJECTION = (
    "--x[x](http://evil.example)-@someone-**b**-<img src=x onerror=alert(1)>-www.evil.example-#12-"
    "a@evil.example-<!-- c -->-~~s~~-|t|"
)
TICKS = "--y`@someone <b>x</b>`[l](https://evil.example)``"
CONTROL = "--z\x1b[31mred\x1b[0m\rX\x07\u202eY"
NEWLINE = "--n\n::error file=x::forged%0A"
ALLOWED_HTML = {"<!-- plint -->", "<details>", "</details>", "</summary>"}


INT_FLAGS = ("--seed", "--train-iters", "--eval-iters", "--log-interval", "--save-interval")


def _launch(tmp_path, monkeypatch, *values):
    """A launch giving each value to an integer flag: PL506 quotes it in its message."""
    quoted = " ".join(f"{flag} '{v}'" for flag, v in zip(INT_FLAGS, values))
    repo, _ = make_tree(
        tmp_path, {"repo/launch.sh": f"# comment with \x1b[2J escape\ntorchrun --nproc_per_node 8 {TRAINER} {quoted}\n"}
    )
    monkeypatch.chdir(repo)
    return repo


def _inline_tokens(tokens):
    for t in tokens:
        yield t
        yield from _inline_tokens(t.children or [])


def test_markdown_gains_no_link_mention_html_or_emphasis(tmp_path, monkeypatch):
    _launch(tmp_path, monkeypatch, INJECTION, TICKS, NEWLINE)
    outputs = all_formats(["launch.sh"], summary=tmp_path / "summary.md")
    for name in ("markdown", "github-summary"):
        body = outputs[name]
        assert "PL506" in body  # the values are reported
        tokens = list(_inline_tokens(MarkdownIt("commonmark").enable("table").enable("strikethrough").parse(body)))
        for t in tokens:
            if t.type == "link_open":
                assert t.attrs["href"].startswith("https://github.com/plint-dev/plint/"), t.attrs
            assert t.type not in ("image", "s_open"), t
            if t.type in ("html_inline", "html_block"):
                assert t.content.strip().startswith(("<details>", "</details>", "<!-- plint -->")), t.content
            if t.type == "text":
                # what GitHub would autolink or notify, in plain text (code spans are literal; `<`
                # here is an entity the parser decoded: the html tokens above are the tags)
                assert not re.search(r"@[A-Za-z0-9]|https?://|www\.|#\d", t.content), t.content
        strong = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "strong_open"]
        assert all(re.fullmatch(r"PL\d{3}|Fix:", s) for s in strong), strong


def test_code_spans_cannot_be_broken_out_of():
    for text in ("a`b", "``", "`lead", "trail`", "x ``` y", "@someone http://evil"):
        span = code_span(text)
        tokens = list(_inline_tokens(MarkdownIt("commonmark").parse(span)))
        codes = [t for t in tokens if t.type == "code_inline"]
        assert len(codes) == 1 and codes[0].content == text, (text, span, tokens)
    assert inline_markdown("`a` and `b`").count("`") == 4  # plint's own code spans stay code spans


def test_text_output_shows_control_characters_as_escapes(tmp_path, monkeypatch):
    _launch(tmp_path, monkeypatch, CONTROL, NEWLINE)
    outputs = all_formats(["launch.sh"])
    for fmt in ("text", "github", "markdown", "junit"):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e]", outputs[fmt]), (fmt, outputs[fmt])
    assert "\\x1b" in outputs["text"]
    from click.testing import CliRunner

    from plint.cli.commands import cli

    concise = CliRunner().invoke(cli, ["check", "--concise", "launch.sh"]).output
    assert "\x1b" not in concise and "\r" not in concise


def test_text_snippet_carets_stay_under_escaped_characters(tmp_path, monkeypatch):
    from plint.report.text import snippet

    lines = snippet(["a\x1bbc"], 1, 3, 1, 4)  # the span is `b`, after the ESC
    source, carets = ("".join(t for _, t in line) for line in lines[1:3])
    assert source.endswith("a\\x1bbc")
    assert carets.index("^") - carets.index("|") == source.index("b", source.index("x1b") + 3) - source.index("|")


def test_rich_markup_in_a_flag_is_not_interpreted(tmp_path, monkeypatch):
    from plint.checking.check import check_paths
    from plint.report.text import render

    repo = _launch(tmp_path, monkeypatch, "--w[bold]x[/bold]", "--v[link=http://evil.example]y[/link]")
    out = render(check_paths([repo / "launch.sh"]).results, color=True)
    assert "[bold]x[/bold]" in out and "[link=http://evil.example]" in out
    assert "\x1b]8;" not in out  # no terminal hyperlink


def test_github_annotations_stay_one_command_each(tmp_path, monkeypatch):
    _launch(tmp_path, monkeypatch, NEWLINE, CONTROL, "--p%0A,:")
    lines = all_formats(["launch.sh"])["github"].splitlines()
    assert lines and all(re.match(r"::(error|warning|notice) ", line) for line in lines), lines
    assert not any(line.startswith("::error file=x") for line in lines)
    assert any("::error file=x::forged%250A" in line for line in lines)  # inside a message, `%` escaped
    assert any("--p%250A,:" in line for line in lines)


def test_json_and_sarif_stay_valid(tmp_path, monkeypatch):
    _launch(tmp_path, monkeypatch, INJECTION, TICKS, CONTROL, NEWLINE)
    outputs = all_formats(["launch.sh"])
    json.loads(outputs["json"])
    json.loads(outputs["sarif"])
    json.loads(outputs["gitlab"])
    json.loads(outputs["rdjson"])
    import xml.etree.ElementTree as ET

    ET.fromstring(outputs["junit"])
