# bloomkit's tasks. `make test` is what CI runs (.ci/run) and what README.md gives.
GO ?= go
PKGS := ./...

# Tests run through internal/testrun (built by make test into bin/test),
# which runs go test -json and prints a line per package as it finishes,
# with its time; the output of every failing test in full; a line at least
# every 20 s saying what is running; and the slowest tests at the end.
TESTBIN := $(CURDIR)/bin/test
TESTRUN := $(TESTBIN)/testrun
TESTFLAGS ?= -count=1 -timeout=30m -vet=off
# The tests' builds leave out debugging information (DWARF), which no test
# reads (stack traces and race reports come from the symbol table): 15% less
# CPU to compile and link. make build and make release are unaffected.
# The build tools run with GOGC=400 (internal/testrun/gogc.sh says why).
TESTGOFLAGS := -gcflags=all=-dwarf=false -ldflags=-w -toolexec=$(CURDIR)/internal/testrun/gogc.sh
TESTENV := BLOOMKIT_TEST_BIN=$(TESTBIN) GOFLAGS="$(strip $(GOFLAGS) $(TESTGOFLAGS))"
# WATCH runs a command that prints little for minutes (go vet, builds on a
# cold cache), with a line every 20 s.
WATCH := sh $(CURDIR)/internal/testrun/watch.sh

.PHONY: test test-long test-short test-parquet testbin gofmt vet lint bench fuzz deps build licenses release image

# staticcheck, for lint's unused check; make lint installs this version.
STATICCHECK_VERSION := v0.8.2
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

# The race detector watches the packages with concurrent code: the server
# and its internal packages with locks or goroutines, redisfilter, cmd/bloom's
# serve, push/pull and signals, and the test harnesses that start servers.
# Every other package runs without it (it proves nothing where there is one
# goroutine, and costs 2-20 times the CPU): a new package with goroutines,
# locks or atomics belongs in this list. server/internal/glob, resp and rdb
# are pure functions of their input; the server's tests, which run under
# -race, exercise them from every goroutine that calls them.
RACE := ./server ./server/internal/acl ./server/internal/aof ./server/internal/backlog ./server/internal/keyspace ./redisfilter ./cmd/bloom ./internal/redistest ./internal/doctest ./internal/testcert ./internal/poll
# bloom is one goroutine's code but for its Sync views: their tests (and
# the examples that use them) run under -race, every test of the package
# runs without it with the other packages.
BLOOM_RACE_RUN := Sync|Concurrent
# In examples/ (its own module: the library's go.mod does not carry what
# only the examples need): the concurrent crawler, the sibling caches and
# the seen-set's server. examples/cacheguard (SQLite translated to Go,
# minutes under the race detector; its own concurrency is a mutex and
# atomics) and the others run without it.
EXAMPLES_RACE := ./crawler ./summaries ./seen

## test: installs what the tests need when it is missing (as root), checks
## gofmt and go vet, and runs every test once: the packages with concurrent
## code under the race detector, the rest without it. go vet has checked
## every package and its tests, so go test's own vet pass (a subset, run
## again for each of a package's builds) is off.
# Within the race packages, a test whose work is one goroutine (bloom's
# statistical tests, cmd/bloom's output tests, which run the binary once)
# skips itself under -race with a message saying "without -race"; testrun
# -rerun-norace then runs exactly those tests again without the race
# detector, so each test runs once. bench/interop checks our readers of
# other libraries' formats against those libraries (bench/go.mod).
# The tests share binaries built once here: BLOOMKIT_TEST_BIN holds bloom
# and the examples (tests build their own when it is unset).
test: deps vet testbin
	$(TESTENV) $(TESTRUN) -rerun-norace -- -race $(TESTFLAGS) $(RACE)
	$(TESTENV) $(TESTRUN) -- -race $(TESTFLAGS) -run='$(BLOOM_RACE_RUN)' ./bloom
	$(TESTENV) $(TESTRUN) -- $(TESTFLAGS) $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(RACE))")
	cd examples && $(TESTENV) $(TESTRUN) -- -race $(TESTFLAGS) $(EXAMPLES_RACE)
	cd examples && $(TESTENV) $(TESTRUN) -- $(TESTFLAGS) $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(EXAMPLES_RACE))")
	cd bench && $(TESTENV) $(TESTRUN) -- $(TESTFLAGS) ./interop
	cd release && $(TESTENV) $(TESTRUN) -- $(TESTFLAGS) ./...

## testbin: what the tests share, in bin/test: testrun (make test's
## reporter), bloom, and the examples' programs.
testbin:
	$(TESTENV) $(WATCH) $(GO) build -o $(TESTBIN)/testrun ./internal/testrun
	$(TESTENV) $(WATCH) $(GO) build -o $(TESTBIN)/bloom ./cmd/bloom
	cd examples && $(TESTENV) $(WATCH) $(GO) build -o $(TESTBIN)/ ./blacklist ./cacheguard ./crawler ./seen ./spell ./summaries

## test-short: every package once without the race detector, the long and
## slow forms skipped (go test -short: no Redis Cluster, no PostgreSQL, the
## statistical tests at their smallest), for the edit-compile loop (under
## 2 minutes on 2 cores with a warm build cache). make test before a commit.
# The packages whose tests take longest start first (go test runs them in
# the order given, two at a time on two cores), so that none is left
# running alone at the end.
SLOWFIRST := ./server ./cmd/bloom ./redisfilter ./bloom
test-short: testbin
	$(TESTENV) $(TESTRUN) -- -short $(TESTFLAGS) $(SLOWFIRST) ./...
	cd examples && $(TESTENV) $(TESTRUN) -- -short $(TESTFLAGS) ./...

## test-long: the long forms of the statistical, end-to-end and release
## tests, which `make test` runs short or skips: every test runs with
## BLOOMKIT_LONG=1 (a test with a long form checks it), without the race
## detector. A test that takes minutes belongs here, with a short form in
## `make test`. Then the differential replay test for REPLAYTIME (default
## 5m) of random command streams, each round crashed, restarted and compared.
REPLAYTIME ?= 5m
test-long: deps testbin test-parquet
	BLOOMKIT_LONG=1 $(TESTENV) $(TESTRUN) -- -count=1 -timeout=60m ./...
	cd examples && BLOOMKIT_LONG=1 $(TESTENV) $(TESTRUN) -- -count=1 -timeout=60m ./...
	cd release && BLOOMKIT_LONG=1 $(TESTENV) $(TESTRUN) -- -count=1 -timeout=60m ./...
	BLOOMKIT_REPLAY_TIME=$(REPLAYTIME) $(GO) test -count=1 -timeout 0 -run '^TestDifferentialReplay$$' -v ./server

## test-parquet: bloom.SplitBlock against parquet-go, a real Parquet
## implementation, both ways (bench/interop, build tag parquet). Its own
## target because parquet-go alone takes about a minute of CPU to compile,
## a tenth of make test's budget; CI runs it beside make test, and
## test-long runs it. The golden file in bloom/testdata pins the bytes
## make test checks our writer against.
test-parquet: testbin
	cd bench && $(TESTENV) $(WATCH) $(GO) vet -tags parquet ./...
	cd bench && $(TESTENV) $(TESTRUN) -- $(TESTFLAGS) -tags parquet ./interop

## deps: install what the tests need from Debian: redis-server, redis-cli,
## redis-sentinel and redis-py with pytest (the server is tested with real
## clients and redis-py's own Bloom tests), PostgreSQL (for
## examples/cacheguard), the wamerican word list (for examples/spell),
## a JDK with Guava (guava/ is tested against the real Guava), promtool
## (package prometheus: deploy/'s alert rules), redis_exporter (package
## prometheus-redis-exporter: INFO's parity with Redis) and systemd-analyze
## (package systemd: deploy/'s unit). Run as root; does nothing when they are already there.
deps:
	@if ! command -v redis-sentinel >/dev/null || ! command -v promtool >/dev/null || ! command -v systemd-analyze >/dev/null || ! command -v prometheus-redis-exporter >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-sentinel prometheus prometheus-redis-exporter systemd >/dev/null; \
		else echo "redis-sentinel, promtool, prometheus-redis-exporter or systemd-analyze missing: run 'sudo make deps' or install redis-sentinel, prometheus, prometheus-redis-exporter and systemd"; fi; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ ! -e /usr/share/dict/american-english ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql wamerican >/dev/null; \
		else echo "PostgreSQL or wamerican missing: run 'sudo make deps' or install postgresql and wamerican"; fi; \
	fi
	@if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || ! /usr/bin/python3 -c 'import redis, pytest, yaml' 2>/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools python3-redis python3-pytest python3-yaml >/dev/null; \
		else echo "redis-server/redis-cli missing: run 'sudo make deps' or install redis-server and redis-tools"; fi; \
	fi
	@if ! command -v javac >/dev/null || [ ! -e /usr/share/java/guava.jar ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends default-jdk-headless libguava-java >/dev/null; \
		else echo "javac or Guava missing: run 'sudo make deps' or install default-jdk-headless and libguava-java"; fi; \
	fi
	@command -v redis-server >/dev/null && redis-server --version || true

## licenses: THIRD_PARTY_LICENSES, the licences of every module the bloom
## binary links (release/licenses; a test fails when it is out of date).
licenses:
	cd release && $(GO) run ./licenses -root .. -o ../THIRD_PARTY_LICENSES

# The build's identity, stamped into the binary (internal/version): the
# release tag, git describe after one, or a pseudo-version before the first.
VPKG := github.com/bloomkit/bloomkit/internal/version
VERSION ?= $(shell release/version.sh)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS = -X $(VPKG).tag=$(VERSION) -X $(VPKG).commit=$(COMMIT) -X $(VPKG).date=$(DATE)
BIN ?= bin/bloom

## build: the bloom binary in ./bin/bloom, stamped with its version.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/bloom

## release: static binaries (CGO_ENABLED=0) for linux and darwin on amd64
## and arm64, each in dist/bloom-VERSION-OS-ARCH.tar.gz with the licences,
## and dist/SHA256SUMS; the archives are checked after they are written.
DIST ?= dist
release:
	cd release && $(GO) run ./dist -root .. -out $(abspath $(DIST)) -version "$(VERSION)" -commit "$(COMMIT)" -date "$(DATE)"

## image: the container image of the static linux/amd64 binary, built
## without Docker from an empty base (release/image): dist/bloom-VERSION-image-oci/
## (OCI layout) and dist/bloom-VERSION-image.tar (docker load), read back and
## checked. Runs as user 65532, `bloom serve --addr 0.0.0.0:6479 --dir /data`,
## port 6479, volume /data, health check `bloom ping`. Dockerfile builds the
## same with Docker.
image: release
	cd release && $(GO) run ./image -root .. -out $(abspath $(DIST)) -binary $(abspath $(DIST))/bloom-$(VERSION)-linux-amd64/bloom -version "$(VERSION)" -commit "$(COMMIT)" -date "$(DATE)"


## gofmt: every Go file must be as gofmt writes it.
gofmt:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

## vet: gofmt, and go vet over every module: the library, examples/, bench/
## and release/ (part of make test and make lint), built as the tests are
## (TESTGOFLAGS), so that the tests reuse its compiled packages.
vet: gofmt
	$(TESTENV) $(WATCH) $(GO) vet $(PKGS)
	cd examples && $(TESTENV) $(WATCH) $(GO) vet ./...
	cd bench && $(TESTENV) $(WATCH) $(GO) vet ./...
	cd release && $(TESTENV) $(WATCH) $(GO) vet ./...

## lint: vet, and staticcheck's unused check (no dead code), installing
## staticcheck at STATICCHECK_VERSION when it is missing. CI runs it beside
## make test; building staticcheck costs a minute of CPU, which the
## edit-test loop need not pay.
lint: vet
	@if ! $(STATICCHECK) -version 2>/dev/null | grep -q '$(STATICCHECK_VERSION:v%=%)'; then \
		echo "installing staticcheck $(STATICCHECK_VERSION)"; \
		$(WATCH) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	$(WATCH) $(STATICCHECK) -checks U1000 $(PKGS)

## bench: the comparison against other Go filter libraries; writes bench/RESULTS.md.
## BENCHFLAGS="-quick" runs a smaller version.
bench:
	cd bench && $(GO) run . -out RESULTS.md $(BENCHFLAGS)

## fuzz: run each fuzz target for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzFilterDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzBlockedDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzCountingDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzScalableDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzWindowDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bloom -run '^$$' -fuzz '^FuzzSizing$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cuckoo -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frozen -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./frozen -run '^$$' -fuzz '^FuzzReadRibbon$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cuckoo -run '^$$' -fuzz '^FuzzOperations$$' -fuzztime $(FUZZTIME)
	$(GO) test ./tdigest -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cms -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./topk -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server -run '^$$' -fuzz '^FuzzCommand$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server -run '^$$' -fuzz '^FuzzRequestReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server -run '^$$' -fuzz '^FuzzSnapshot$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server/internal/glob -run '^$$' -fuzz '^FuzzGlob$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server/internal/acl -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server -run '^$$' -fuzz '^FuzzConfigFile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./redisbloom -run '^$$' -fuzz '^FuzzLoadHeaders$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server/internal/rdb -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./server/internal/rdb -run '^$$' -fuzz '^FuzzParseDump$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/bloom -run '^$$' -fuzz '^FuzzFieldKey$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/bloom -run '^$$' -fuzz '^FuzzChunkReader$$' -fuzztime $(FUZZTIME)

.PHONY: torture savestall

## torture: kill -9 bloom serve every 0.2-1.2 s under load and check every
## acknowledged write after each restart; writes bench/TORTURE.md. Not part
## of `make test` (minutes). TORTUREFLAGS="-rounds 5" for a short run.
TORTUREFLAGS ?= -fsync always,everysec
torture:
	cd bench && $(GO) run ./cmd/torture $(TORTUREFLAGS)

## savestall: client latency and extra memory while bloom serve and
## redis-server save a 690 MiB filter; writes bench/SAVESTALL.md.
## SAVESTALLFLAGS=-quick for a 60M-item (69 MiB) filter.
savestall:
	cd bench && $(GO) run ./cmd/savestall $(SAVESTALLFLAGS)
