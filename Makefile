# ragsite: `make run` serves it, `make test` runs every test. Both set themselves up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: run test install install-dev migrate bench clean-db stop-db system-packages test-packages build-packages \
	messages compile-messages gettext-package

# Tesseract and its language data read scanned PDF pages (OCR). Installed when missing and
# possible (root with apt-get); without them documents still index and say OCR is unavailable.
OCR_PACKAGES := tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-ces tesseract-ocr-rus \
	tesseract-ocr-vie tesseract-ocr-spa tesseract-ocr-fra tesseract-ocr-chi-sim
# Fonts the tests draw their scanned pages with (Latin, Cyrillic, Vietnamese; Chinese); Redis for the
# tests of the Redis queue and layer (started by the tests on 127.0.0.1 in a temporary folder).
# OpenLDAP's slapd for the LDAP sign-in tests (started by the tests in a temporary folder).
# gettext: the translation test runs makemessages (xgettext, msgmerge) over a copy of the sources.
# Samba's smbd and Dovecot's IMAP server for the watched-source tests (each started by the tests with
# its own configuration in a temporary folder, on 127.0.0.1 and a free port).
TEST_PACKAGES := $(OCR_PACKAGES) fonts-dejavu-core fonts-noto-cjk redis-server slapd ldap-utils gettext \
	samba dovecot-imapd
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

# GNU gettext's msgfmt compiles the translation catalogues (locale/*/LC_MESSAGES/*.po -> .mo, not committed);
# xgettext/msgmerge are what `make messages` runs.
gettext-package:
	$(call apt_ensure,gettext,pages stay in English: the catalogues cannot be compiled)

system-packages:
	$(call apt_ensure,$(OCR_PACKAGES),scanned pages will not be searchable: OCR is unavailable)
	$(call apt_ensure,fonts-dejavu-core,a conversation cannot be exported as PDF)

build-packages:
	$(call apt_ensure,$(LDAP_BUILD_PACKAGES),pip cannot build python-ldap)

test-packages:
	$(call apt_ensure,$(TEST_PACKAGES),the OCR, LDAP and source tests will fail)

run: install migrate system-packages compile-messages
	@$(PY) manage.py serve --ensure-admin

test: install-dev test-packages compile-messages
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

# Translations (docs/translations.md). compile-messages: each catalogue's .mo, rebuilt when its .po changed.
PO_FILES := $(wildcard locale/*/LC_MESSAGES/*.po)
compile-messages: gettext-package $(PO_FILES:.po=.mo)
%.mo: %.po
	@msgfmt --check -o $@ $<

# make messages: collect every translatable string into each language's catalogues (django.po for
# Python and templates, djangojs.po for the scripts), then compile. A new language: make messages LANGS=ru.
LANGS ?= $(notdir $(wildcard locale/*))
MESSAGES_IGNORE := --ignore=tests --ignore=bench --ignore=var --ignore=artifacts --ignore=media \
	--ignore=staticfiles --ignore='*/vendor/*'
messages: install gettext-package
	$(PY) manage.py makemessages $(addprefix -l ,$(LANGS)) --domain django --add-location=file --no-obsolete $(MESSAGES_IGNORE)
	$(PY) manage.py makemessages $(addprefix -l ,$(LANGS)) --domain djangojs --add-location=file --no-obsolete $(MESSAGES_IGNORE)
	@$(MAKE) --no-print-directory compile-messages
