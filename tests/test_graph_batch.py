"""collate (observations -> GraphBatch) and forward_observations (the policy on observations, in size buckets)."""
import numpy as np
import pytest
import torch

from config import ModelConfig
from encoder.adjacency import adjacency_from_neighbors
from graph_batch import collate, forward_observations
from policy import PolicyNet
from tests.helpers import N_MAX, observations


def small_policy():
    torch.manual_seed(0)
    return PolicyNet(ModelConfig(embed_dim=16, n_heads=2, n_layers=2, ff_dim=32))


def test_collated_batch_has_project_dtypes_and_the_observations_graph():
    obs = observations(3)
    batch = collate(obs)
    n_used = int(np.flatnonzero(obs["node_mask"].any(0)).max()) + 1  # trailing padding trimmed
    assert batch.node_mask.dtype == batch.adjacency.dtype == batch.action_mask.dtype == torch.bool
    assert batch.candidates.dtype == torch.long and batch.current_index.shape == (3,)
    assert batch.node_features.shape[1] == batch.node_mask.shape[1] == n_used
    neighbors = torch.from_numpy(obs["neighbors"][:, :n_used])
    assert torch.equal(batch.adjacency, adjacency_from_neighbors(neighbors, batch.node_mask))
    for b in range(3):  # the node behind each slot; an empty slot points at node 0 and is masked
        row = obs["neighbors"][b, obs["current_index"][b]]
        assert batch.candidates[b].tolist() == np.where(row >= 0, row, 0).tolist()
        assert batch.action_mask[b].tolist() == (row >= 0).tolist()


def test_a_single_observation_becomes_a_batch_of_one():
    one = {key: value[1] for key, value in observations(2).items()}
    batch = collate(one)
    assert batch.node_features.dim() == 3 and batch.node_features.shape[0] == 1
    assert batch.current_index.tolist() == [int(one["current_index"])]


def test_current_index_on_a_padding_node_is_an_error():
    obs = observations(2)
    obs["current_index"][1] = N_MAX - 1
    obs["node_mask"][1, N_MAX - 1] = 0
    with pytest.raises(ValueError, match="current_index must point at a real node"):
        collate(obs)


def test_size_buckets_give_the_outputs_and_gradients_of_one_call_in_the_callers_order():
    obs = observations(32, seed=1)
    sizes = obs["node_mask"].sum(-1)
    assert sizes.min() < sizes.max() and not (np.diff(sizes) >= 0).all()  # unsorted: the slices sort, outputs must not
    gradients = []
    for buckets in (1, 3, 64):  # 64 > the batch of 32: one observation per call
        policy = small_policy()
        logits, values = forward_observations(policy, obs, buckets)
        (logits.clamp(min=-1e4).logsumexp(-1).sum() + values.square().sum()).backward()
        gradients.append(torch.cat([p.grad.flatten() for p in policy.parameters()]))
        with torch.no_grad():
            reference_logits, reference_values = small_policy()(collate(obs))
        torch.testing.assert_close(logits, reference_logits)
        torch.testing.assert_close(values, reference_values)
    for gradient in gradients[1:]:
        torch.testing.assert_close(gradient, gradients[0], rtol=1e-4, atol=1e-6)
