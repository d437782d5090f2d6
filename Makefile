# sparkfleet front door. Two commands matter:
#   make lab    bring up the local lab cluster in containers and run a Pi job on it
#   make test   run the whole test suite (what CI runs: .ci/run)
# Both work on a fresh Debian machine as root: they install and start Docker,
# create the virtualenv and build the base image when missing.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV ?= .venv
# Key of the Molecule test hosts' `admin` user (bind-mounted as its authorized_keys).
SSH_KEY := .cache/ssh/id_ed25519
PYTHON ?= python3
# Molecule scenarios, in the order `make molecule` runs them (scripts/molecule-lanes.sh), and
# `lab-test` (tests/lab/run, also `make lab-test`; it also checks both notebook topologies on the
# lab's hub, hub + Swarm then fat master, with worker-1 a GPU worker): those in SIDE_SCENARIOS (each
# on its own hosts and ports) run in a second lane beside the others, in SCENARIOS' order, chosen so
# that the two lanes take about as long; MOLECULE_LANES=1 runs all in one lane. One scenario:
# `make molecule SCENARIOS=common`.
SCENARIOS ?= preflight common hadoop spark_cluster spark_tarball livy mesos lab-test
SIDE_SCENARIOS ?= preflight lab-test
MOLECULE_LANES ?= 2
export SCENARIOS SIDE_SCENARIOS MOLECULE_LANES
# Scenarios whose software cannot be downloaded here: they run when their artifacts are
# given (SPARKFLEET_ARTIFACT_MIRROR: Apache's Hadoop and Livy files; SPARKFLEET_MESOS_URL and
# SPARKFLEET_MESOS_CHECKSUM: an administrator's Mesos build), and are skipped with the
# reason printed otherwise (each scenario also skips by itself when run directly).
export SPARKFLEET_ARTIFACT_MIRROR ?=
export SPARKFLEET_MESOS_URL ?=
export SPARKFLEET_MESOS_CHECKSUM ?=

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0
# Behind an intercepting proxy, pip in the venv must use the system CA bundle
# (which carries the proxy's CA), not certifi's.
ifneq ($(wildcard /etc/ssl/certs/ca-certificates.crt),)
export PIP_CERT ?= /etc/ssl/certs/ca-certificates.crt
endif

# MITOGEN=1 (optional, never required): the playbooks make runs (`make lab MITOGEN=1`, `make status
# MITOGEN=1`) use Mitogen for Ansible's mitogen_linear strategy (a warm Python per host instead of one
# interpreter and module payload per task). It must be in the venv:
# `.venv/bin/pip install mitogen==0.3.54`. ansible-core warns that third-party strategies are
# deprecated; the suite is run and passes without it. Measured: bench/run --mitogen (bench/README.md).
ifeq ($(MITOGEN),1)
MITOGEN_STRATEGIES := $(shell $(VENV)/bin/python -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__) + "/plugins/strategy")' 2>/dev/null)
ifeq ($(MITOGEN_STRATEGIES),)
$(error MITOGEN=1 needs Mitogen for Ansible in $(VENV): $(VENV)/bin/pip install mitogen==0.3.54 (it is optional))
endif
export ANSIBLE_STRATEGY_PLUGINS := $(MITOGEN_STRATEGIES)
export ANSIBLE_STRATEGY := mitogen_linear
endif

.PHONY: help venv collections docker image ssh-key lint unit-tools unit sanity cloud static test-hosts molecule lab-test test lab lab-destroy bench status gpu-hours clean

help: ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# uv installs the pinned requirements into the virtualenv, in a fraction of pip's time and CPU even
# when pip's cache is warm (bench/figures.md): that is the start of every fresh run (CI's), before
# anything else can. pip does it when uv cannot be installed, or when pip
# is given an index of its own (PIP_INDEX_URL or index-url in pip.conf: uv would not read it). uv
# trusts the system store (extra CA certificates, a proxy's) and PIP_CERT when set, as pip does.
UV_VERSION ?= 0.13.9
venv: $(VENV)/.requirements.txt ## Create the virtualenv from requirements.txt (pinned).
$(VENV)/.requirements.txt: requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@if [ -z "$${PIP_INDEX_URL:-}" ] && ! $(VENV)/bin/pip config get global.index-url >/dev/null 2>&1 \
	    && $(VENV)/bin/pip install -q --disable-pip-version-check uv==$(UV_VERSION); then \
	  echo "venv: uv pip install -r requirements.txt"; \
	  env UV_NATIVE_TLS=1 $${PIP_CERT:+SSL_CERT_FILE=$$PIP_CERT} $(VENV)/bin/uv pip install -q --python $(VENV)/bin/python -r requirements.txt; \
	else \
	  echo "venv: pip install -r requirements.txt"; \
	  $(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt; \
	fi
	@cp requirements.txt $@

collections: venv ## The pinned collections: from the ansible bundle, else from Galaxy.
	@$(VENV)/bin/python scripts/check-collections.py || { \
	  echo "collections: installing requirements.yml from Galaxy into ./collections"; \
	  ansible-galaxy collection install -r requirements.yml -p collections; \
	  $(VENV)/bin/python scripts/check-collections.py; }

docker: ## Install and start the Docker engine if needed.
	@bash scripts/ensure-docker.sh

image: docker ## Build the base image from Debian packages (cached by recipe).
	@bash images/debian12-systemd/build.sh

ssh-key: $(SSH_KEY) ## The test hosts' SSH key pair (Molecule scenarios log in with it).
$(SSH_KEY):
	@command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || { \
	  echo "ssh-key: installing openssh-client (Ansible reaches hosts over SSH)"; \
	  scripts/apt-get.sh update -qq && DEBIAN_FRONTEND=noninteractive scripts/apt-get.sh install -y -qq openssh-client >/dev/null; }
	@mkdir -p -m 0700 $(dir $@)
	ssh-keygen -q -t ed25519 -N '' -C sparkfleet-molecule -f $@

lint: venv ## yamllint and ansible-lint (production profile).
	yamllint -s .
	ansible-lint --profile production

# Debian's programs some unit tests run a rendered configuration in (command:package); a fresh
# machine has none. Their daemons are stopped and disabled: the tests start their own.
UNIT_TOOLS := nginx:nginx-light promtool:prometheus nft:nftables
unit-tools: ## Debian's nginx, promtool and nft for the unit tests, when missing.
	@missing=""; for t in $(UNIT_TOOLS); do \
	  command -v "$${t%%:*}" >/dev/null || [ -x "/usr/sbin/$${t%%:*}" ] || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "unit-tools: installing$$missing"; \
	  scripts/apt-get.sh --update-install --no-install-recommends $$missing >/dev/null; \
	  systemctl disable --now nginx prometheus >/dev/null 2>&1 || true; fi

unit: venv unit-tools ## pytest unit tests (plugins, rendered templates, role contracts).
	pytest -q tests/unit

sanity: venv ## ansible-test sanity on the built and installed collection (offline).
	bash scripts/sanity.sh

cloud: venv ## Cloud playbooks offline: AWS against moto, GCP against Compute-API-shaped fixtures.
	pytest -q -rs tests/cloud

molecule: venv collections image ssh-key ## Every Molecule scenario (converge, idempotence, verify) and the lab test, in two lanes.
	@bash scripts/molecule-lanes.sh

lab-test: venv collections image ssh-key ## The lab end to end: make lab, a worker killed mid-job, replace_worker.yml, full strength again (replaces the lab).
	bash tests/lab/run

# The static suites (lint, unit, sanity, cloud: CPU, no test host) run in the background at the
# lowest CPU priority beside the engine, the image and the Molecule lanes, in the CPU the lanes
# leave idle (scripts/test.sh); their output is printed when the lanes end.
test: venv collections ## The whole suite (CI runs this): the Molecule lanes, the static suites beside them at nice 19.
	@bash scripts/test.sh
	@echo "make test: all suites passed"

static: venv ## lint, unit, sanity and cloud, one after the other.
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory sanity
	@$(MAKE) --no-print-directory cloud

# One after the other: the engine's and the key's apt-get must not meet on dpkg's lock.
test-hosts:
	@$(MAKE) --no-print-directory docker
	@$(MAKE) --no-print-directory image
	@$(MAKE) --no-print-directory ssh-key

lab: venv collections image ssh-key ## Local lab: 1 master + 2 workers + a hub (JupyterHub, Swarm) in containers, then a Pi job.
	ansible-playbook playbooks/bake.yml
	ansible-playbook playbooks/lab.yml
	ansible-playbook site.yml
	ansible-playbook playbooks/smoke_test.yml

bench: venv collections image ssh-key ## Benchmark lab clusters 1 master + N workers, tuned vs defaults (BENCH_ARGS="2 4 8"); replaces the lab.
	bench/run $(BENCH_ARGS)

status: venv ## One table: hosts, groups, reachable, Spark worker, GPUs, Swarm, services, what is wrong; alerts.
	ansible-playbook playbooks/status.yml

# The hub is asked with its gpu-hours service's token (or an admin's in SPARKFLEET_HUB_TOKEN); a period with
# GPU_HOURS_ARGS="-e gpu_hours_since=2026-11-01T00:00:00Z -e gpu_hours_until=2026-12-01T00:00:00Z".
gpu-hours: venv ## GPU-hours per hub user, group and service from the Swarm's and the hub's records.
	ansible-playbook playbooks/gpu_hours.yml $(GPU_HOURS_ARGS)

lab-destroy: venv ## Remove the lab containers and network.
	ansible-playbook playbooks/lab.yml -e lab_state=absent


clean: ## Remove the virtualenv and caches (not the images).
	rm -rf $(VENV) .cache .pytest_cache
