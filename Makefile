# ragsite: `make run` serves it, `make test` runs every test. Both set themselves up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: run test install install-dev migrate bench clean-db stop-db

run: install migrate
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py serve

test: install-dev
	@# Tests make their own PostgreSQL in a temporary folder; pytest exit code 5 (no tests) is a failure.
	@env -u DJANGO_SETTINGS_MODULE $(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "No tests were collected: failing."; exit 1; fi; exit $$rc

install: $(VENV)/.installed-run
install-dev: $(VENV)/.installed-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: requirements.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements.txt
	@touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements-dev.txt
	@touch $@ $(VENV)/.installed-run

migrate: install
	@$(PY) manage.py migrate --noinput
	@$(PY) manage.py createcachetable

stop-db:
	@$(PY) -m core.pg stop

clean-db: stop-db
	rm -rf var/pgdata
