"""One escaping function per output channel, for every string that came from a file or a path.

plint prints what strangers wrote (a pull request's launch files and file names). Each channel has
its own syntax, and text from a file must never form any of it:

- `printable`: the base of every channel: control characters, bidirectional overrides and lone
  surrogates (a JSON `"\\ud800"` escape, a file name that is not UTF-8) as visible escapes.
- `log`: a line plint writes to stdout or stderr (the text report, notes, the overflow lines of the
  github format). The GitHub Actions runner reads a log line as a command when, after leading blanks,
  it starts with `::` (ActionCommand.TryParseV2 of actions/runner, src/Runner.Common/ActionCommand.cs),
  and anywhere it holds `##[` (ActionCommand.TryParse: `message.IndexOf("##[")`): `##[add-mask]`,
  `##[stop-commands]`, `##[error]`. Both are broken with a backslash. `log_lines` does it line by
  line for plint's own multi-line text (a plan, a usage error quoting a config or a launch).
- `workflow_data`, `workflow_property`: the message and the `key=value` properties of a workflow
  command (`::error file=...::message`), escaped as the runner unescapes them (`_escapeDataMappings`:
  `%`, CR, LF; `_escapePropertyMappings`: also `:` and `,`); the message inert as `log` too.
- `terminal`: text for rich's console markup (`[bold]...`), inert as `log`.
- `html`: every value the HTML page and the SVG of `plint show` print (jinja2's `finalize`; its
  autoescape does the markup).
- `json_text`: a serialized JSON or SARIF document: `##[` written `##\\u005b` and lone surrogates as
  `\\udXXX`, JSON escapes that decode to the very same strings.
Markdown (the report, the job summary, the PR comment) escapes in plint.report.markdown.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, the bidirectional overrides that reorder what a terminal or a
# browser shows ("trojan source"), and lone surrogates (no encoder writes them): shown as escapes
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}

RUNNER_COMMAND = "##["  # read as a command anywhere in a line
INERT_COMMAND = "##\\["
_LEADING_COMMAND = re.compile(r"\A(\s*):(?=:)")  # `::name::` after leading blanks starts a command


def printable(text: str, keep: str = "") -> str:
    """text with control characters as visible escapes (ESC as `\\x1b`, CR as `\\r`, a lone surrogate
    as `\\ud800`); those in `keep` stay. Idempotent: an escape contains no control character."""
    if text.isprintable() or not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _escape_one(m.group()), text)


def _escape_one(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def inert(text: str) -> str:
    """text that the Actions runner reads as no command: `##[` and a leading `::` broken."""
    if RUNNER_COMMAND in text:
        text = text.replace(RUNNER_COMMAND, INERT_COMMAND)
    return _LEADING_COMMAND.sub(r"\1:\\", text)


def log(text: str, keep: str = "") -> str:
    """File-derived text in a line written to stdout or stderr."""
    return inert(printable(text, keep))


def _runner_escaped(text: str) -> str:
    return printable(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def log_lines(text: str) -> str:
    """Lines of plint's own (a plan, a usage error) that may quote files: each line escaped as `log`,
    the line breaks kept."""
    return "\n".join(log(line) for line in text.split("\n"))


def workflow_data(text: str) -> str:
    """The message part of a workflow command; plint's own text too (`%` must be escaped)."""
    return inert(_runner_escaped(text))


def workflow_property(text: str) -> str:
    """A `key=value` property of a workflow command: additionally `:` and `,`, which end the value.
    A path holding `##[` is not written here at all (plint.report.github.annotation names it in the message),
    though the runner would try TryParse (`##[`) only on a line that
    TryParseV2 did not take (ActionCommandManager.TryProcessCommand), and it takes every `::error ...::`
    line plint writes, the data escaped so that nothing ends it early."""
    return _runner_escaped(text).replace(":", "%3A").replace(",", "%2C")


def terminal(text: str) -> str:
    """File-derived text inside rich console markup."""
    from rich.markup import escape

    return escape(log(text))


def html(value: object) -> object:
    """A value printed into HTML or SVG: jinja2's `finalize` of the pictures' templates, whose
    autoescape then escapes `<`, `&` and quotes; a string's control characters become visible first."""
    if hasattr(value, "__html__"):  # markup already made safe (the SVG a page embeds): not file text
        return value
    return printable(value) if isinstance(value, str) else value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(document: str) -> str:
    """A serialized JSON document (json.dumps) that is inert in a log and encodable as UTF-8: `##[`
    occurs only inside strings (`#` is no JSON syntax), where `\\u005b` is the same `[`; a lone
    surrogate can only be a string's character, which `\\udXXX` stands for."""
    if RUNNER_COMMAND in document:
        document = document.replace(RUNNER_COMMAND, "##\\u005b")
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
