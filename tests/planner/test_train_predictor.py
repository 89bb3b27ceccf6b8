"""The map predictor (``predictor``) and its training (``planner.train_predictor``); the benches that plan with it."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import env  # noqa: F401  (registers the envs)
from config import load_config
from env.baselines import greedy
from env.episode import run_episode
from env.sensing import FREE, OCCUPIED, UNKNOWN
from learning.envs import make_env
from planner.files import planner_entry
from planner.lookahead import within_steps
from planner.predictor import BELIEF_CODES, MapPredictor
from planner.predictor_files import load_predictor, predictor_file
from planner.train_predictor import collect_pairs, fit, main, mirrored
from run.pretrained import export
from run.seeding import eval_episode_seed, train_episode_seed
from tests.helpers import ROOM_MAPS, SMOKE, agent_without_planner, room_folder_env
from tests.map_folders import write_maps


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


def test_pairs_are_beliefs_of_greedy_episodes_with_their_maps_truth(tmp_path):
    env_config = room_folder_env(tmp_path)
    pairs = collect_pairs(env_config, maps=4, progress=False)
    assert pairs.beliefs.shape[1:] == pairs.truths.shape[1:] == (20, 22) and len(pairs.truths) == 4
    assert len(pairs.beliefs) == len(pairs.which) > 0 and set(pairs.which) <= set(range(4))
    for belief, map_index in zip(pairs.beliefs, pairs.which):  # what the belief knows is true
        truth = pairs.truths[map_index]
        assert not truth[belief == FREE].any() and truth[belief == OCCUPIED].all()


def test_fitting_learns_the_rooms_and_beats_the_all_walls_guess(tmp_path):
    # Every map is the same walled room: the cells past the known free ones are free, which a
    # predictor must learn, where guessing walls is mostly wrong.
    pairs = collect_pairs(room_folder_env(tmp_path), maps=12, progress=False)
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


def test_a_predictor_file_loads_weights_only(tmp_path):
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


def test_the_bench_tells_the_cells_of_a_band_of_steps_and_refuses_bad_bands(tmp_path, monkeypatch, capsys):
    from experiments import predicted_lookahead
    world = make_env(room_folder_env(tmp_path)).unwrapped
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


def test_the_cli_writes_a_loadable_file_and_refuses_bad_input_before_writing(tmp_path, capsys):
    folder = write_maps(tmp_path / "maps", ROOM_MAPS)
    out = tmp_path / "predictor.pt"
    common = ["--config", str(SMOKE), f"env.kwargs.map_dir={folder}", "env.kwargs.max_steps=60"]
    assert main([*common, "--out", str(out), "--maps", "12", "--epochs", "1", "--width", "4"]) == 0
    state = torch.load(out, weights_only=True)
    assert state["trained"]["maps"] == 12 and len(state["trained"]["history"]) == 1
    assert isinstance(load_predictor(out), MapPredictor)
    assert main([*common, "--out", str(out), "--maps", "2"]) == 2
    assert "exists" in capsys.readouterr().err
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


def test_procedural_pairs_come_from_training_seeds_never_an_evaluation_map():
    env_config = load_config(SMOKE, ["env.kwargs.max_steps=60"]).env
    pairs = collect_pairs(env_config, maps=3, progress=False)
    env = make_env(env_config)
    for index, truth in enumerate(pairs.truths):
        env.reset(seed=train_episode_seed(0, 0, index))
        assert np.array_equal(truth, env.unwrapped.grid_map.occupied)  # map i: training seed i
        env.reset(seed=eval_episode_seed(0, index))
        assert not np.array_equal(truth, env.unwrapped.grid_map.occupied)
    assert len(pairs.beliefs) > 0 and set(pairs.which) <= {0, 1, 2}


def test_the_cli_trains_on_procedural_maps_without_a_map_dir(tmp_path):
    out = tmp_path / "procedural.pt"
    assert main(["--config", str(SMOKE), "--out", str(out), "--maps", "10", "--epochs", "1", "--width", "4",
                 "env.kwargs.max_steps=60"]) == 0
    state = torch.load(out, weights_only=True)
    assert state["trained"]["maps"] == 10 and "map_dir" not in state["trained"]
    assert isinstance(load_predictor(out), MapPredictor)


def test_the_bench_plays_the_lookahead_and_the_planner(tmp_path, monkeypatch, capsys):
    from experiments import predicted_lookahead
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
    from experiments import predicted_lookahead
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
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", str(agent_without_planner(tmp_path / "plain.pt"))])
    with pytest.raises(SystemExit):
        predicted_lookahead.main()
    assert "name a --predictor, or a --checkpoint that carries one" in capsys.readouterr().err


def test_the_bench_opens_the_guess_as_the_checkpoints_planner_unless_told(tmp_path, monkeypatch, capsys):
    from experiments import predicted_lookahead
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
    from experiments import best_move
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(Path("pretrained/default.pt"), tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt"))
    argv = ["best_move", "--episodes", "1", "--env", "map_size=16"]
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", str(tmp_path / "agent.pt")])
    best_move.main()
    lines = capsys.readouterr().out.splitlines()
    scored = {line.split(":")[0]: line for line in lines if ": best move on" in line}
    assert sorted(scored) == ["agent", "greedy", "planner"]
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", str(agent_without_planner(tmp_path / "plain.pt"))])
    best_move.main()
    assert "planner: best move on" not in capsys.readouterr().out


def bench_argv(tmp_path) -> list[str]:
    """``experiments.predicted_lookahead``'s command line with a fresh predictor, one episode, a JSON report."""
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    return ["predicted_lookahead", "--predictor", str(tmp_path / "predictor.pt"), "--episodes", "1",
            "--config", str(SMOKE), "--json", str(tmp_path / "x.json")]


def assert_bench_refuses(argv, message, report, monkeypatch, capsys):
    """The bench run with ``argv`` stops with a usage error naming ``message`` and writes no ``report``."""
    from experiments import predicted_lookahead
    report.unlink(missing_ok=True)
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit):
        predicted_lookahead.main()
    assert message in capsys.readouterr().err
    assert not report.exists()


def test_the_bench_prices_where_the_planners_play_outs_end_and_refuses_a_bad_price(tmp_path, monkeypatch, capsys):
    from experiments import predicted_lookahead
    argv = bench_argv(tmp_path)
    planned = []
    for price in ([], ["--end-price", "0"], ["--end-price", "3"]):
        monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", "pretrained/default.pt", "--prior-weight", "0", *price])
        predicted_lookahead.main()
        planned.append(json.loads((tmp_path / "x.json").read_text())["per_episode"]["planner_0"])
    assert planned[0] == planned[1]  # a price of 0 plans as no price
    assert planned[2][0]["success"]  # a price plays whole episodes (what it changes: the test below)
    for bad in (["--checkpoint", "pretrained/default.pt", "--end-price", "-1"], ["--end-price", "1"]):
        assert_bench_refuses([*argv, *bad], f"--end-price {float(bad[-1])}: cells a step", tmp_path / "x.json",
                             monkeypatch, capsys)


def test_the_bench_plans_among_the_policys_likeliest_moves_and_refuses_a_bad_count(tmp_path, monkeypatch, capsys):
    """``--candidates 1`` prices the policy's likeliest move alone: the planner plays the agent's episode."""
    from experiments import predicted_lookahead
    argv = bench_argv(tmp_path)
    monkeypatch.setattr("sys.argv", [*argv, "--checkpoint", "pretrained/default.pt", "--prior-weight", "0",
                                     "--candidates", "1"])
    predicted_lookahead.main()
    episodes = json.loads((tmp_path / "x.json").read_text())["per_episode"]
    assert episodes["planner_0"] == episodes["agent"]
    for bad in (["--checkpoint", "pretrained/default.pt", "--candidates", "0"], ["--candidates", "2"]):
        assert_bench_refuses([*argv, *bad], f"--candidates {bad[-1]}: 1 or more", tmp_path / "x.json",
                             monkeypatch, capsys)
