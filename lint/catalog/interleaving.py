"""What Megatron-LM's interleaved pipeline schedule (virtual pipeline stages) accepts, by release.

Checked against NVIDIA/Megatron-LM (release tags core_r0.7.0, core_r0.8.0, core_r0.9.0, core_r0.10.0):
- core 0.7 and earlier: validate_args (megatron/training/arguments.py; megatron/arguments.py before) asserts
  'pipeline-model-parallel size should be greater than 2 with interleaved schedule'; 3ee489d9 (2024-05-31,
  "Enable virtual pipelining and P2P communication overlap at PP=2", first released in core 0.8) allows pp 2
  while p2p communication overlaps (pp 3 still without it: --no-overlap-p2p-communication);
- core 0.9 and earlier: forward_backward_pipelining_with_interleaving (megatron/core/pipeline_parallel/
  schedules.py; megatron/schedules.py since b7067cbd, 2021-02-22) raises 'number of microbatches (M) is not
  divisible by pipeline-model-parallel-size (P) when using interleaved schedule'; core 0.10 replaced it by
  micro-batch groups (--microbatch-group-size-per-virtual-pipeline-stage, default pp), which need only
  pp <= M (the last group may be short).
"""

from __future__ import annotations

from plint.record import record

PP2_SINCE = "0.8"  # the first core release that interleaves over pp 2
MICROBATCH_GROUPS_SINCE = "0.10"  # the first core release that interleaves over any M >= pp


@record(frozen=True)
class Interleaving:
    """The interleaved schedule's demands of one release: the smallest pp, and whether the micro-batches of a
    step must be a multiple of pp (else only at least pp)."""

    min_pp: int = 2
    multiple_of_pp: bool = False

    def accepts(self, pp: int, microbatches: int) -> bool:
        return pp >= self.min_pp and microbatches >= pp and not (self.multiple_of_pp and microbatches % pp)


def interleaving(has_pp2: bool | None = True, has_groups: bool | None = True, overlap_p2p: bool = True) -> Interleaving:
    """What a release accepts: `has_pp2` whether it is core PP2_SINCE or newer, `has_groups` whether it is
    MICROBATCH_GROUPS_SINCE or newer (None, a fork or an unknown release: taken as the newest), `overlap_p2p`
    whether p2p communication overlaps (--no-overlap-p2p-communication turns it off)."""
    min_pp = 2 if has_pp2 is not False and overlap_p2p else 3
    return Interleaving(min_pp, has_groups is False)


NEWEST = interleaving()
