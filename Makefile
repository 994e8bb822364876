# The two set-up commands of the README. Both create their own virtualenv in .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tilewise demo

# Both CPUs (one pytest-xdist worker each); a worker takes queued tests from the other when
# it runs dry. A fixed sample of the slow cases runs: TILEWISE_TESTS=all make test runs all
# (CI does); PYTEST_ARGS passes more options (docs/testing.md).
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist worksteal $(PYTEST_ARGS)

clean:
	rm -rf $(VENV)
