# Two commands do everything on a fresh machine: `make preview` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: venv preview preview-consumer test lint clean

$(VENV)/.installed: requirements.txt requirements-dev.txt policies/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## Offline preview of a stack (default dev): no cloud account, no Pulumi CLI.
preview: venv
	$(PY) -m offline preview --stack $(STACK)

## Offline preview of examples/consumer against this project's offline outputs of STACK.
preview-consumer: venv
	$(PY) -m offline preview --project examples/consumer --stack $(STACK)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

## Lint + the whole test suite.
test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
