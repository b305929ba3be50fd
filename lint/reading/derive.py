"""Arithmetic on Values: products and exact quotients that keep track of why a result is unknown."""

from __future__ import annotations

from plint.values import Value


def _whole(value) -> bool:
    """A value arithmetic can use: an integer, or a float or text that is one (`"8"`, `8.0` from JSON)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()


def _not_a_number(values: dict[str, Value]) -> Value | None:
    """An unresolved Value naming the inputs that are no whole number (a JSON list or object where a size
    belongs), or None when every input is one."""
    bad = [f"{k} {v.value!r}" for k, v in values.items() if not _whole(v.value)]
    return Value(None, None, "unresolved", f"not a whole number: {', '.join(bad)}") if bad else None


def _names(values: dict[str, Value]) -> str:
    return ", ".join(f"{k} ({v.note})" if v.note else k for k, v in values.items() if not v.known)


def _origin(values, note: str) -> tuple[str, str]:
    """A result computed from an assumption is an assumption too, and says which input was assumed."""
    assumed = [f"{v.value}" if k == "n" else f"{k} {v.value}" for k, v in values.items() if v.origin == "assumed"]
    if not assumed:
        return "derived", note
    return "assumed", f"{note}; {', '.join(assumed)} assumed"


def product(note: str, **factors: Value) -> Value:
    """The product of known factors (origin derived); unresolved naming each unknown factor."""
    if any(not v.known for v in factors.values()):
        return Value(None, None, "unresolved", f"needs {_names(factors)}")
    bad = _not_a_number(factors)
    if bad is not None:
        return bad
    result = 1
    for v in factors.values():
        result *= int(v.value)
    return Value(result, None, *_origin(factors, note.format(**{k: v.value for k, v in factors.items()})))


def quotient(note: str, numerator: Value, **divisors: Value) -> Value:
    """numerator / product(divisors) when it divides exactly.

    Unknown inputs give an unresolved Value; a remainder gives a null Value with origin "derived"
    and a note saying it does not divide (a rule reports that; it is not a static unknown).
    """
    parts = {"numerator": numerator, **divisors}
    if any(not v.known for v in parts.values()):
        return Value(None, None, "unresolved", f"needs {_names(parts)}")
    bad = _not_a_number(parts)
    if bad is not None:
        return bad
    denominator = 1
    for v in divisors.values():
        denominator *= int(v.value)
    values = {k: v.value for k, v in divisors.items()}
    if denominator <= 0 or int(numerator.value) % denominator:
        return Value(
            None,
            None,
            "derived",
            f"{numerator.value} is not divisible by {denominator} ({note.format(n=numerator.value, **values)})",
        )
    parts["n"] = parts.pop("numerator")
    return Value(int(numerator.value) // denominator, None, *_origin(parts, note.format(n=numerator.value, **values)))
