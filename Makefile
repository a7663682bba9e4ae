# Two commands: `make demo` serves the site with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A second environment with the runtime dependencies only (no dev extras): see runtime-check.
RUNTIME_VENV := .venv-runtime
PORT ?= 8000
export PORT

.PHONY: demo dev test runtime-check serve migrate worker bench clean-data

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

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
worker: $(VENV)/.installed
	$(PY) -m celery -A leaderboard worker --queues scoring

# Tests keep their own data folder (SQLite test database, SQLite broker, uploads),
# so a running demo never sees their tasks. With CI=true the runtime-only check
# runs after the suite.
test: $(VENV)/.installed-dev
	DATA_DIR=$(CURDIR)/data/test $(PY) -m pytest $(PYTEST_ARGS)
	@if [ "$$CI" = "true" ]; then $(MAKE) --no-print-directory runtime-check; fi

# Built from scratch whenever pyproject.toml changes, with `pip install -e .` only.
$(RUNTIME_VENV)/.installed: pyproject.toml
	rm -rf $(RUNTIME_VENV)
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install --quiet -e .
	$(RUNTIME_VENV)/bin/python -m pip check
	touch $@

# Serve and score one upload from the runtime-only environment (DATABASE_URL and
# REDIS_URL when set); see .ci/runtime_check.py.
runtime-check: $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python .ci/runtime_check.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/score_round.py
	$(PY) benchmarks/ranking_round.py
	$(PY) benchmarks/hostile_uploads.py
	$(PY) benchmarks/deid_recall.py
	$(PY) benchmarks/latency.py
	$(PY) benchmarks/latency.py --uploads 20

clean-data:
	rm -rf data/
