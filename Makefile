# The two commands: `make demo` and `make test`. Each installs what is missing first.
.PHONY: setup demo test lint unit integration clean

VENV := .venv/bin

setup:
	@scripts/setup.sh

demo: setup
	$(VENV)/h2lab demo

lint: setup
	$(VENV)/ruff check src tests
	$(VENV)/ruff format --check src tests
	$(VENV)/mypy

test: setup lint
	$(VENV)/pytest

unit: setup
	$(VENV)/pytest tests/unit

integration: setup
	$(VENV)/pytest tests/integration

clean: setup
	$(VENV)/h2lab clean
