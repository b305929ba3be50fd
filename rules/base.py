"""The rule record: one per rule, and it drives everything about the rule.

`plint rules`, `plint explain`, SARIF's driver.rules, docs/rules/*.md and the docs-example tests all
read the same record. A rule's `check` reads a RuleContext (the Layout and the facts read from the
files, never file syntax) and yields Findings that point at provenance spans.
"""

from __future__ import annotations

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, TypeAlias
    from plint.layout import Layout, LayoutKey
    from plint.reading.read import FileReading
    from plint.source import Span
    from plint.values import Value

SEVERITIES = ("error", "warning", "info")
FAMILIES = {
    "0": "inputs",
    "1": "arithmetic",
    "2": "topology",
    "3": "efficiency",
    "4": "memory",
    "5": "keys-and-flags",
    "6": "environment",
}
DOCS_URL = "https://github.com/plint-dev/plint/blob/main/docs/rules/{code}.md"


@record(frozen=True)
class Example:
    """A docs example: the files of a small launch; `main` is the one plint checks."""

    files: dict[str, str]
    main: str = "launch.sh"


@record(frozen=True)
class RuleDocs:
    what: str  # what it checks, one paragraph
    why: str  # why it matters, with the number
    bad: Example
    good: Example
    fix: str  # whether and how `plint fix` fixes it
    references: tuple[str, ...] = ()


@record(frozen=True)
class Edit:
    """Replace bytes [start, end) of `path` with `text`."""

    path: str
    start: int
    end: int
    text: str


@record(frozen=True)
class Fix:
    description: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"  # "safe" | "unsafe"


@record
class Finding:
    message: str
    span: "Span | None" = None
    key: str | None = None  # the layout field or config key it is about (baseline, fingerprints)
    fix: Fix | None = None
    severity: str | None = None  # only when the rule's severity depends on the case


@record
class RuleContext:
    reading: "FileReading"
    layout: "Layout | None"  # None for a file with no launch (a DeepSpeed JSON alone)
    settings: Any = None  # plint.checking.config.Settings: thresholds, releases, cluster facts

    def fact(self, key: LayoutKey) -> Value | None:
        """A trainer fact (Value) by layout-style key, e.g. "megatron_deepspeed.no_pipeline_parallel"."""
        if self.layout is None:
            return None
        return self.layout.extras.facts.get(key)


if TYPE_CHECKING:

    class LaunchContext(RuleContext):
        """What a rule that needs a launch (Rule.needs_layout, the default) is given: the engine runs it
        only on a layout (checking.engine), so its layout is never None. The same object at run time."""

        layout: Layout

    # a rule's check: given a RuleContext, or a LaunchContext when it needs a layout
    Check: TypeAlias = Callable[[Any], Iterable[Finding]]
else:
    LaunchContext = RuleContext


@record(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str
    docs: RuleDocs
    check: Check = field(compare=False, repr=False)
    needs_layout: bool = True  # False: runs on files without a launch too (DeepSpeed JSON alone)

    @property
    def family(self) -> str:
        return FAMILIES.get(self.code[2], "other")

    @property
    def docs_url(self) -> str:
        return DOCS_URL.format(code=self.code)


RULES: dict[str, Rule] = {}


def register(
    code: str, name: str, severity: str, summary: str, docs: RuleDocs, needs_layout: bool = True
) -> Callable[[Check], Check]:
    """Decorator: record a check function as a rule."""
    assert severity in SEVERITIES, severity

    def wrap(check: Check) -> Check:
        if code in RULES:
            raise ValueError(f"rule {code} registered twice")
        RULES[code] = Rule(code, name, severity, summary, docs, check, needs_layout)
        return check

    return wrap
