"""Helpers for reading evaluator results in tests."""


def argv(result, name: str, index: int = 0) -> list[str | None]:
    cmds = [c for c in result.commands if c.words and c.words[0].text == name]
    return [w.display() for w in cmds[index].words]


def var(result, name: str) -> str | None:
    v = result.variables[name]
    return "".join(p.text for p in v.value) if all(p.known for p in v.value) else None
