# homelab.postmortem: two commands matter.
#   make audit   set up a virtualenv and the collection, audit this machine
#   make test    set up everything the tests need, then run every test
SHELL := /bin/bash
.DEFAULT_GOAL := help

# CURDIR keeps a path with spaces whole (abspath would split it); recipes quote every path.
REPO := $(CURDIR)
VENV := $(REPO)/.venv
BUILD := $(REPO)/build
COLLECTIONS := $(BUILD)/collections
REPORT_DIR ?= $(REPO)/postmortem-report
INVENTORY ?= $(REPO)/inventory/localhost.yml

export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export POSTMORTEM_COLLECTIONS_PATH := $(COLLECTIONS)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Only the test targets get the test machine's podman settings: what `make audit`
# runs must see the host exactly as a user's own ansible-playbook would.
TEST_TARGETS := test test-env units e2e sanity lint molecule bench matrix
$(TEST_TARGETS): export CONTAINERS_CONF := $(BUILD)/containers.conf

.PHONY: help audit install test venv collection test-env units e2e sanity lint molecule bench ee clean \
	docs matrix galaxy-import release-check

help:
	@echo "make audit   - set up and audit this machine (report in $(REPORT_DIR)); no root needed"
	@echo "               INVENTORY=path  audit that inventory instead (default: inventory/localhost.yml)"
	@echo "               AUDIT_ARGS='-b -K -e postmortem_fail_on=at_risk'  more ansible-playbook options"
	@echo "               REPORT_DIR=path  where the reports go"
	@echo "make install - install the collection into ~/.ansible/collections for your own ansible-playbook"
	@echo "               runs (ansible-playbook is .venv/bin/ansible-playbook, or your own ansible-core 2.19+)"
	@echo "make test    - set up and run every test (unit, e2e, sanity, lint, Molecule), as CI does;"
	@echo "               needs root (or passwordless sudo): it installs Debian packages, builds images,"
	@echo "               starts dockerd, podman containers and llama-server; about 25 min cold"
	@echo "make units | e2e | sanity | lint | molecule | bench | ee - parts of make test, and the benchmark"
	@echo "make docs    - the documentation site into build/docs (every module, role, playbook and docs page)"
	@echo "make matrix  - unit tests, sanity and the audit on ansible-core 2.20 and 2.21 (needs Python 3.12)"
	@echo "make galaxy-import - galaxy-importer (what Galaxy runs on upload) on the built tarball"
	@echo "make release-check REPOSITORY=url - before publishing: the release is cut, galaxy-importer passes"
	@echo "               with the real repository address (README.md, Releasing)"
	@echo "make clean   - remove build/, the report directory and pytest's cache (.venv stays)"

venv:
	@scripts/venv.sh requirements/controller.txt

collection: venv
	@scripts/install-collection.sh

audit: collection
	@printf '==> %s\n' "ANSIBLE_COLLECTIONS_PATH='$(COLLECTIONS)' ANSIBLE_STDOUT_CALLBACK=homelab.postmortem.summary '$(VENV)/bin/ansible-playbook' homelab.postmortem.audit -i '$(INVENTORY)' -e '{\"postmortem_report_dir\": \"$(REPORT_DIR)\"}' $(AUDIT_ARGS)"
	@ANSIBLE_STDOUT_CALLBACK="$${ANSIBLE_STDOUT_CALLBACK:-homelab.postmortem.summary}" \
		"$(VENV)/bin/ansible-playbook" homelab.postmortem.audit -i "$(INVENTORY)" \
		-e '{"postmortem_report_dir": "$(REPORT_DIR)"}' $(AUDIT_ARGS)

# Into the user's default collections path, so a plain ansible-playbook finds it.
install: collection
	@scripts/install-collection.sh --user

# Everything the tests need: Debian packages (root), test Python packages,
# podman's config and systemd image, llama-server and the model, containers.podman.
test-env: collection
	@scripts/venv.sh requirements/controller.txt requirements/test.txt requirements/test-peft.txt
	@scripts/setup-system.sh
	@scripts/setup-podman.sh
	@scripts/setup-quadlet.sh
	@scripts/setup-llama.sh
	@scripts/setup-test-collections.sh
	@scripts/setup-wheels.sh

units: collection
	"$(VENV)/bin/python" -m pytest tests/unit -q

e2e: test-env
	"$(VENV)/bin/python" -m pytest tests/e2e -q -p no:cacheprovider

sanity: test-env
	@scripts/sanity.sh

lint: test-env
	@scripts/lint.sh

molecule: test-env
	@scripts/molecule.sh

# The docs site first: the browser tests open it.
test: test-env
	@scripts/docs.sh
	"$(VENV)/bin/python" -m pytest tests/unit tests/e2e -q -p no:cacheprovider -rs
	@scripts/sanity.sh
	@scripts/lint.sh
	@scripts/galaxy-import.sh
	@scripts/core-matrix.sh
	@scripts/molecule.sh

# Python 3.12 virtualenvs of their own (scripts/core-venv.sh); make test runs all of these.
docs: collection
	@scripts/docs.sh

matrix: collection
	@scripts/core-matrix.sh

galaxy-import: collection
	@scripts/galaxy-import.sh

release-check: collection
	@scripts/release-check.sh "$(REPOSITORY)"

bench: test-env
	"$(VENV)/bin/python" scripts/bench_audit.py

# The execution environment's build context (docs/awx.md); the image is built where a registry is.
ee: test-env
	@scripts/ee.sh

clean:
	rm -rf "$(BUILD)" "$(REPORT_DIR)" .pytest_cache
