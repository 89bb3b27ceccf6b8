"""SingleHeadAttention: the pointer's logits against a hand computation, and its masking."""
import math

import pytest
import torch
from torch.distributions import Categorical

from decoder.pointer import SingleHeadAttention

D = 4


def identity_pointer(tanh_clipping=10.0):
    pointer = SingleHeadAttention(D, tanh_clipping)
    with torch.no_grad():
        pointer.w_query.weight.copy_(torch.eye(D))
        pointer.w_key.weight.copy_(torch.eye(D))
    return pointer


def test_logits_equal_hand_computed_clipped_scores():
    q = torch.tensor([[[1.0, 2.0, 0.0, 0.0]]])  # [B=1,Nq=1,D]
    k = torch.tensor([[[1.0, 0.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0], [-4.0, 0.0, 0.0, 0.0]]])  # [1,K=3,D]
    dots = [1.0, 6.0, -4.0]  # q . k_j
    expected = torch.tensor([[[10 * math.tanh(x / math.sqrt(D)) for x in dots]]])
    torch.testing.assert_close(identity_pointer()(q, k), expected)


def test_masked_candidates_get_probability_zero_and_entropy_stays_finite():
    q, k = torch.randn(2, 1, D), torch.randn(2, 5, D)
    mask = torch.tensor([[True, False, True, False, False], [False, False, False, False, True]])
    logits = identity_pointer()(q, k, mask).squeeze(1)
    dist = Categorical(logits=logits)
    assert torch.equal(dist.probs[~mask], torch.zeros(int((~mask).sum())))
    torch.testing.assert_close(dist.probs[1, 4], torch.tensor(1.0))
    assert torch.isfinite(dist.entropy()).all()
    assert dist.entropy()[1].item() == pytest.approx(0.0, abs=1e-6)
    samples = dist.sample((500,))
    assert mask.gather(1, samples.t()).all()


def test_clipping_bounds_logits():
    logits = identity_pointer(tanh_clipping=2.5)(100 * torch.randn(3, 1, D), 100 * torch.randn(3, 6, D))
    assert logits.abs().max() <= 2.5


def test_all_candidates_masked_is_a_clear_error():
    mask = torch.tensor([[True, False], [False, False]])
    with pytest.raises(ValueError, match=r"every candidate is masked for batch rows \[1\]"):
        identity_pointer()(torch.randn(2, 1, D), torch.randn(2, 2, D), mask)


def test_non_positive_clipping_is_refused():
    with pytest.raises(ValueError, match="tanh_clipping must be a finite number > 0, got 0.0"):
        SingleHeadAttention(D, tanh_clipping=0.0)
