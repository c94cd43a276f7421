# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install install-rl demo test test-fast lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch is pinned in the same command as everything that depends on it, so pip takes the
	# CPU build on disk instead of pulling a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0 -e '.[dev]'
	# DL2's numba kernels compiled into numba's cache now (~35-50 s), not at a user's first step.
	$(PY) -m dlsched.papers.dl2.warm
	touch $(STAMP)

install: $(STAMP)

# Stable-Baselines3 + sb3-contrib (the `rl` extra), torch pinned in the same command as above.
install-rl: $(STAMP)
	$(PY) -m pip install -q torch==2.13.0 -e '.[dev,rl]'

demo: $(STAMP)
	$(VENV)/bin/dlsched compare --workload dl2 --schedulers fifo,drf --seeds 1-3 --plot out/demo.png \
		--report out/demo.html

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples
	$(VENV)/bin/mypy src

test: $(STAMP)
	$(VENV)/bin/python -m pytest
	$(MAKE) lint

# The unit tier: every test but those marked slow and the integration tests (tests/live,
# tests/k8s: real processes and servers, marked by tests/conftest.py); a couple of minutes.
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q -m "not slow and not integration"

clean:
	rm -rf $(VENV) out runs .pytest_cache .mypy_cache .ruff_cache
