# Two commands: `make demo` serves the site with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A second environment with the runtime dependencies only (no dev extras): see runtime-check.
RUNTIME_VENV := .venv-runtime
PORT ?= 8000
export PORT
# Exact versions with their hashes: requirements.lock (runtime; the image installs it) and
# requirements-dev.lock (runtime + dev extras, the same runtime versions; CI installs it).
# `make lock` writes both from pyproject.toml with uv (a pinned version, from PyPI), keeping the
# versions already locked where they still fit; `make lock-upgrade` moves every one to the newest.
UV_VERSION := 0.13.9
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet
# Where a lock and pyproject.toml disagree, pip check names the missing package: run `make lock`.
PIP_CHECK = $(1) -m pip check >/dev/null || { $(1) -m pip check; echo "pyproject.toml and the lock files disagree: run make lock"; exit 1; }

.PHONY: demo dev test lint runtime-check serve migrate worker notifier bench clean-data lock lock-upgrade

# The server and its scoring code, scoring/, which is a distribution of its own (leaderboard-scoring):
# exact versions from the lock, then both from this checkout, so the server's pin on it is met by the folder.
$(VENV)/.installed: pyproject.toml scoring/pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e ./scoring -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml scoring/pyproject.toml requirements-dev.lock $(VENV)/.installed
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.lock
	$(PY) -m pip install --quiet --no-deps -e ./scoring -e .
	@$(call PIP_CHECK,$(PY))
	touch $@

lock:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip compile pyproject.toml scoring/pyproject.toml $(LOCK_FLAGS) $(UPGRADE) \
		--no-emit-package leaderboard-scoring --override lock-overrides.txt --output-file requirements.lock
	$(VENV)/bin/uv pip compile pyproject.toml scoring/pyproject.toml --extra dev $(LOCK_FLAGS) $(UPGRADE) \
		--no-emit-package leaderboard-scoring --override lock-overrides.txt --constraint requirements.lock \
		--output-file requirements-dev.lock

lock-upgrade:
	$(MAKE) --no-print-directory lock UPGRADE=--upgrade

migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py demo_setup
	@echo
	@echo "  Site:   http://127.0.0.1:$(PORT)/"
	@echo "  Logins: alice / demo-password, bob / demo-password (participants); admin / demo-password (organiser, /admin/)"
	@echo "  API:    http://127.0.0.1:$(PORT)/api/docs/   (token: your profile page)"
	@echo "  Ctrl-C stops the web server, the worker and beat."
	@echo
	$(PY) manage.py serve 127.0.0.1:$(PORT)

# gunicorn + worker + beat, watched (what `make demo` runs, without loading the demo).
serve: migrate
	$(PY) manage.py serve 127.0.0.1:$(PORT)

# The same with Django's development server, which reloads on code changes.
dev: migrate
	$(PY) manage.py serve --dev 127.0.0.1:$(PORT)

# A worker alone (beside a web server started some other way); beat runs separately.
# Notifications (mail, webhooks) have their own queue: `make notifier` runs a worker for it.
worker: $(VENV)/.installed
	$(PY) -m celery -A leaderboard worker --queues scoring

notifier: $(VENV)/.installed
	$(PY) -m celery -A leaderboard worker --queues notifications --concurrency 1

# The linter and the type checker (rules and reasons in pyproject.toml).
lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(PY) -m mypy

# Tests keep their own data folder (SQLite test database, SQLite broker, uploads),
# so a running demo never sees their tasks. A model change without its migration
# fails first. The whole suite (no PYTEST_ARGS, as CI runs it) starts with make lint.
# With CI=true the runtime-only check runs after the suite.
# The suite runs in one process per core, at most 4 (pytest-xdist; PYTEST_WORKERS=0 runs it in this
# process). Each process has its own test database, Redis database and data folder
# (tests/support/parallel.py); idle ones take tests from busy ones (worksteal), as durations vary 1000x.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)
test: $(VENV)/.installed-dev
	DATABASE_URL= DATA_DIR=$(CURDIR)/data/test $(PY) manage.py makemigrations --check --dry-run
	@if [ -z "$(PYTEST_ARGS)" ]; then $(MAKE) --no-print-directory lint; fi
	DATA_DIR=$(CURDIR)/data/test $(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)
	@if [ "$$CI" = "true" ]; then $(MAKE) --no-print-directory runtime-check; fi

# Built from scratch whenever pyproject.toml or the lock changes, as the image installs it: the
# runtime lock with its hashes, then scoring/ and the project as wheels (not editable).
$(RUNTIME_VENV)/.installed: pyproject.toml scoring/pyproject.toml requirements.lock
	rm -rf $(RUNTIME_VENV)
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --require-hashes -r requirements.lock
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --no-deps ./scoring .
	rm -rf build scoring/build
	@$(call PIP_CHECK,$(RUNTIME_VENV)/bin/python)
	touch $@

# Serve and score one upload from the runtime-only environment (DATABASE_URL and
# REDIS_URL when set), run from a folder laid out as the image's /app; see .ci/runtime_check.py.
runtime-check: $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python .ci/runtime_check.py

# The scripts that use DATABASE_URL drop and create the database it names: give them scratch ones.
bench: $(VENV)/.installed-dev
	$(PY) benchmarks/score_round.py
	$(PY) benchmarks/ranking_round.py
	$(PY) benchmarks/hostile_uploads.py
	$(PY) benchmarks/deid_recall.py
	$(PY) benchmarks/latency.py
	$(PY) benchmarks/read_ceiling.py
	$(PY) benchmarks/page_cpu.py
	$(PY) benchmarks/latency.py --uploads 20
	$(PY) benchmarks/uploads.py
	$(PY) benchmarks/static_scoring.py
	@if [ -n "$$DATABASE_URL" ] && [ -n "$$REDIS_URL" ]; then $(PY) benchmarks/round_scaling.py; \
	else echo "benchmarks/round_scaling.py skipped: it needs DATABASE_URL (PostgreSQL) and REDIS_URL"; fi
	@if [ -n "$$DATABASE_URL" ]; then $(PY) benchmarks/boards.py; \
	else echo "benchmarks/boards.py skipped: it needs DATABASE_URL (PostgreSQL)"; fi

clean-data:
	rm -rf data/
