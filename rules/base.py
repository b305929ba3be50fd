"""The rule record: one per rule, and it drives everything about the rule.

`plint rules`, `plint explain`, SARIF's driver.rules, docs/rules/*.md and the docs-example tests all
read the same record. A rule's `check` reads a RuleContext (the Layout and the facts read from the
files, never file syntax) and yields Findings that point at provenance spans.
"""

from __future__ import annotations

from plint.record import field, record
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Protocol, Sequence, TypeAlias
    from plint.layout import Layout, LayoutKey
    from plint.source import Problem, Span
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


FIX_AVAILABILITY = ("safe", "unsafe", "never")
# how a rule without a fix says so: the author's call, a fixer not written yet, or nothing an edit could fix
WITHOUT_A_FIX = {
    "manual": "Not fixed automatically",
    "planned": "Not fixed automatically yet; planned",
    "impossible": "Not fixable",
}


@record(frozen=True)
class RuleFix:
    """Whether `plint fix` fixes a rule's findings, declared in the rule's record beside its check (as ruff
    keeps fix availability beside the check): "safe" (`plint fix`), "unsafe" (only under `plint fix
    --unsafe-fixes`) or "never". `how` says what the fix writes and when it declines, or, for "never", why
    there is none (`without`: a key of WITHOUT_A_FIX). `plint rules`, `plint explain`, SARIF, docs/rules and
    the fixing loop read it from here; the fixer itself, which edits file syntax a rule knows nothing of, is
    in plint.fixing, registered against the rule's code (`@fixer(code)`), and takes its applicability from
    this record."""

    availability: str
    how: str = ""
    without: str = "manual"

    def __post_init__(self) -> None:
        assert self.availability in FIX_AVAILABILITY, self.availability
        assert self.without in WITHOUT_A_FIX, self.without

    @property
    def text(self) -> str:
        """The Fix section of the rule's page."""
        if self.availability != "never":
            return self.how
        said = WITHOUT_A_FIX[self.without]
        return f"{said}: {self.how}" if self.how else f"{said}."


def safe_fix(how: str) -> RuleFix:
    """A fix `plint fix` writes: same model, same numerics."""
    return RuleFix("safe", how)


def unsafe_fix(how: str) -> RuleFix:
    """A fix written only under `plint fix --unsafe-fixes`: it changes what the run computes or needs."""
    return RuleFix("unsafe", how)


def no_fix(why: str = "") -> RuleFix:
    """No fixer: the finding is the author's call (`why` says what to do instead, when there is more to say)."""
    return RuleFix("never", why)


def planned_fix(how: str) -> RuleFix:
    """No fixer yet: `how` is what the planned one will write."""
    return RuleFix("never", how, without="planned")


def unfixable(why: str) -> RuleFix:
    """Nothing an edit of the launch could fix: `why` says what the user supplies instead."""
    return RuleFix("never", why, without="impossible")


@record(frozen=True)
class RuleDocs:
    what: str  # what it checks, one paragraph
    why: str  # why it matters, with the number
    bad: Example
    good: Example
    fix: RuleFix  # whether and how `plint fix` fixes it
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


if TYPE_CHECKING:  # typing only, as LaunchContext below: nothing asks at run time what a reading is

    class ReadFile(Protocol):
        """What a rule sees of the file it checks: what was read, never how (the reader's FileReading, in
        plint.reading.read, has these and more; a rule imports no reader)."""

        @property
        def path(self) -> str: ...
        @property
        def kind(self) -> str: ...  # "shell" | "json"
        @property
        def layouts(self) -> Sequence[Layout]: ...
        @property
        def problems(self) -> Sequence[Problem]: ...  # what the reader could not read (PL001, PL002)
        @property
        def unreadable(self) -> str | None: ...  # why the file could not be read at all (PL001)
        @property
        def unused_launches(self) -> Sequence[Any]: ...  # training commands that gave no launch (PL005)
        @property
        def ds_config(self) -> Any: ...  # a DeepSpeed JSON read on its own (its key tree)


@record
class RuleContext:
    reading: ReadFile
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

    @property
    def fix(self) -> RuleFix:
        return self.docs.fix


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
