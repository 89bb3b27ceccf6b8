# `make train` and `make test` each build .venv from scratch when it is missing or when
# requirements.txt changed, so a fresh clone needs nothing installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# How long torch's idle CPU threads spin before they sleep: SPIN_COUNT rounds, not libgomp's
# 300,000, so a process beside ours keeps its share of the cores (docs/performance.md, "Sharing
# the machine"). libgomp reads GOMP_SPINCOUNT once, when torch loads it, so the venv sets it as
# its interpreter starts (a .pth line): once, for every program, test, benchmark and worker it
# runs. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is.
SPIN_COUNT := 1000
SPIN_LINE := import os; os.environ.get('OMP_WAIT_POLICY') or os.environ.setdefault('GOMP_SPINCOUNT', '$(SPIN_COUNT)')

# Test processes (pytest-xdist): much of the suite waits on subprocesses and Ray's start-up, so
# two on two cores take about 0.7 of one's time (docs/performance.md, "The test suite");
# TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2

.PHONY: setup train test bench headline clean

$(STAMP): requirements.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	echo "$(SPIN_LINE)" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/openmp_wait.pth"
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(PY) train.py --config configs/default.yaml $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) -m bench.env_speed
	$(PY) -m bench.attention_speed
	$(PY) -m bench.collector_speed
	$(PY) -m bench.forward_groups

# The README's headline table from the shipped files: the procedural rows (agent, planner and the
# baselines on 100 held-out maps), and with DUNGEON=PATH/DungeonMaps/train the floor-plan rows (591
# validation maps): 9 min 17 s for both on 2 cores (docs/performance.md).
DUNGEON ?=
headline: $(STAMP)
	$(PY) evaluate.py --checkpoint pretrained/default.pt --episodes 100 --seed 0 --workers 2 \
		--policy agent planner greedy nearest_frontier
	$(if $(DUNGEON),$(PY) evaluate.py --checkpoint pretrained/dungeon.pt --env map_dir=$(DUNGEON) \
		--env map_split=validation --episodes 591 --workers 2 --policy agent planner greedy nearest_frontier,\
		@echo "the floor-plan rows: make headline DUNGEON=PATH/DungeonMaps/train")

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
