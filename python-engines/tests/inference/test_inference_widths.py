"""Width groups: a decode step runs one forward pass per group of similar lengths, and that
changes no token and no logprob beyond float rounding."""
import pytest
import torch

from rollflow_engines.roles.inference.engine import SamplingParams, Seq
from rollflow_engines.widths import width_groups

from .helpers import serve

pytestmark = pytest.mark.anyio


def test_width_groups_bound_each_groups_longest_by_slack_times_its_shortest():
    lengths = [10, 3, 4, 30, 6, 45]
    # ascending: 3 4 | 6 | 10 | 30 45  (6 > 1.5·3, 10 > 1.5·6, 30 > 1.5·10, 45 ≤ 1.5·30)
    assert width_groups(lengths, slack=1.5) == [[1, 2], [4], [0], [3, 5]]
    assert width_groups(lengths, slack=100) == [[1, 2, 4, 0, 3, 5]]
    assert width_groups([], slack=1.5) == []
    with pytest.raises(ValueError, match="slack must be at least 1"):
        width_groups(lengths, slack=0.5)


async def test_a_mixed_width_step_samples_what_each_sequence_samples_alone():
    prompts = [[10, 11, 12], list(range(20, 80)), [30, 31, 32, 33, 34], list(range(40, 60))]
    params = SamplingParams(max_tokens=4, temperature=1.0, seed=7)
    async with serve("torch") as (_, engine):
        def fresh() -> list[Seq]:
            seqs = [Seq(p, params, i, frozenset()) for i, p in enumerate(prompts)]
            for s in seqs:
                engine._admit(s)
            return seqs

        together = engine._forward_and_sample(fresh(), prompts)
        alone = [engine._forward_and_sample([s], [p])[0] for s, p in zip(fresh(), prompts)]
        assert len(width_groups([len(p) for p in prompts])) > 1  # the step really was split
        padded = engine._last_logits(prompts)  # one pass, every row padded to 60 tokens
    assert [t for t, _ in together] == [t for t, _ in alone]
    assert [lp for _, lp in together] == pytest.approx([lp for _, lp in alone], abs=1e-5)
    for row, p in enumerate(prompts):
        assert torch.allclose(padded[row], engine._last_logits([p])[0], atol=1e-4)
