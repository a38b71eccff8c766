# The two commands: `make demo` and `make test`. Each installs what is missing first.
.PHONY: setup demo test quick durations lint unit integration clean image reference fuzz

VENV := .venv/bin
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)

setup:
	@scripts/setup.sh

demo: setup
	$(VENV)/h2lab demo

lint: setup
	$(VENV)/ruff check src tests scripts bench fuzz
	$(VENV)/ruff format --check src tests scripts bench fuzz
	$(VENV)/mypy
	$(VENV)/mypy scripts bench tests fuzz
	test -z "$$(cd origin && $(dir $(GO))gofmt -l .)" || { echo "gofmt: run gofmt -w origin"; exit 1; }
	cd origin && GOTOOLCHAIN=local $(GO) vet -tags http2legacy ./... \
	  && GOTOOLCHAIN=local $(GO) test -count=1 -tags http2legacy ./...

# The whole suite: the integration tests in lanes side by side, then the tests marked `alone`
# with the unit tests and lint beside them at the idle scheduling class, then the 20 slowest
# (tests/suite.py; docs/testing.md). LANES=1 runs the side-by-side part one test at a time.
export LANES
test: setup
	$(VENV)/python tests/suite.py --lint "$(MAKE) --no-print-directory lint"

# The quick tier: lint and the unit tests, side by side (a couple of minutes).
quick: setup lint
	$(VENV)/pytest tests/unit -n 2 -q

# Measure the suite and keep each test's duration in tests/durations.json (it orders the suite).
durations: setup
	$(VENV)/python tests/suite.py --durations-out tests/durations.json

unit: setup
	$(VENV)/python tests/suite.py tests/unit

integration: setup
	$(VENV)/python tests/suite.py tests/integration

clean: setup
	$(VENV)/h2lab clean

# docs/reference.md from the code (commands, flags, exit codes, experiment keys, factors,
# metrics, options), and docs/architecture.md's module index; tests/unit/test_reference.py and
# tests/unit/test_architecture.py fail when they are out of date.
reference: setup
	$(VENV)/python -m h2lab.reference > docs/reference.md
	$(VENV)/python -m h2lab.module_index --write

# Coverage-guided fuzzing of every parser of outside data (fuzz/targets.py), FUZZ_SECONDS per
# target (default 60; FUZZ_ONLY=warc,har for some); prints executions, coverage, peak memory
# and findings per target. See docs/fuzzing.md.
FUZZ_SECONDS ?= 60
FUZZ_ONLY ?=
fuzz: setup
	$(VENV)/python -m fuzz.run --seconds $(FUZZ_SECONDS) --only "$(FUZZ_ONLY)"

# Every seed paper's experiment, full variants, into reproduction/<name>/ (long; resumable;
# not part of CI). See REPRODUCTION.md.
.PHONY: reproduce
reproduce: setup
	@scripts/reproduce.sh

# The container image h2lab:latest (podman, a Debian 12 base made by mmdebstrap; as root; long
# the first time). See docs/container.md.
image:
	@scripts/build-image.sh
