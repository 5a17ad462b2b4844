# Denominator: the two commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench lint venv clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

DEMO_DB ?= demo.db
PORT    ?= 8501

run: $(STAMP)  ## start the app on the offline demo data (http://127.0.0.1:$(PORT))
	test -f $(DEMO_DB) || $(PY) -m annotation demo --db $(DEMO_DB)
	DENOMINATOR_DB=$(DEMO_DB) STREAMLIT_BROWSER_GATHER_USAGE_STATS=false $(PY) -m streamlit run app.py \
		--server.headless true --server.address 127.0.0.1 --server.port $(PORT) --server.fileWatcherType none

test: $(STAMP)  ## the whole suite
	$(PY) -m pytest -q

bench: $(STAMP)  ## benchmarks: metrics vs pytrec_eval and ir_measures; the labelling loop; the judge (figures in the README)
	@fail=0; \
	$(PY) bench/run.py || fail=1; \
	$(PY) bench/labelling.py --ops 500 || fail=1; \
	$(PY) bench/judge.py || fail=1; \
	$(PY) bench/agreement.py || fail=1; \
	if [ -x /usr/bin/chromium ]; then $(PY) bench/browser.py || fail=1; \
	else echo "bench/browser.py skipped: /usr/bin/chromium missing"; fi; \
	if [ $$fail = 1 ]; then echo "make bench: a target was missed (see above)"; fi; exit $$fail

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
