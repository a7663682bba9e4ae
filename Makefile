# Two commands: `make demo` serves the site with demo data; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PORT

.PHONY: demo test serve migrate worker bench clean-data

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
	@echo "  Ctrl-C stops the server and the worker."
	@echo
	$(PY) manage.py serve 127.0.0.1:$(PORT)

serve: migrate
	$(PY) manage.py serve 127.0.0.1:$(PORT)

worker: $(VENV)/.installed
	$(PY) -m celery -A leaderboard worker --beat --loglevel INFO --queues scoring

# Tests keep their own data folder (SQLite test database, file broker, uploads),
# so a running demo never sees their tasks.
test: $(VENV)/.installed-dev
	DATA_DIR=$(CURDIR)/data/test $(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/score_round.py
	$(PY) benchmarks/hostile_uploads.py
	$(PY) benchmarks/deid_recall.py
	$(PY) benchmarks/latency.py

clean-data:
	rm -rf data/
