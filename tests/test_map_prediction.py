"""The map predictor (``predictor``) and its training and planning (``rl.map_prediction``)."""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import env  # noqa: F401  (registers the envs)
from config import load_config
from env.baselines import greedy
from env.lookahead import far_unknown_price, guessed_lookahead, imagined_costs_of_valid, revealed_within, within_steps
from env.observation import ACTION_MASK
from env.sensing import FREE, OCCUPIED, UNKNOWN
from predictor import MapPredictor
from predictor.files import load_predictor, predictor_file
from predictor.network import BELIEF_CODES
from rl.envs import make_env, with_env_overrides
from rl.evaluation import argmax_actor, load_policy, run_episode
from rl.map_prediction import collect_pairs, fit, in_free_squares, main, mirrored, planning_actor, predicted_guess
from rl.pretrained import export, planner_entry
from rl.seeding import eval_episode_seed
from tests.helpers import SMOKE
from tests.map_folders import write_maps

MAPS = {f"{i}.png": (20, 22) for i in range(12)}


def test_the_predictor_reads_the_envs_belief_codes():
    assert (UNKNOWN, FREE, OCCUPIED) == tuple(range(BELIEF_CODES))


def test_wall_probability_is_the_sigmoid_of_the_logits():
    net = MapPredictor(width=4).eval()
    belief = np.random.default_rng(0).integers(0, BELIEF_CODES, (9, 11)).astype(np.int8)
    expected = torch.sigmoid(net(torch.from_numpy(belief)[None]))[0].detach().numpy()
    np.testing.assert_allclose(net.wall_probability(belief), expected)
    assert net.wall_probability(belief).shape == (9, 11)


@pytest.mark.parametrize("shape", [(60, 80), (21, 33), (4, 5)])
def test_the_predictor_keeps_any_map_shape(shape):
    belief = torch.randint(0, BELIEF_CODES, (2, *shape), dtype=torch.int8)
    assert MapPredictor(width=4)(belief).shape == (2, *shape)
    if min(shape) >= 8:
        assert MapPredictor(width=4, depth=4)(belief).shape == (2, *shape)
    else:
        with pytest.raises(ValueError, match="a predictor of depth 4 halves it 3 times, so it needs at least 8"):
            MapPredictor(width=4, depth=4)(belief)


@pytest.mark.parametrize("depth, sees_far", [(3, False), (4, True)])
def test_a_fourth_level_sees_twice_as_far(depth, sees_far):
    """A cell changed in the corner of an 80 x 60 belief moves the logit 45 cells off (each way)
    only when a fourth level carries it: depth 3 reaches about 30 cells, depth 4 about 60."""
    torch.manual_seed(0)
    net = MapPredictor(width=16, depth=depth).eval()
    belief = torch.randint(0, BELIEF_CODES, (1, 60, 80), generator=torch.Generator().manual_seed(1)).to(torch.int8)
    changed = belief.clone()
    changed[0, 0, 0] = (belief[0, 0, 0] + 1) % BELIEF_CODES
    with torch.no_grad():
        moved = (net(changed) - net(belief))[0].abs() > 0
    assert moved[45, 45].item() == sees_far and moved[20, 20].item()
    with pytest.raises(ValueError, match="depth=1"):
        MapPredictor(width=4, depth=1)


def folder_config(tmp_path: Path):
    folder = write_maps(tmp_path / "maps", MAPS)
    return with_env_overrides(load_config(SMOKE).env, [f"map_dir={folder}", "max_steps=60"])


def test_pairs_are_beliefs_of_greedy_episodes_with_their_maps_truth(tmp_path):
    env_config = folder_config(tmp_path)
    pairs = collect_pairs(env_config, maps=4, progress=False)
    assert pairs.beliefs.shape[1:] == pairs.truths.shape[1:] == (20, 22) and len(pairs.truths) == 4
    assert len(pairs.beliefs) == len(pairs.which) > 0 and set(pairs.which) <= set(range(4))
    for belief, map_index in zip(pairs.beliefs, pairs.which):  # what the belief knows is true
        truth = pairs.truths[map_index]
        assert not truth[belief == FREE].any() and truth[belief == OCCUPIED].all()


def test_fitting_learns_the_rooms_and_beats_the_all_walls_guess(tmp_path):
    # Every map is the same walled room: the cells past the known free ones are free, which a
    # predictor must learn, where guessing walls is mostly wrong.
    pairs = collect_pairs(folder_config(tmp_path), maps=12, progress=False)
    torch.manual_seed(0)
    net = MapPredictor(width=4)
    saved = []
    history = fit(net, pairs, epochs=8, learning_rate=1e-2, save=lambda n, h: saved.append(len(h)), batch=4,
                  progress=False)
    assert saved == list(range(1, 9)) and len(history) == 8
    assert history[-1]["held_out_loss"] < 0.3 * history[0]["held_out_loss"]
    assert history[-1]["held_out_accuracy"] > history[-1]["all_walls_accuracy"] + 0.5


def test_a_mirrored_minibatch_flips_beliefs_and_truths_alike_every_way():
    belief = torch.arange(2 * 3 * 4).reshape(2, 3, 4)
    truth = belief % 3 == 0
    generator, seen = torch.Generator().manual_seed(0), set()
    for _ in range(40):
        b, t = mirrored(belief, truth, generator)
        dims = next(d for d in ([], [1], [2], [1, 2]) if torch.equal(b, belief.flip(d)))
        assert torch.equal(t, truth.flip(dims))
        seen.add(tuple(dims))
    assert seen == {(), (1,), (2,), (1, 2)}


def test_a_predictor_file_loads_weights_only_and_guesses_from_the_belief_alone(tmp_path):
    net = MapPredictor(width=4)
    path = tmp_path / "predictor.pt"
    torch.save(predictor_file(net, {"maps": 1}), path)
    loaded = load_predictor(path)
    belief = torch.randint(0, BELIEF_CODES, (1, 9, 11), dtype=torch.int8)
    assert torch.equal(loaded(belief), net.eval()(belief))
    torch.save({"model": net.state_dict()}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a map predictor file"):
        load_predictor(tmp_path / "other.pt")
    deep = MapPredictor(width=4, depth=4)
    torch.save(predictor_file(deep, {}), tmp_path / "deep.pt")
    assert load_predictor(tmp_path / "deep.pt").depth == 4
    assert torch.equal(load_predictor(tmp_path / "deep.pt")(belief), deep.eval()(belief))
    older = {key: value for key, value in predictor_file(net, {}).items() if key != "depth"}  # before depth
    torch.save(older, tmp_path / "older.pt")
    assert torch.equal(load_predictor(tmp_path / "older.pt")(belief), net(belief))
    torch.save({**predictor_file(net, {}), "depth": 4}, tmp_path / "misfit.pt")
    with pytest.raises(ValueError, match="do not fit a map predictor of width 4 and depth 4"):
        load_predictor(tmp_path / "misfit.pt")

    world = make_env(folder_config(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    guess = predicted_guess(loaded)(world)
    p = world.pad
    with torch.no_grad():
        expected = (loaded(torch.from_numpy(world.belief[None, p:-p, p:-p].copy()))[0] > 0).numpy()
    assert guess.shape == (20, 22) and np.array_equal(guess, expected)
    world.grid_map = replace(world.grid_map, occupied=~world.grid_map.occupied)  # the truth is never read
    assert np.array_equal(predicted_guess(loaded)(world), guess)
    near = within_steps(world, 2)
    assert np.array_equal(predicted_guess(loaded, within=2)(world), guess | ~near) and not near.all()
    with pytest.raises(ValueError, match="threshold=1"):
        predicted_guess(loaded, 1.0)
    with pytest.raises(ValueError, match="within=-1"):
        predicted_guess(loaded, within=-1)
    with pytest.raises(ValueError, match="opening=0"):
        predicted_guess(loaded, opening=0)


def brute_force_in_free_squares(free, width):
    """Each cell: does some width x width square of free cells hold it? By looping over squares."""
    covered = np.zeros_like(free)
    for r in range(free.shape[0] - width + 1):
        for c in range(free.shape[1] - width + 1):
            if free[r:r + width, c:c + width].all():
                covered[r:r + width, c:c + width] = True
    return covered


def test_cells_in_free_squares_by_hand_and_by_brute_force():
    free = np.ones((6, 7), bool)
    free[:, 3] = False  # two rooms 3 wide
    free[4:] = False
    free[0, 0] = False  # a notch: (0, 1), (0, 2) still lie in a 2 x 2 square, (1, 0) too
    expected_2 = np.array([[0, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1],
                           [1, 1, 1, 0, 1, 1, 1], [0] * 7, [0] * 7], bool)
    assert np.array_equal(in_free_squares(free, 2), expected_2)
    in_3 = in_free_squares(free, 3)
    assert in_3[1:4, :3].all() and not in_3[0, :3].any() and in_3[:4, 4:].all() and not in_3[4:].any()
    assert not in_free_squares(free, 4).any() and not in_free_squares(free, 9).any()  # wider than the map
    rng = np.random.default_rng(0)
    for width in (1, 2, 3, 4):
        noise = rng.random((13, 17)) < 0.8
        assert np.array_equal(in_free_squares(noise, width), brute_force_in_free_squares(noise, width))


class Walls(torch.nn.Module):
    """A predictor whose guess is the given wall mask (logit +-10 per cell)."""

    def __init__(self, walls):
        super().__init__()
        self.logits = torch.where(torch.from_numpy(walls), 10.0, -10.0)

    def forward(self, belief):
        return self.logits[None].expand(belief.shape[0], -1, -1)


def test_an_opened_guess_walls_the_unknown_free_slivers_narrower_than_the_square(tmp_path):
    world = make_env(folder_config(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    p = world.pad
    belief = world.belief[p:-p, p:-p]
    unknown = belief == UNKNOWN
    # every unknown cell a wall, but for a free sliver a cell wide between unknown cells
    walls = np.ones(belief.shape, bool)
    walled_in = unknown[1:-1] & unknown[:-2] & unknown[2:]  # [H-2, W]: a cell with unknown cells above and below
    walled_in[:, 1:-1] &= walled_in[:, :-2] & walled_in[:, 2:]
    row = int(np.argmax(walled_in.sum(axis=1)))
    sliver = np.zeros_like(unknown)
    sliver[row + 1, 1:-1] = walled_in[row, 1:-1]
    walls[sliver] = False
    assert sliver.sum() >= 3
    plain = predicted_guess(Walls(walls))(world)
    opened = predicted_guess(Walls(walls), opening=2)(world)
    assert not plain[sliver].any() and opened[sliver].all()  # a passage one cell wide is closed
    assert np.array_equal(opened[~unknown], plain[~unknown])  # the known cells stay as the robot knows them
    free_square = brute_force_in_free_squares(np.where(unknown, ~plain, belief == FREE), 2)
    assert np.array_equal(opened, plain | (unknown & ~free_square))
    assert np.array_equal(predicted_guess(Walls(walls), opening=1)(world), plain)  # every free cell is a 1 x 1 square


def test_a_told_guess_takes_the_true_map_on_the_cells_told_and_opens_after(tmp_path):
    world = make_env(folder_config(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    p = world.pad
    belief = world.belief[p:-p, p:-p]
    unknown, truth = belief == UNKNOWN, world.grid_map.occupied
    net = MapPredictor(width=4).eval()
    seen = []

    def everywhere(env, wall_probability):
        seen.append(wall_probability)
        return np.ones(wall_probability.shape, bool)

    plain = predicted_guess(net)(world)
    told = predicted_guess(net, told=everywhere)(world)
    with torch.no_grad():
        logits = net(torch.from_numpy(belief[None].copy()))[0]
    assert np.array_equal(seen[0], torch.sigmoid(logits).numpy())  # told reads the predictor's probabilities
    assert np.array_equal(told[unknown], truth[unknown]) and np.array_equal(told[~unknown], plain[~unknown])
    assert not np.array_equal(plain, told)  # the truth changed the guess
    assert np.array_equal(predicted_guess(net, told=lambda env, w: np.zeros(w.shape, bool))(world), plain)
    # the opening runs after the truth is set, on the told world
    opened = predicted_guess(net, opening=2, told=everywhere)(world)
    assert np.array_equal(opened, told | (unknown & ~in_free_squares(np.where(unknown, ~told, belief == FREE), 2)))


def test_the_bench_tells_the_cells_of_a_band_of_steps_and_refuses_bad_bands(tmp_path, monkeypatch, capsys):
    from bench import predicted_lookahead
    world = make_env(folder_config(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    doubt = np.random.default_rng(0).random(world.grid_map.occupied.shape)
    near, middle, far = (within_steps(world, d) for d in (1, 2, 4))
    assert np.array_equal(predicted_lookahead.told_cells((0, 2), None)(world, doubt), middle)
    assert np.array_equal(predicted_lookahead.told_cells((2, 4), None)(world, doubt), far & ~near)
    doubted = predicted_lookahead.told_cells((0, 4), 0.2)(world, doubt)
    assert np.array_equal(doubted, far & (doubt > 0.2) & (doubt < 0.8)) and doubted.any() and not doubted.all()
    assert predicted_lookahead.steps_band("6-10") == (6, 10)
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    argv = ["predicted_lookahead", "--predictor", str(tmp_path / "predictor.pt"), "--episodes", "1",
            "--config", str(SMOKE), "--json", str(tmp_path / "x.json")]
    monkeypatch.setattr("sys.argv", [*argv, "--told", "0-3", "--doubted", "0.2"])
    predicted_lookahead.main()
    assert "travel predicted_lookahead / greedy:" in capsys.readouterr().out
    for bad, message in ((["--told", "5-2"], "'5-2': A-B with 0 <= A <= B"), (["--told", "near"], "'near': steps A-B"),
                         (["--doubted", "0.2"], "--doubted 0.2: a probability between 0 and 0.5, with --told"),
                         (["--told", "0-3", "--doubted", "0.6"], "--doubted 0.6")):
        (tmp_path / "x.json").unlink(missing_ok=True)
        monkeypatch.setattr("sys.argv", [*argv, *bad])
        with pytest.raises(SystemExit):
            predicted_lookahead.main()
        assert message in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_the_planner_is_the_lookahead_at_weight_zero_and_the_policy_at_a_large_weight(tmp_path):
    policy, config = load_policy(Path("pretrained/default.pt"))
    guess = predicted_guess(MapPredictor(width=4).eval())
    env = make_env(with_env_overrides(config.env, ["map_size=16"]))
    obs, _ = env.reset(seed=2)
    compared = 0
    for _ in range(8):
        lookahead, agent = guessed_lookahead(guess)(obs, env), argmax_actor(policy)(obs, env)
        assert planning_actor(policy, guess, 0.0)(obs, env) == lookahead
        assert planning_actor(policy, guess, 1e3)(obs, env) == agent
        compared += lookahead != agent
        obs, _, terminated, truncated, _ = env.step(agent)
        if terminated or truncated:
            break
    assert compared >= 1  # on some state the two disagree, so the weight decided


def test_the_cli_writes_a_loadable_file_and_refuses_bad_input_before_writing(tmp_path, capsys):
    folder = write_maps(tmp_path / "maps", MAPS)
    out = tmp_path / "predictor.pt"
    common = ["--config", str(SMOKE), f"env.kwargs.map_dir={folder}", "env.kwargs.max_steps=60"]
    assert main([*common, "--out", str(out), "--maps", "12", "--epochs", "1", "--width", "4"]) == 0
    state = torch.load(out, weights_only=True)
    assert state["trained"]["maps"] == 12 and len(state["trained"]["history"]) == 1
    assert isinstance(load_predictor(out), MapPredictor)
    assert main([*common, "--out", str(out), "--maps", "2"]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["--config", str(SMOKE), "--out", str(tmp_path / "x.pt")]) == 2
    assert "map_dir" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()
    with pytest.raises(SystemExit):
        main([*common, "--out", str(tmp_path / "y.pt"), "--epochs", "0"])
    with pytest.raises(SystemExit):
        main([*common, "--out", str(tmp_path / "y.pt"), "--depth", "1"])
    assert "--depth must be at least 2, got 1" in capsys.readouterr().err
    assert not (tmp_path / "y.pt").exists()
    deep = tmp_path / "deep.pt"
    assert main([*common, "--out", str(deep), "--maps", "12", "--epochs", "1", "--width", "4", "--depth", "4",
                 "--flip"]) == 0
    state = torch.load(deep, weights_only=True)
    assert state["depth"] == 4 and state["trained"]["flip"] and load_predictor(deep).depth == 4


def test_the_bench_plays_the_lookahead_and_the_planner(tmp_path, monkeypatch, capsys):
    from bench import predicted_lookahead
    path = tmp_path / "predictor.pt"
    torch.save(predictor_file(MapPredictor(width=4), {}), path)
    monkeypatch.setattr("sys.argv", ["predicted_lookahead", "--predictor", str(path), "--checkpoint",
                                     "pretrained/default.pt", "--prior-weight", "1", "--episodes", "1",
                                     "--first-episode", "2", "--config", str(SMOKE), "--json", str(tmp_path / "x.json")])
    predicted_lookahead.main()
    out = capsys.readouterr().out
    for line in ("travel predicted_lookahead / greedy:", "travel agent / greedy:", "travel planner_1 / agent:"):
        assert line in out
    report = json.loads((tmp_path / "x.json").read_text())
    episode_2, _ = run_episode(make_env(load_config(SMOKE).env), greedy, eval_episode_seed(0, 2))
    assert [r["travel_distance"] for r in report["per_episode"]["greedy"]] == [episode_2.travel_distance]


def test_the_bench_takes_the_predictor_the_checkpoint_carries(tmp_path, monkeypatch, capsys):
    from bench import predicted_lookahead
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(Path("pretrained/default.pt"), tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt"))
    argv = ["predicted_lookahead", "--episodes", "1", "--config", str(SMOKE), "--json", str(tmp_path / "x.json")]
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", str(tmp_path / "agent.pt")])
    predicted_lookahead.main()
    carried = json.loads((tmp_path / "x.json").read_text())["per_episode"]["predicted_lookahead"]
    monkeypatch.setattr("sys.argv", [*argv, "--predictor", str(tmp_path / "predictor.pt")])
    predicted_lookahead.main()
    named = json.loads((tmp_path / "x.json").read_text())["per_episode"]["predicted_lookahead"]
    assert carried == named
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", "pretrained/default.pt"])
    with pytest.raises(SystemExit):
        predicted_lookahead.main()
    assert "name a --predictor, or a --checkpoint that carries one" in capsys.readouterr().err


def test_the_bench_opens_the_guess_as_the_checkpoints_planner_unless_told(tmp_path, monkeypatch, capsys):
    from bench import predicted_lookahead
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(Path("pretrained/default.pt"), tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt",
                                                                                       opening=3))
    openings = []
    real = predicted_lookahead.predicted_guess
    monkeypatch.setattr(predicted_lookahead, "predicted_guess", lambda *a: openings.append(a[3]) or real(*a))
    argv = ["predicted_lookahead", "--checkpoint", str(tmp_path / "agent.pt"), "--episodes", "1", "--config", str(SMOKE)]
    for extra in ([], ["--opening", "0"], ["--opening", "2"]):
        monkeypatch.setattr("sys.argv", [*argv, *extra])
        predicted_lookahead.main()
    assert openings == [3, None, 2]
    monkeypatch.setattr("sys.argv", [*argv, "--opening", "-1"])
    with pytest.raises(SystemExit):
        predicted_lookahead.main()
    assert "--opening -1" in capsys.readouterr().err and openings == [3, None, 2]


def test_best_move_scores_the_planner_a_checkpoint_carries(tmp_path, monkeypatch, capsys):
    from bench import best_move
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(Path("pretrained/default.pt"), tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt"))
    argv = ["best_move", "--episodes", "1", "--env", "map_size=16"]
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", str(tmp_path / "agent.pt")])
    best_move.main()
    lines = capsys.readouterr().out.splitlines()
    scored = {line.split(":")[0]: line for line in lines if ": best move on" in line}
    assert sorted(scored) == ["agent", "greedy", "planner"]
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", "pretrained/default.pt"])
    best_move.main()
    assert "planner: best move on" not in capsys.readouterr().out


def test_the_bench_prices_where_the_planners_play_outs_end_and_refuses_a_bad_price(tmp_path, monkeypatch, capsys):
    from bench import predicted_lookahead
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    argv = ["predicted_lookahead", "--predictor", str(tmp_path / "predictor.pt"), "--episodes", "1",
            "--config", str(SMOKE), "--json", str(tmp_path / "x.json")]
    planned = []
    for price in ([], ["--end-price", "0"], ["--end-price", "3"]):
        monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", "pretrained/default.pt", "--prior-weight", "0", *price])
        predicted_lookahead.main()
        planned.append(json.loads((tmp_path / "x.json").read_text())["per_episode"]["planner_0"])
    assert planned[0] == planned[1]  # a price of 0 plans as no price
    assert planned[2][0]["success"]  # a price plays whole episodes (what it changes: the test below)
    for bad in (["--checkpoint", "pretrained/default.pt", "--end-price", "-1"], ["--end-price", "1"]):
        (tmp_path / "x.json").unlink(missing_ok=True)
        monkeypatch.setattr("sys.argv", [*argv, *bad])
        with pytest.raises(SystemExit):
            predicted_lookahead.main()
        assert f"--end-price {float(bad[-1])}: cells a step" in capsys.readouterr().err
        assert not (tmp_path / "x.json").exists()


def test_the_planner_with_an_end_price_takes_the_move_cheapest_with_it():
    policy, config = load_policy(Path("pretrained/default.pt"))
    guess, price = revealed_within(2), far_unknown_price(20.0, reach=3)
    env = make_env(with_env_overrides(config.env, ["map_size=24"]))
    obs, _ = env.reset(seed=1)
    changed = 0
    for _ in range(12):
        world, valid = env.unwrapped, obs[ACTION_MASK].astype(bool)
        costs = imagined_costs_of_valid(world, guess, valid, end_price=price)
        move = planning_actor(policy, guess, 0.0, price)(obs, env)
        if costs is not None:
            assert costs[move] == costs[valid].min()
        changed += move != planning_actor(policy, guess, 0.0)(obs, env)
        obs, _, terminated, truncated, _ = env.step(move)
        if terminated or truncated:
            break
    assert changed >= 1  # the price decided some move
