"""Lookahead costs and imitation of the lookahead (``planner/lookahead.py``, ``planner/imitation.py``)."""
import json
import math
import pickle
import signal

import gymnasium as gym
import numpy as np
import pytest
import torch

import env  # noqa: F401  (registers the envs)
import planner.imitation as imitation
from config import load_config
from env.baselines import greedy
from env.episode import run_episode
from env.observation import ACTION_MASK, CURRENT_INDEX
from evaluation.play import load_policy
from graph_batch import argmax_actor, collate, forward_observations
from learning.envs import make_envs
from planner.continuation import PolicyContinuation
from planner.imitation import (
    REGRET_CAP,
    Labelled,
    argmax_regret,
    collect,
    fit_on,
    fresh_regret,
    imitation_loss,
    regrets,
    train_epochs,
)
from planner.lookahead import LOOKAHEAD_COSTS, LookaheadCosts, lookahead_costs
from policy import PolicyNet
from run.interrupt import StopOnSignal
from tests.helpers import ROOT, SMOKE, guidepost_continuation, towards_guidepost


def play_out(env_id_kwargs, seed, actions, player=greedy):
    """A fresh env replayed through ``actions``, then ``player`` (obs, env) -> slot to the end: its
    final travel (inf if it runs out of steps). Independent of ``lookahead_copy``: nothing is copied."""
    world = gym.make("GridExplore-v0", **env_id_kwargs)
    obs, _ = world.reset(seed=seed)
    terminated = truncated = False
    for action in actions:
        obs, _, terminated, truncated, _ = world.step(action)
    while not (terminated or truncated):
        obs, _, terminated, truncated, _ = world.step(player(obs, world))
    return world.unwrapped.travel_distance if terminated else math.inf


@pytest.mark.parametrize("seed", [2, 4])
def test_every_cost_is_the_travel_of_that_move_then_greedy_on_a_fresh_replay(seed):
    kwargs = {"map_size": 16, "max_steps": 200}
    world = gym.make("GridExplore-v0", **kwargs)
    obs, _ = world.reset(seed=seed)
    taken = []
    for _ in range(3):  # a state a few moves in: costs must count the travel so far
        taken.append(greedy(obs, world))
        obs, *_ = world.step(taken[-1])
    costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK])
    assert costs.shape == obs[ACTION_MASK].shape and np.isinf(costs[obs[ACTION_MASK] == 0]).all()
    valid = np.flatnonzero(obs[ACTION_MASK])
    assert len(valid) > 1
    for slot in valid:
        assert costs[slot] == pytest.approx(play_out(kwargs, seed, [*taken, int(slot)]), abs=1e-4)
    # greedy's own move costs what greedy's whole episode travels
    assert costs[greedy(obs, world)] == pytest.approx(play_out(kwargs, seed, taken), abs=1e-4)


@pytest.mark.parametrize("seed", [3, 7])  # states where the player's prices are not greedy's
def test_every_cost_with_a_continuation_is_that_move_then_the_player_on_a_fresh_replay(seed):
    kwargs = {"map_size": 16, "max_steps": 200}
    world = gym.make("GridExplore-v0", **kwargs)
    obs, _ = world.reset(seed=seed)
    taken = []
    for _ in range(3):
        taken.append(greedy(obs, world))
        obs, *_ = world.step(taken[-1])
    costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK], guidepost_continuation)
    valid = np.flatnonzero(obs[ACTION_MASK])
    assert len(valid) > 1 and np.isinf(costs[obs[ACTION_MASK] == 0]).all()
    player = lambda obs, env: towards_guidepost(obs)  # noqa: E731
    for slot in valid:
        assert costs[slot] == pytest.approx(play_out(kwargs, seed, [*taken, int(slot)], player), abs=1e-4)
    assert np.isfinite(costs[valid]).all()
    # the player's own move costs what its whole episode travels, and the prices are not greedy's
    assert costs[towards_guidepost(obs)] == pytest.approx(play_out(kwargs, seed, taken, player), abs=1e-4)
    assert not np.allclose(costs[valid], lookahead_costs(world.unwrapped, obs[ACTION_MASK])[valid])


def test_a_copy_that_never_finishes_costs_infinity_at_the_step_limit():
    world = gym.make("GridExplore-v0", map_size=16, max_steps=30)
    obs, _ = world.reset(seed=1)
    stay = lambda batch: np.zeros(len(batch[CURRENT_INDEX]), dtype=np.int64)  # noqa: E731  (slot 0 stays put)
    costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK], stay)
    assert np.isinf(costs).all()
    assert world.unwrapped.steps == 0 and world.unwrapped.travel_distance == 0  # the world is left as it was


def test_the_policys_continuation_prices_its_own_move_at_its_episodes_travel():
    policy, config = load_policy(ROOT / "pretrained" / "default.pt")  # a player that finishes maps
    player = PolicyContinuation(config, policy.state_dict())
    kwargs = {**config.env.kwargs, "map_size": 20, "max_steps": 80}
    world = gym.make(config.env.id, **kwargs)
    obs, _ = world.reset(seed=2)

    def one_at_a_time(obs, env=None):
        return int(player({key: np.asarray(value)[None] for key, value in obs.items()})[0])

    own, logits = one_at_a_time(obs), player._policy(collate(obs))[0]
    with torch.no_grad():  # the weights travel as a copy: training the source later changes nothing
        next(policy.parameters()).add_(1.0)
        assert not torch.allclose(policy(collate(obs))[0], logits)
        assert torch.equal(player._policy(collate(obs))[0], logits)
    costs = lookahead_costs(world.unwrapped, obs[ACTION_MASK], player)
    assert np.isfinite(costs[own]) and costs[own] == pytest.approx(play_out(kwargs, 2, [], one_at_a_time), abs=1e-4)
    unpickled = pickle.loads(pickle.dumps(player))  # as it reaches an async env's process
    assert unpickled._policy is None
    batch = {key: np.stack([obs[key]] * 3) for key in obs}
    assert unpickled(batch).tolist() == player(batch).tolist() == [own] * 3


def test_a_vector_env_reports_the_costs_of_the_state_it_returns_across_autoresets():
    config = load_config(SMOKE)
    envs = make_envs(config.env, run_seed=5, wrap=LookaheadCosts)
    obs, info = envs.reset()
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(40):
        for i, one in enumerate(envs.envs):
            expected = lookahead_costs(one.unwrapped, obs[ACTION_MASK][i])
            np.testing.assert_array_equal(info[LOOKAHEAD_COSTS][i], expected)
        actions = [int(rng.choice(np.flatnonzero(mask))) for mask in obs[ACTION_MASK]]
        obs, _, terminated, truncated, info = envs.step(actions)
        resets += int(np.sum(terminated | truncated))
    envs.close()
    assert resets >= 2  # the check covered states right after an autoreset


def test_regret_and_loss_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0), torch.finfo(torch.float32).min]])
    costs = torch.tensor([[10.0, 12.0, math.inf]])
    assert regrets(costs, spacing=2.0).tolist() == [[0.0, 1.0, REGRET_CAP]]
    loss, parts = imitation_loss(logits, costs, spacing=2.0, ent_coef=0.5)
    entropy = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert parts["regret"] == pytest.approx(0.75)  # p = (1/4, 3/4, 0): 3/4 of a regret of 1
    assert parts["entropy"] == pytest.approx(entropy)
    assert parts["argmax_best"] == 0.0  # the argmax is slot 1, not the best
    assert loss.item() == pytest.approx(0.75 - 0.5 * entropy)
    assert argmax_regret(logits, costs, spacing=2.0).tolist() == [1.0]  # slot 1: (12 - 10) / 2
    assert argmax_regret(torch.tensor([[1.0, 0.0, -1.0]]), costs, 2.0).tolist() == [0.0]


def test_the_soft_loss_by_hand_ignores_masked_slots():
    logits = torch.tensor([[0.0, math.log(3.0), torch.finfo(torch.float32).min]])
    costs = torch.tensor([[10.0, 12.0, math.inf]])
    loss, parts = imitation_loss(logits, costs, spacing=2.0, ent_coef=0.5, temperature=1.0)
    q_best = 1 / (1 + math.exp(-1.0))  # softmin of regrets (0, 1) at T = 1; the masked slot gets 0
    cross_entropy = -(q_best * math.log(0.25) + (1 - q_best) * math.log(0.75))
    entropy = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert loss.item() == pytest.approx(cross_entropy - 0.5 * entropy)
    assert parts["regret"] == pytest.approx(0.75)  # reported as with the regret loss
    logits.requires_grad_(True)
    imitation_loss(logits, costs, spacing=2.0, ent_coef=0.0, temperature=1.0)[0].backward()
    assert logits.grad[0, :2].tolist() == pytest.approx([0.25 - q_best, 0.75 - (1 - q_best)])  # pi - q
    assert logits.grad[0, 2] == 0


def test_a_move_greedy_cannot_finish_after_costs_the_cap():
    costs = torch.tensor([[7.0, math.inf, 9.0]])
    assert regrets(costs, spacing=1.0).tolist() == [[0.0, REGRET_CAP, 2.0]]


@pytest.fixture(scope="module")
def labelled():
    config = load_config(SMOKE)
    torch.manual_seed(0)
    with StopOnSignal() as stop:
        return config, collect(PolicyNet(config.model), config, 96, round_index=0, stop=stop)


def test_collected_states_carry_their_own_costs(labelled):
    config, data = labelled
    assert len(data) == 96 and data.obs[ACTION_MASK].shape == (96, data.costs.shape[1])
    assert np.isinf(data.costs[data.obs[ACTION_MASK] == 0]).all()
    assert np.isfinite(data.costs).any(-1).all()  # each state has a move greedy finishes after
    assert len({bytes(row) for row in data.obs["node_features"].reshape(96, -1)}) > 48  # states differ


def test_the_policys_own_continuation_labels_the_same_states_through_the_env_processes():
    policy, config = load_policy(ROOT / "pretrained" / "default.pt")
    config = load_config(SMOKE, [f"model.{key}={value}" for key, value in vars(config.model).items()]
                         + ["env.kwargs.max_steps=60"])  # async envs of the smoke run, the default network
    with StopOnSignal() as stop:
        by_greedy = collect(policy, config, 24, round_index=0, stop=stop)
        by_agent = collect(policy, config, 24, round_index=0, stop=stop, continuation="agent")
    for key in by_greedy.obs:  # the same policy and seeds visit the same states
        np.testing.assert_array_equal(by_agent.obs[key], by_greedy.obs[key])
    np.testing.assert_array_equal(np.isinf(by_agent.costs), np.isinf(by_greedy.costs) | np.isinf(by_agent.costs))
    assert np.isfinite(by_agent.costs).any(-1).mean() > 0.5 and not np.array_equal(by_agent.costs, by_greedy.costs)


@pytest.mark.parametrize("temperature, trunk_dtype", [(0.0, torch.float32), (0.5, torch.float32),
                                                     (0.0, torch.bfloat16)])
def test_training_lowers_the_regret_on_the_states_it_fits(labelled, temperature, trunk_dtype):
    config, data = labelled
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    with StopOnSignal() as stop:
        before = train_epochs(policy, torch.optim.SGD(policy.parameters(), lr=0.0), data, 1, 96, 4.0, 0.0, 1, 0, stop)
        after = train_epochs(policy, optimizer, data, 40, 32, 4.0, 0.0, 1, 0, stop, temperature, trunk_dtype)
    assert after["regret"] < 0.5 * before["regret"]
    assert after["argmax_best"] > before["argmax_best"]


def test_the_program_writes_rounds_that_load_and_play(tmp_path, capsys):
    out = tmp_path / "imitation"
    args = ["--config", "configs/smoke.yaml", "--out", str(out), "--rounds", "2", "--states", "24",
            "--epochs", "1", "--validation-maps", "2"]
    assert imitation.main(args) == 0
    log = json.loads((out / "imitation.json").read_text())
    assert [entry["round"] for entry in log] == [0, 1] and [entry["states"] for entry in log] == [24, 48]
    assert f"done: the newest round's weights are {out / 'round_01.pt'}" in capsys.readouterr().out
    policy, config = load_policy(out / "round_01.pt")
    result, _ = run_episode(gym.make(config.env.id, **config.env.kwargs), argmax_actor(policy), seed=3)
    assert result.steps > 0
    assert imitation.main(args) == 2 and "is not empty" in capsys.readouterr().err  # never overwrites


def test_the_rounds_train_in_the_configs_update_dtype(tmp_path, monkeypatch):
    dtypes = []
    fit = imitation.train_epochs
    monkeypatch.setattr(imitation, "train_epochs", lambda *a: dtypes.append(a[-1]) or fit(*a))
    assert imitation.main(["--config", "configs/smoke.yaml", "--out", str(tmp_path / "bf16"), "--rounds", "1",
                           "--states", "8", "--epochs", "1", "--validation-maps", "1", "ppo.update_dtype=bfloat16"]) == 0
    assert dtypes == [torch.bfloat16]


def test_the_reveal_reaches_the_envs_that_label_the_states(tmp_path, monkeypatch):
    reveals = []
    real = imitation.make_envs
    monkeypatch.setattr(imitation, "make_envs", lambda *a, **k: reveals.append(k["wrap"].keywords["reveal"]) or real(*a, **k))
    assert imitation.main(["--config", "configs/smoke.yaml", "--out", str(tmp_path / "r"), "--rounds", "1",
                           "--states", "8", "--epochs", "1", "--validation-maps", "1", "--reveal", "3"]) == 0
    assert reveals == [3]


@pytest.mark.parametrize("bad", [["--rounds", "0"], ["--states", "-1"], ["--learning-rate", "0"],
                                 ["--temperature", "-1"], ["--reveal", "-1"]])
def test_bad_settings_are_refused_before_anything_is_written(tmp_path, bad, capsys):
    with pytest.raises(SystemExit):
        imitation.main(["--config", "configs/smoke.yaml", "--out", str(tmp_path / "x"), *bad])
    assert bad[0] in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.parametrize("round_stopped, saved", [(0, None), (1, "round_00.pt")])
def test_a_stop_keeps_the_finished_rounds_and_says_which(tmp_path, monkeypatch, capsys, round_stopped, saved):
    fit = imitation.train_epochs
    calls = []

    def train_then_signal(*args, **kwargs):
        calls.append(1)
        if len(calls) == round_stopped + 1:
            signal.raise_signal(signal.SIGINT)
        return fit(*args, **kwargs)

    monkeypatch.setattr(imitation, "train_epochs", train_then_signal)
    out = tmp_path / "imitation"
    code = imitation.main(["--config", "configs/smoke.yaml", "--out", str(out), "--rounds", "3", "--states", "16",
                           "--epochs", "1", "--validation-maps", "1"])
    assert code == 130
    err = capsys.readouterr().err
    assert "SIGINT: stopping; the files of the rounds already finished stay" in err
    assert sorted(p.name for p in out.glob("round_*.pt")) == ([saved] if saved else [])
    assert (f"the newest round's weights are {out / saved}" if saved else "no round finished") in err
    states = ", ".join(f"states_{r:02d}.npz (16 states)" for r in range(round_stopped + 1))
    assert f"labelled states in {out}: {states}" in err  # a round stopped in training kept its states


def test_a_stop_while_collecting_saves_the_states_labelled_so_far(tmp_path, monkeypatch, capsys):
    make = imitation.make_envs

    def envs_that_signal_at_the_third_step(*args, **kwargs):
        envs = make(*args, **kwargs)
        step, steps = envs.step, []

        def step_then_signal(actions):
            steps.append(1)
            if len(steps) == 3:
                signal.raise_signal(signal.SIGINT)
            return step(actions)

        envs.step = step_then_signal
        return envs

    monkeypatch.setattr(imitation, "make_envs", envs_that_signal_at_the_third_step)
    out = tmp_path / "imitation"
    code = imitation.main(["--config", "configs/smoke.yaml", "--out", str(out), "--rounds", "2", "--states", "40",
                           "--epochs", "1", "--validation-maps", "1"])
    assert code == 130
    kept = Labelled.load(out / "states_00.npz", n_features=5)
    assert len(kept) == 6  # 2 envs' states before each of the 3 steps
    assert np.isfinite(kept.costs).any(-1).all() and not list(out.glob("round_*.pt"))
    err = capsys.readouterr().err
    assert f"no round finished; labelled states in {out}: states_00.npz (6 states)" in err


def test_fresh_regret_is_the_loss_without_the_entropy(labelled):
    config, data = labelled
    torch.manual_seed(1)
    policy = PolicyNet(config.model).eval()
    logits, _ = forward_observations(policy, {k: torch.from_numpy(v) for k, v in data.obs.items()})
    _, parts = imitation_loss(logits, torch.from_numpy(data.costs), 4.0, 0.0)
    assert fresh_regret(policy, data, 4.0, size_buckets=1, batch=7) == pytest.approx(parts["regret"], rel=1e-4)
    fit = fit_on(policy, data, 4.0, size_buckets=3, batch=10)
    assert fit["argmax_best"] == pytest.approx(parts["argmax_best"])
    costs = torch.from_numpy(data.costs)
    # by hand: (C(s, argmax) - min C) / spacing, the cap where the played move's play-out never finishes
    played = costs.gather(-1, logits.argmax(-1, keepdim=True)).squeeze(-1)
    by_hand = torch.where(torch.isfinite(played), (played - costs.min(-1).values) / 4.0, REGRET_CAP).mean().item()
    assert fit["argmax_regret"] == pytest.approx(by_hand, rel=1e-5)
    assert (fit["argmax_regret"] > 0) == (parts["argmax_best"] < 1)


def test_labelled_states_come_back_from_their_file_as_they_went_in(labelled, tmp_path):
    config, data = labelled
    data.save(tmp_path / "states_00.npz")
    [back] = Labelled.load_run(tmp_path, n_features=data.obs["node_features"].shape[-1])
    assert back.obs.keys() == data.obs.keys() and np.array_equal(back.costs, data.costs)
    for key, value in data.obs.items():
        assert back.obs[key].dtype == value.dtype and np.array_equal(back.obs[key], value), key
    with pytest.raises(ValueError, match="states_00.npz: its states have 5 node features, this config's "
                                         "observations 9"):
        Labelled.load(tmp_path / "states_00.npz", n_features=9)
    with pytest.raises(FileNotFoundError, match="holds no states_NN.npz"):
        Labelled.load_run(tmp_path / "elsewhere", n_features=5)


def test_a_run_trains_on_an_earlier_runs_states_too(tmp_path, capsys):
    common = ["--config", "configs/smoke.yaml", "--states", "24", "--epochs", "1", "--validation-maps", "1"]
    assert imitation.main([*common, "--out", str(tmp_path / "first"), "--rounds", "2"]) == 0
    first = Labelled.load_run(tmp_path / "first", n_features=5)
    assert [len(part) for part in first] == [24, 24]
    assert not np.array_equal(first[0].costs, first[1].costs)  # each round plays new episodes
    assert imitation.main([*common, "--out", str(tmp_path / "second"), "--rounds", "1",
                           "--states-from", str(tmp_path / "first")]) == 0
    log = json.loads((tmp_path / "second" / "imitation.json").read_text())
    assert [entry["states"] for entry in log] == [72]
    capsys.readouterr()
    assert imitation.main([*common, "--out", str(tmp_path / "third"), "--states-from", str(tmp_path)]) == 2
    assert "holds no states_NN.npz" in capsys.readouterr().err and not (tmp_path / "third").exists()


@pytest.mark.parametrize("temperature, warned", [("0", True), ("1", False)])
def test_a_collapsed_policy_is_named_when_the_regret_can_no_longer_move_it(tmp_path, monkeypatch, capsys,
                                                                          temperature, warned):
    fit = imitation.train_epochs
    monkeypatch.setattr(imitation, "train_epochs", lambda *a, **k: {**fit(*a, **k), "entropy": 0.0})
    assert imitation.main(["--config", "configs/smoke.yaml", "--out", str(tmp_path / "x"), "--rounds", "1",
                           "--states", "8", "--epochs", "1", "--validation-maps", "1",
                           "--temperature", temperature]) == 0
    assert ("warning: round 0: the policy's entropy is 0.0000" in capsys.readouterr().err) == warned
