# tcpscope — the two newcomer commands are `make demo` and `make test`.

CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/release/tcpscope
DEMO_TRACE := tests/data/loss-snd.pcap

.PHONY: all build build-deps demo demo-lab test lint deps bpf-deps deps-capture bench fuzz clean web web-deps browser-deps test-web bench-view bench-list bench-monitor bench-correlate python python-deps test-python wheel bench-python

all: build

# Only the command: the Python package's library (crates/py) is built by `make python`/`wheel`.
build: web build-deps
	$(CARGO) build --release --bin tcpscope

# What the build links: libpcap for `tcpscope capture` (pkg-config finds it). Installed here, not
# only under `deps`, so that `make demo` works on a fresh machine. The Python package's crate
# (crates/py, a workspace member) has PyO3's build script ask python3 for its version.
build-deps:
	@tools/need-debian.sh /usr/include/pcap/pcap.h:libpcap-dev pkg-config:pkg-config python3:python3

# Runs the main job on a small trace the project recorded itself (see tests/data/README.md).
demo: build
	@echo '$$ tcpscope conns $(DEMO_TRACE)'
	@$(BIN) conns $(DEMO_TRACE)
	@echo
	@echo '$$ tcpscope stats $(DEMO_TRACE)'
	@$(BIN) stats $(DEMO_TRACE)
	@echo
	@echo '$$ tcpscope screen --events $(DEMO_TRACE)'
	@$(BIN) screen --events $(DEMO_TRACE)
	@echo
	@tools/monitor-demo.sh $(BIN)
	@$(MAKE) --no-print-directory demo-lab

# A one-minute experiment in network namespaces (docs/lab.md); needs root.
demo-lab: build
	@if [ "$$(id -u)" != 0 ]; then echo "(skipping the lab demo: it needs root)"; exit 0; fi; \
	tools/need-debian.sh ip:iproute2 nft:nftables tcpdump:tcpdump ethtool:ethtool && \
	echo '$$ tcpscope lab run examples/lab/demo.toml -o lab-demo' && \
	$(BIN) lab run examples/lab/demo.toml -o lab-demo && \
	echo '$$ tcpscope lab report lab-demo' && $(BIN) lab report lab-demo && cat lab-demo/points.csv

# The peer tools are test oracles: install them on a fresh Debian machine if missing.
deps:
	@tools/need-debian.sh --soft "oracle tests will be skipped" tcptrace:tcptrace tshark:tshark

# The monitor's BPF sampler ships its program compiled (crates/monitor/bpf/tcp_iter.bpf.o), so
# building needs no clang; these rebuild it (crates/monitor/bpf/build.sh), which a test does to
# check that the committed object is what the source makes.
deps: bpf-deps
bpf-deps:
	@tools/need-debian.sh --soft "the BPF object's rebuild test will be skipped" \
	  clang-14:clang-14 llvm-strip-14:llvm-14 /usr/include/bpf/bpf_helpers.h:libbpf-dev

# `tcpscope capture` links libpcap; its tests make network namespaces (ip) and read the files
# back with tcpdump as an oracle.
deps: deps-capture
deps-capture:
	@tools/need-debian.sh --soft "building capture or its tests may fail" \
	  /usr/include/pcap/pcap.h:libpcap-dev ip:iproute2 tcpdump:tcpdump
	@tools/need-debian.sh --soft "the lab's tests will be skipped" nft:nftables ethtool:ethtool

test: deps build-deps web lint
	$(CARGO) test --workspace
	$(MAKE) test-web
	$(MAKE) test-python
	@tools/test-skips.sh

# The house style (rustfmt.toml) and clippy's warnings as errors: a red lint is a red CI. The
# fuzz targets are a crate of their own (cargo fuzz builds them with nightly flags): formatted
# and checked here on stable, so that a change of core's API cannot break them unseen.
lint: build-deps web
	@$(CARGO) fmt --version >/dev/null 2>&1 && $(CARGO) clippy --version >/dev/null 2>&1 || \
	  rustup component add rustfmt clippy
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	$(CARGO) check --manifest-path fuzz/Cargo.toml --bins --locked

# --- The browser viewer (web/, docs/viewer.md): built with npm, embedded by crates/view ---
WEB_SRC := $(wildcard web/src/*) web/index.html web/vite.config.ts web/tsconfig.json

# Node and npm from Debian when missing (the build needs them; CI reaches Debian and npm).
web-deps:
	@tools/need-debian.sh npm:npm node:nodejs

# `npm ci`, not `npm install`: it installs exactly what the tracked lock file says and never
# rewrites it, so a build leaves the clone clean. The lock lists every platform's optional
# rollup package (as `npm install` writes it on any platform); `npm ci` fetches only this
# machine's.
web/node_modules/.package-lock.json: web/package-lock.json | web-deps
	cd web && npm ci --no-audit --no-fund

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SRC)
	cd web && npm run build

web: web/dist/index.html

# Debian's chromium for the browser tests (playwright-core drives it; no browser download).
browser-deps:
	@tools/need-debian.sh chromium:chromium

# Loads the recorded traces in the viewer and the report, in a real browser.
test-web: web browser-deps build-deps
	$(CARGO) build -p tcpscope
	cd web && TCPSCOPE_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/debug/tcpscope node --test tests/

# Needs root (the bulk input is recorded in network namespaces); see docs/performance.md.
bench: bench-view bench-list bench-monitor bench-correlate bench-python
	bench/run.sh

# `correlate` on two captures of the bulk transfer, against `stats` on the same files
# (docs/correlate.md).
bench-correlate:
	bench/correlate.sh

# 10,000 sockets sampled at 10 Hz against `ss -tin` (docs/monitor.md).
bench-monitor:
	bench/monitor.sh

# Zoom latency and frame time of the viewer on a five-million-packet connection.
VIEW_TRACE := bench/out/view-5m.pcap

$(VIEW_TRACE):
	mkdir -p bench/out
	$(CARGO) run --release -p tcpscope-view --example bigtrace -- $@ 5000000

bench-view: build browser-deps $(VIEW_TRACE)
	cd web && TCPSCOPE_BIN=$(abspath $(BIN)) BIGTRACE=$(CURDIR)/$(VIEW_TRACE) node bench/zoom.mjs

# The connection list and the report on 200,000 connections (bench/gen-many.py's trace).
MANY_TRACE := bench/out/many.pcap

$(MANY_TRACE):
	mkdir -p bench/out
	python3 bench/gen-many.py $@.tmp && mv $@.tmp $@

bench-list: build browser-deps $(MANY_TRACE)
	cd web && TCPSCOPE_BIN=$(abspath $(BIN)) MANY=$(CURDIR)/$(MANY_TRACE) node bench/list.mjs

# --- The Python package (crates/py, docs/python.md): PyO3 + maturin, an abi3 wheel ---
# A virtual environment of the Makefile's own (under cargo's target directory, so each clone
# has its own and `make clean` removes it) with the build tool and what the tests use.
TARGET := $(abspath $(or $(CARGO_TARGET_DIR),target))
VENV := $(TARGET)/venv
PY_PKGS := maturin pyarrow pandas duckdb pytest "dask[dataframe,distributed]"

# Debian's python3 has `venv` without pip's bootstrap (ensurepip) unless python3-venv is in.
python-deps:
	@tools/need-debian.sh python3:python3
	@python3 -c 'import ensurepip, venv' 2>/dev/null || tools/need-debian.sh /usr/share/doc/python3-venv:python3-venv

$(VENV)/.made: | python-deps
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q $(PY_PKGS)
	touch $@

# The native module in cargo's release profile and target directory (CARGO_TARGET_DIR is
# passed through), installed into the venv: it reuses what `make build` compiled.
python: $(VENV)/.made
	cd crates/py && VIRTUAL_ENV=$(VENV) $(VENV)/bin/maturin develop --release -q

# The wheel a fresh machine installs (`pip install` of it, or of crates/py).
wheel: $(VENV)/.made
	cd crates/py && $(VENV)/bin/maturin build --release -q -o $(TARGET)/wheels

# pytest: schemas, equality with `stats --json` (the debug binary), damaged captures, and the
# Dask cluster test (docs/python.md, docs/scale.md). The module is built in the dev profile,
# from what `cargo test --workspace` compiled (a release build of core, arrow and parquet
# would add ten minutes on two cores); `make python` puts the release one back.
test-python: $(VENV)/.made build-deps
	$(CARGO) build -p tcpscope
	cd crates/py && VIRTUAL_ENV=$(VENV) $(VENV)/bin/maturin develop -q
	cd crates/py && TCPSCOPE_BIN=$(TARGET)/debug/tcpscope $(VENV)/bin/pytest -q -p no:cacheprovider tests

# Export and Python read against stats, and the LocalCluster of 2 workers (docs/scale.md).
# `read` is timed in the Makefile's venv and in one holding only the wheel and what it requires,
# as a plain `pip install` leaves it (no numpy: pyarrow imports it whenever it is there).
PLAIN_VENV := $(TARGET)/venv-plain

bench-python: build python wheel
	rm -rf $(PLAIN_VENV)
	python3 -m venv $(PLAIN_VENV)
	$(PLAIN_VENV)/bin/pip install -q $(TARGET)/wheels/tcpscope-*.whl
	TCPSCOPE_BIN=$(abspath $(BIN)) BENCH_PY_PLAIN=$(PLAIN_VENV)/bin/python $(VENV)/bin/python bench/python.py

# Each target runs FUZZ_SECONDS; see docs/fuzzing.md.
FUZZ_SECONDS ?= 600

fuzz:
	fuzz/seed.sh
	cd fuzz && for t in capture_reader decode pipeline export; do \
	  RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 || exit 1; \
	done

clean:
	$(CARGO) clean
