# tcpscope — the two newcomer commands are `make demo` and `make test`.

CARGO ?= cargo
BIN := target/release/tcpscope
DEMO_TRACE := tests/data/loss-snd.pcap

.PHONY: all build demo test deps deps-capture bench fuzz clean

all: build

build:
	$(CARGO) build --release

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

# The peer tools are test oracles: install them on a fresh Debian machine if missing.
deps:
	@missing=""; \
	for t in tcptrace:tcptrace tshark:tshark; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "note:$$missing not installed and not root: oracle tests will be skipped"; \
	  fi; \
	fi

# `tcpscope capture` links libpcap; its tests make network namespaces (ip) and read the files
# back with tcpdump as an oracle.
deps: deps-capture
deps-capture:
	@missing=""; \
	[ -e /usr/include/pcap.h ] || [ -e /usr/include/pcap/pcap.h ] || pkg-config --exists libpcap 2>/dev/null || missing="$$missing libpcap-dev"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v tcpdump >/dev/null 2>&1 || missing="$$missing tcpdump"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "note:$$missing not installed and not root: building capture or its tests may fail"; \
	  fi; \
	fi

test: deps
	$(CARGO) test --workspace

# Needs root (the bulk input is recorded in network namespaces); see docs/performance.md.
bench:
	bench/run.sh

# Each target runs FUZZ_SECONDS; see docs/fuzzing.md.
FUZZ_SECONDS ?= 600

fuzz:
	fuzz/seed.sh
	cd fuzz && for t in capture_reader decode pipeline; do \
	  RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 || exit 1; \
	done

clean:
	$(CARGO) clean
