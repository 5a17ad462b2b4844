# Denominator: the two commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
INTEROP := .venv-interop

.PHONY: run test test-fast interop bench lint venv clean postgres docs-images

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	# the project itself, editable, so .venv/bin/denominator runs this checkout (its dependencies are above)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

# One database for the app and every command line: $$DENOMINATOR_DB, else ./denominator.db. The demo
# is built into it when it is missing or holds no data (annotation.store.base.holds_nothing), so
# `python -m annotation annotators add NAME` in another terminal gives a token this app accepts.
# PORT (make run PORT=9000, or in the environment) is the port; else denominator serve's default, 8501.
run: $(STAMP)  ## start the app on the default database, the demo in it when empty (http://127.0.0.1:8501)
	$(PY) -m denominator demo --if-empty
	$(PY) -m denominator serve $(if $(PORT),--port $(PORT))

test: $(STAMP) $(INTEROP)/.installed  ## the whole suite, then the exports read by the destination libraries
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory interop

# Everything but the tests marked slow (pyproject.toml): the browser tests (tests/e2e), the load and
# crash tests (test_store_concurrency, test_crash), the kill-and-resume judge runs (test_judge_resume),
# the coverage simulations and computations (test_estimate: coverage, covers_every_truth), the README
# snapshot, the hash-seed CLI runs (test_baseline), the fuzz tests of test_hostile and test_formats
# (with their CLI-process and 16 MB / 100,000-line files) and the 300-example property tests
# (test_metrics_oracle, test_audit, test_agreement's kappa), the wheel installed in a new venv
# (tests/e2e/test_wheel.py). Measured 2026-12-03 on the 2 shared cores (load 1-4, helpers beside),
# `time .venv/bin/python -m pytest -q [-m 'not slow'] -p no:cacheprovider`, with CI=true:
# all 2069 tests 948 s (630 s user + 99 s sys CPU); the 1930 not slow 314 s. After #29 (same day, load 1-2):
# all 2120 tests 1243 s (877 s user + 142 s sys: the wheel, the provider browser tests); 1971 not slow 359 s.
# After #30 (load 2-4, helpers beside): all 2212 tests (2205 passed, 7 skipped) 1122-1216 s; the not slow 1988 (before the last merges) 574 s.
# After #38 and #39's first slices (2026-12-04): all 2449 tests (2442 passed, 7 skipped) 1168 s; 1741 s with two CPU hogs beside it.
# `-m 'not wall_clock'` leaves out the 16 tests that hold work to a wall-clock bound.
test-fast: $(STAMP)  ## the suite without the slow tests and the PostgreSQL runs, for the edit-test loop (`make test` runs them all)
	$(PY) -m pytest -q -m 'not slow and not postgres'

$(INTEROP)/.installed: requirements-interop.txt
	test -x $(INTEROP)/bin/python || $(PYTHON) -m venv $(INTEROP)
	$(INTEROP)/bin/python -m pip install --quiet --upgrade pip
	$(INTEROP)/bin/python -m pip install --quiet -r requirements-interop.txt
	touch $@

# The files the loaders read are the same from either backend (make test checks that): the interop
# venv runs the SQLite half and carries no PostgreSQL driver.
interop: $(INTEROP)/.installed  ## the exports read by RAGAS's, DeepEval's and Phoenix's own loaders (a separate venv)
	DENOMINATOR_INTEROP=1 DEEPEVAL_TELEMETRY_OPT_OUT=1 RAGAS_DO_NOT_TRACK=true \
		$(INTEROP)/bin/python -m pytest -q -p no:cacheprovider -m 'not postgres' tests/test_exports.py

bench: $(STAMP)  ## benchmarks: metrics vs pytrec_eval and ir_measures; the fixed cost on 1M lines beside trec_eval; the labelling loop; key press to next item beside plain Streamlit; the Metrics page on a 71 MB upload beside plain Streamlit; the judge (figures in docs/benchmarks.md)
	@fail=0; \
	$(PY) bench/run.py || fail=1; \
	$(PY) bench/fixed_cost.py || fail=1; \
	$(PY) bench/labelling.py --ops 500 || fail=1; \
	$(PY) bench/judge.py || fail=1; \
	$(PY) bench/agreement.py || fail=1; \
	$(PY) bench/trace_import.py || fail=1; \
	$(PY) bench/estimate.py || fail=1; \
	$(PY) bench/store_load.py || fail=1; \
	$(PY) bench/metrics_page_profile.py || fail=1; \
	if [ -x /usr/bin/chromium ]; then $(PY) bench/browser.py || fail=1; $(PY) bench/metrics_page.py || fail=1; \
	else echo "bench/browser.py and bench/metrics_page.py skipped: /usr/bin/chromium missing"; fi; \
	if [ $$fail = 1 ]; then echo "make bench: a target was missed (see above)"; fi; exit $$fail

# The PostgreSQL tests (marker postgres, in `make test`) start their own server from Debian's
# postgresql package (tests/postgres_server.py: initdb + pg_ctl on a free port on 127.0.0.1, run as the
# unprivileged postgres user when the tests run as root). This installs the package; .ci/run does too.
postgres:  ## install Debian's postgresql package for the PostgreSQL tests (they start and stop their own server)
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then echo "postgresql is installed"; else \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; fi

# The docs' pictures of the main pages are the browser tests' own (tests/e2e/test_session.py writes
# test-artifacts/docs-*.png while it visits each page of the demo): run that test, then copy them.
docs-images: $(STAMP)  ## refresh docs/img from the browser test's pictures of the main pages
	$(PY) -m pytest -q -p no:cacheprovider tests/e2e/test_session.py -k survives_a_kill
	for name in metrics label-chunks judge review; do cp test-artifacts/docs-$$name.png docs/img/$$name.png; done

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(INTEROP) .pytest_cache .ruff_cache
