# ragsite: `make run` serves it, `make test` runs every test. Both set themselves up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: run test install install-dev migrate bench clean-db stop-db system-packages test-packages build-packages

# Tesseract and its language data read scanned PDF pages (OCR). Installed when missing and
# possible (root with apt-get); without them documents still index and say OCR is unavailable.
OCR_PACKAGES := tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-ces tesseract-ocr-rus \
	tesseract-ocr-vie tesseract-ocr-spa tesseract-ocr-fra tesseract-ocr-chi-sim
# Fonts the tests draw their scanned pages with (Latin, Cyrillic, Vietnamese; Chinese); Redis for the
# tests of the Redis queue and layer (started by the tests on 127.0.0.1 in a temporary folder).
# OpenLDAP's slapd for the LDAP sign-in tests (started by the tests in a temporary folder).
TEST_PACKAGES := $(OCR_PACKAGES) fonts-dejavu-core fonts-noto-cjk redis-server slapd ldap-utils
# python-ldap (LDAP sign-in, django-auth-ldap) has no wheel: pip builds it against these.
LDAP_BUILD_PACKAGES := libldap2-dev libsasl2-dev gcc

define apt_ensure
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian packages:" $$missing; \
	    (apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      --no-install-recommends $$missing >/dev/null) || echo "Could not install" $$missing "- $(2)"; \
	  else echo "Missing Debian packages:" $$missing "(run apt-get install as root) - $(2)"; fi; \
	fi
endef

system-packages:
	$(call apt_ensure,$(OCR_PACKAGES),scanned pages will not be searchable: OCR is unavailable)

build-packages:
	$(call apt_ensure,$(LDAP_BUILD_PACKAGES),pip cannot build python-ldap)

test-packages:
	$(call apt_ensure,$(TEST_PACKAGES),the OCR and LDAP tests will fail)

run: install migrate system-packages
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py serve

test: install-dev test-packages
	@# Tests make their own PostgreSQL in a temporary folder; pytest exit code 5 (no tests) is a failure.
	@env -u DJANGO_SETTINGS_MODULE $(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "No tests were collected: failing."; exit 1; fi; exit $$rc

install: $(VENV)/.installed-run
install-dev: $(VENV)/.installed-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: requirements.txt | $(VENV)/bin/python
	@$(MAKE) --no-print-directory build-packages
	$(PIP) install -q -r requirements.txt
	@touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	@$(MAKE) --no-print-directory build-packages
	$(PIP) install -q -r requirements-dev.txt
	@touch $@ $(VENV)/.installed-run

migrate: install
	@$(PY) manage.py migrate --noinput
	@$(PY) manage.py createcachetable

stop-db:
	@$(PY) -m core.pg stop

clean-db: stop-db
	rm -rf var/pgdata
