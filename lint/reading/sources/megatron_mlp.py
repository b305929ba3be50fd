"""The MLP width a Megatron launch trains (model.ffn_hidden_size), as its trainer's validate_args sets it when
--ffn-hidden-size is absent: 4 x hidden, or under --swiglu a width that keeps the gated MLP's parameters near the
4h one, int((4 * h * 2 / 3) / 64) * 64 (Megatron-LM since 2cc3dac, April 2023, the commit that added --swiglu;
the Megatron-DeepSpeed forks alike). A fork whose parser plint reads from the tree and whose validate_args has no
such rule (IEIT-Yuan's, which keeps 4h under --swiglu) keeps 4h (FlagCatalog.swiglu_sizes_ffn)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from plint.values import Value

if TYPE_CHECKING:
    from plint.catalog.flags import FlagCatalog


class FlagReader(Protocol):
    """What this reads of the Megatron reader (reading.sources.megatron): a flag's value, an absent flag's."""

    catalog: FlagCatalog

    def value(self, option: str) -> Value | None: ...

    def absent(
        self, value: Any, note: str, origin: str = ..., span: Any = ..., options: tuple[str, ...] = ...
    ) -> Value: ...


def ffn_hidden_size(r: FlagReader, hidden: Value | None, swiglu: Value | None) -> Value:
    ffn = r.value("--ffn-hidden-size")
    if ffn is not None:
        return ffn
    if hidden is None:
        return r.absent(
            None,
            "--ffn-hidden-size defaults to 4 * --hidden-size, not given",
            options=("--ffn-hidden-size", "--hidden-size"),
        )
    if not hidden.known:
        return Value(None, hidden.span, "unresolved", "needs model.hidden_size")
    h = hidden.value
    if swiglu is not None and r.catalog.swiglu_sizes_ffn:
        return r.absent(
            int((4 * h * 2 / 3) / 64) * 64,
            f"--swiglu without --ffn-hidden-size: int((4*{h}*2/3)/64)*64",
            "derived",
            hidden.span,
            options=("--ffn-hidden-size",),
        )
    kept = f" (the validate_args of {r.catalog.source} keeps it under --swiglu)" if swiglu is not None else ""
    return r.absent(
        4 * h,
        f"--ffn-hidden-size not given: 4 * {h}{kept}",
        "derived",
        hidden.span,
        options=("--ffn-hidden-size",) if swiglu is not None else ("--ffn-hidden-size", "--swiglu"),
    )
