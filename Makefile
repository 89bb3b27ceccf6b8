# `make train` and `make test` each build .venv from scratch when it is missing or when
# requirements.txt changed, so a fresh clone needs nothing installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup train test bench clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(PY) train.py --config configs/default.yaml $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) -m bench.env_speed
	$(PY) -m bench.attention_speed
	$(PY) -m bench.collector_speed
	$(PY) -m bench.forward_each

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
