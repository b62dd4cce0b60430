"""From logits to per-token logprobs, entropies and hidden states, by hand."""
import math

import pytest
import torch

from rollflow_engines.models.sequences import pad_sequences, response_hidden, response_logprobs_and_entropy

# Vocabulary of 2, prompt [0], response [1]: the logit predicting the response token is at position 0.
ENTROPY_TABLE = [
    # logits at position 0, temperature, log p(token 1), entropy
    # p = softmax(0, ln 3) = (0.25, 0.75): log 0.75 = −0.287682; H = 0.25·1.386294 + 0.75·0.287682 = 0.562335
    ((0.0, math.log(3.0)), 1.0, math.log(0.75), 0.25 * math.log(4) + 0.75 * math.log(4 / 3)),
    # T = 0.5 doubles the logits: p ∝ (1, 9) = (0.1, 0.9); H = 0.1·2.302585 + 0.9·0.105361 = 0.325083
    ((0.0, math.log(3.0)), 0.5, math.log(0.9), 0.1 * math.log(10) + 0.9 * math.log(10 / 9)),
    ((1.0, 1.0), 1.0, math.log(0.5), math.log(2.0)),  # uniform: H = ln V
    ((1.0, 1.0), 0.0, math.log(0.5), math.log(2.0)),  # greedy reports temperature 1
]


@pytest.mark.parametrize("logits, temperature, logp, entropy", ENTROPY_TABLE)
def test_logprob_and_entropy_table(logits, temperature, logp, entropy):
    mb = pad_sequences([([0], [1])], pad_id=0)
    full = torch.tensor([[list(logits), [5.0, -5.0]]])  # position 1 predicts past the response: unused
    lp, h = response_logprobs_and_entropy(full, mb, temperature)
    assert lp.item() == pytest.approx(logp, abs=1e-6)
    assert h.item() == pytest.approx(entropy, abs=1e-6)


def test_padding_positions_are_zero_and_hidden_states_are_read_where_the_logits_are():
    mb = pad_sequences([([0, 1], [1, 0]), ([0], [1])], pad_id=0)  # the second response is padded to 2 tokens
    logits = torch.zeros(2, 4, 2)
    lp, h = response_logprobs_and_entropy(logits, mb, 1.0)
    assert lp[1, 1].item() == 0.0 and h[1, 1].item() == 0.0 and h[0, 1].item() == pytest.approx(math.log(2.0))
    hidden = torch.arange(2 * 4, dtype=torch.float32).reshape(2, 4, 1)  # hidden[b, p] = 4b + p
    # row 0: the response starts after 2 prompt tokens, so its states sit at positions 1, 2
    assert response_hidden(hidden, mb)[0, :, 0].tolist() == [1.0, 2.0]
