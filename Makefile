# longhaul: `make demo` and `make test` set up a fresh Debian 12 machine
# themselves (run as root: they apt-get what is missing).

GO       ?= go
BIN      := bin/longhaul
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
FUZZTIME ?= 1s
export PATH := $(PATH):/usr/local/go/bin:/usr/lib/go/bin:$(HOME)/go/bin
export CGO_ENABLED := 0

.PHONY: all deps build test quick golden schemas unit unit-bins unit-run unit-truth race race-bins race-run fuzz fuzz-long vet demo bench bench-emulator bench-analyze bench-cc bench-causes bench-mesh bench-vantage eval-captures clean
.PHONY: man docs deb compat

all: build

# deps installs the system packages the build, tests and demo use.
deps:
	@scripts/deps.sh

# NO_GO is the advice without Go, as scripts/deps.sh (make demo, make
# test) gives it.
NO_GO = Go is not installed; run as root to bootstrap Go into /usr/local/go (make deps), or install Go >= 1.26 from https://go.dev/dl

build:
	@command -v $(GO) >/dev/null || { echo "make: $(NO_GO)" >&2; exit 1; }
	$(GO) build -trimpath -ldflags "-s -w -X github.com/longhaul/longhaul/internal/cli.version=$(VERSION) -X github.com/longhaul/longhaul/internal/cli.commit=$(COMMIT)" -o $(BIN) ./cmd/longhaul

# vet also proves the portability promise (the commands that need no Linux
# build for macOS and Windows, and every package builds for macOS) and that
# no unreachable code is left unexplained (scripts/deadcode.allow). Every
# test file builds on Linux (none is macOS-only), so vet runs there only:
# vetting for macOS too cost 50 s more of a cold build. The test's
# documents, the two-host wire and the judge (internal/twohost/testdoc,
# wire, judge) are vetted, tests included, for macOS and Windows: they
# build everywhere.
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) build -o /dev/null ./cmd/longhaul
	GOOS=windows $(GO) build -o /dev/null ./cmd/longhaul
	GOOS=darwin $(GO) vet ./internal/twohost/testdoc ./internal/twohost/wire ./internal/twohost/judge
	GOOS=windows $(GO) vet ./internal/twohost/testdoc ./internal/twohost/wire ./internal/twohost/judge
	@scripts/deadcode.sh
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt: not formatted: $$out" >&2; exit 1; fi

# quick: the contributor's loop, under 3 minutes with a warm build cache
# on a 2-core machine, as any user: go test -short without the
# TestIntegration* tests (emulated paths, root; they skip without it
# anyway), and the slow tests that need neither skip under -short
# (testing.Short(): a stamped build, headless Chromium, 50 MB inputs).
# make test runs them all.
quick:
	$(GO) test -short -count=1 -skip '^TestIntegration' ./...

# golden rewrites every golden file (the packages whose tests use
# internal/golden) with what the tests render now: review git diff after.
golden:
	@pkgs=$$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}}' ./... | awk '{for (i = 2; i <= NF; i++) if ($$i ~ /internal\/golden$$/) {print $$1; break}}') && \
	  $(GO) test -count=1 -short $$pkgs -update

# schemas rewrites docs/schema/*.json, the JSON Schemas generated from the
# documents' Go types (go test ./internal/docschema fails when one drifts
# from its type; make golden rewrites them too): review git diff after.
schemas:
	$(GO) test -count=1 ./internal/docschema -run '^TestSchemas$$' -update

# unit and integration tests; privileged tests skip without CAP_SYS_ADMIN.
# -p 1: the emulator tests measure time and must not share the CPUs with
# other packages' integration tests. -p 1 also builds one package at a
# time, so the test binaries are built first on every CPU (testbins).
# The packages make race tests (RACE_DIRS) are left to it: the race
# detector's run is their unit run.
# make unit is unit-bins (the test binaries, built on every CPU),
# unit-run and unit-truth; make test (scripts/test.sh) runs the last
# once the compile steps beside unit-run are done.
unit: unit-bins unit-run unit-truth
unit-bins:
	@pkgs=$$($(UNIT_PKGS)) && $(call testbins,$(GO) test,$$pkgs)
unit-run:
	@pkgs=$$($(UNIT_PKGS)) && \
	  echo "$(GO) test -count=1 -p 1 -timeout 25m -skip '$(TRUTH_TESTS)' (every package but $(RACE_DIRS))" && \
	  $(GO) test -count=1 -p 1 -timeout 25m -skip '$(TRUTH_TESTS)' $$pkgs

# TRUTH_TESTS judge what a run over an emulated path measured against
# what the path was built to do (a verdict, round trips, a rate against
# the model): read from the run's timing, where a busy machine (the
# emulator delayed, a peer starved) makes a different path. They run on
# their own, after the rest. (The analyze and lab verdicts failed in CI
# beside the compile steps, the initcwnd seed's round trips in a fresh
# clone here; none failed on a quiet machine.)
TRUTH_TESTS = ^(TestIntegrationAnalyzeCauses|TestIntegrationAnalyzeTruth|TestIntegrationAnalyzeTruthFaults|TestIntegrationLabCausesQuick|TestIntegrationLabInitcwnd17kB|TestIntegrationEmulateCurlNginx|TestIntegrationEmulatePingRTT|TestIntegrationVerifyPlan)$$
unit-truth:
	$(GO) test -count=1 -p 1 -timeout 15m -run '$(TRUTH_TESTS)' ./cmd/longhaul

# testbins builds the test binaries of packages $(2) with the go test
# command $(1) into a scratch directory: the build cache, filled in parallel.
testbins = d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && $(1) -c -o "$$d/" $(2) >/dev/null

# every fuzz target briefly, on its checked-in corpus and fresh inputs.
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

fuzz-long:
	@FUZZTIME=60s scripts/fuzz.sh

# make test: deps and build, then scripts/test.sh: make unit-bins, then
# make unit-run in the foreground with make vet and the race and fuzz
# binaries built beside it at idle CPU priority (the integration tests
# mostly wait on emulated paths), then make unit-truth, make race-run and
# make fuzz on those binaries with nothing beside them.
test: deps build
	@scripts/test.sh

# the data race detector on the packages with goroutines (servers, the
# emulator's data plane, the lab runner, the sampler)
RACE_DIRS = twohost exporter emu lab flows connlimit probe
RACE_PKGS = $(patsubst %,./internal/%/...,$(RACE_DIRS))
empty :=
RACE_RE = /internal/($(subst $(empty) ,|,$(RACE_DIRS)))(/|$$)
# UNIT_PKGS lists (a shell command) every package but those.
UNIT_PKGS = $(GO) list ./... | grep -vE '$(RACE_RE)'
race: race-bins race-run
race-bins:
	@$(call testbins,CGO_ENABLED=1 $(GO) test -race,$(RACE_PKGS))
race-run:
	CGO_ENABLED=1 $(GO) test -race -count=1 -p 1 $(RACE_PKGS)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# the emulator's goodput, CPU and RTT error against the raw veth ceiling,
# with the targets judged and the cost per Gbit/s: the lab scenario
# `longhaul lab emulator` (root; ~13 min, QUICK=1 ~40 s; REPEAT=N):
# table and verdicts on stdout and in $(BENCH_EMU_OUT)/table.txt, results
# and the report in $(BENCH_EMU_OUT).
BENCH_EMU_OUT ?= out/bench-emulator
bench-emulator: deps build
	@rm -rf $(BENCH_EMU_OUT) && mkdir -p $(BENCH_EMU_OUT)
	$(BIN) lab emulator $(if $(QUICK),--quick) $(if $(REPEAT),--repeat $(REPEAT)) -o $(BENCH_EMU_OUT) >$(BENCH_EMU_OUT)/table.txt; \
		rc=$$?; cat $(BENCH_EMU_OUT)/table.txt; exit $$rc

# the congestion-control matrix: cubic, bbr and reno senders held by the
# receiver's window, the sender's send buffer or the path, on 50 ms x
# 100 Mbit/s and 200 ms x 1 Gbit/s emulated paths, each run judged by
# flows, test and the exporter's tracker (root; REPEAT runs per case,
# default 10: ~1 h; SHAPE=50ms or 200ms for one shape): table and JSON in
# $(BENCH_CC_OUT) (bench/cc-matrix.txt, bench/cc-matrix.json). CI runs one
# run per cubic and bbr case on the first shape (TestIntegrationCCMatrix).
BENCH_CC_OUT ?= bench
REPEAT_CC := $(or $(REPEAT),10)
bench-cc: build
	LONGHAUL_BENCH_CC=1 REPEAT=$(REPEAT_CC) LONGHAUL_BENCH_CC_SHAPE=$(SHAPE) LONGHAUL_BENCH_CC_OUT=$(abspath $(BENCH_CC_OUT)) \
		$(GO) test -count=1 -timeout 4h -run '^TestIntegrationCCMatrix$$' -v ./cmd/longhaul

# the lab mesh at length and at scale (root; ~35 min), through a real
# Prometheus with the shipped probe job and its 30 s scrape timeout:
# TestIntegrationProbeMesh with five far hosts and three alert cycles
# (make test runs three hosts and one cycle); TestIntegrationProbeMeshLong,
# 10 probes of each of three 170 ms x 1 Gbit/s paths (far tcp_wmem max
# 4 MiB, far tcp_rmem max 4 MiB, clean); TestIntegrationProbeMeshScale,
# nine far hosts probed by three probers: no two tests of one target at
# once (the far serves' logs), bytes per test against longhaul estimate.
# The two new tests' tables go to $(BENCH_MESH_OUT).
BENCH_MESH_OUT ?= bench/mesh.txt
bench-mesh: build
	@printf '# make bench-mesh at %s on %s: %s cores, kernel %s\n' "$$(git describe --always --dirty)" "$$(date -u +%F)" "$$(nproc)" "$$(uname -r)" >$(BENCH_MESH_OUT)
	LONGHAUL_BENCH_MESH=1 LONGHAUL_BENCH_MESH_OUT=$(abspath $(BENCH_MESH_OUT)) \
		$(GO) test -count=1 -timeout 90m -run '^TestIntegrationProbeMesh(Long|Scale)?$$' -v ./cmd/longhaul

# issue 23's ground-truth matrix, the lab scenario `longhaul lab causes`
# (root): every failure on 50 ms x 100 Mbit/s and 100 ms x 500 Mbit/s,
# each run judged by test, analyze and flows; REPEAT runs a case (10 by
# default: about 2 hours; QUICK=1 about a minute), IPV6=1 over IPv6,
# CASES='50ms-*' a glob of case IDs. The score per case and tool and the
# confusion matrices on stdout and in $(BENCH_CAUSES_OUT)/table.txt,
# results.jsonl and report.html there. scripts/bench-causes.sh runs the
# same failures one at a time and keeps every tool's document (KEEP=1).
BENCH_CAUSES_OUT ?= out/bench-causes
# analyze's verdicts on one transfer captured at its sender and at its
# receiver, over paths with a known failure (scripts/bench-vantage.sh;
# root, iperf3, tcpdump; about 30 s a case and repeat): bench/vantage.txt
BENCH_VANTAGE_OUT ?= bench/vantage.txt
bench-vantage: deps build
	@printf '# make bench-vantage at %s on %s: %s cores, kernel %s\n' "$$(git describe --always --dirty)" "$$(date -u +%F)" "$$(nproc)" "$$(uname -r)" >$(BENCH_VANTAGE_OUT)
	BIN=$(BIN) scripts/bench-vantage.sh $(or $(REPEAT),3) | tee -a $(BENCH_VANTAGE_OUT)

bench-causes: deps build
	@rm -rf $(BENCH_CAUSES_OUT) && mkdir -p $(BENCH_CAUSES_OUT)
	$(BIN) lab causes $(if $(QUICK),--quick) $(if $(IPV6),--ipv6) $(if $(REPEAT),--repeat $(REPEAT)) $(if $(CASES),--case '$(CASES)') \
		-o $(BENCH_CAUSES_OUT) >$(BENCH_CAUSES_OUT)/table.txt; rc=$$?; cat $(BENCH_CAUSES_OUT)/table.txt; exit $$rc

# analyze's CPU per packet and memory on a >= 500 MB capture made in
# namespaces (iperf3 + tcpdump -s 128), against tcptrace -n -l and tshark
# -z conv,tcp in the same run, and a CPU profile of longhaul's (root;
# ~6 min; REPEATS=N, SIZE_MB=N, OUT=file.json, CAPTURE=file to time a
# given capture without root, BASE=binary to time another build too,
# INSTR=N to count instructions on the first N packets under valgrind):
# scripts/bench-analyze.sh
bench-analyze: build
	@[ "$$(id -u)" != 0 ] || scripts/deps.sh bench
	@BIN=$(BIN) scripts/bench-analyze.sh

# analyze's score on the labelled public captures of testdata/corpus/manifest.tsv
# present under CORPUS_DIR (fetches nothing): scripts/eval-captures.sh
eval-captures:
	@scripts/eval-captures.sh

# the main job on its default path (200 ms, 1 Gbit/s): the seed's buffer
# experiment, quick variant (~1 min, root), table on stdout, report in
# out/demo/report.html.
DEMO_OUT ?= out/demo
demo: deps build
	@rm -rf $(DEMO_OUT)
	$(BIN) lab buffers --quick -o $(DEMO_OUT)

# man pages generated from the command tree (out/man/longhaul*.1).
MAN_OUT ?= out/man
man:
	@rm -rf $(MAN_OUT)
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(GO) run ./cmd/longhaul-man -o $(MAN_OUT) -version $(VERSION)

# docs rewrites docs/commands/longhaul*.md, the flag reference generated
# from the same command tree as --help and the man pages (checked in; go
# test ./cmd/longhaul-man fails when it drifts, make golden rewrites it
# too): review git diff after.
docs:
	$(GO) run ./cmd/longhaul-man -markdown docs/commands

# the Debian package (dpkg-deb, no debhelper): binary, man pages, shell
# completions, the systemd units, Prometheus rules and Grafana dashboard
# under deploy/; written to out/deb/.
deb: build man
	@BIN=$(BIN) MAN=$(MAN_OUT) VERSION=$(VERSION) scripts/mkdeb.sh

clean:
	rm -rf bin out

# the exporter's cost with 10,000 open sockets in a namespace: CPU at
# --interval 1s (kernel and user), scrape time, memory (root; ~1 min;
# SOCKETS=N, DURATION=N, INTERVAL=1s, OUT=file.json): scripts/bench-exporter.sh
.PHONY: bench-exporter
bench-exporter: build
	@BIN=$(BIN) scripts/bench-exporter.sh

# compat: the two-host protocol between this tree and an earlier build,
# both ways, on loopback. COMPAT_REF is the earlier build's git ref; the
# default is the last build whose wire samples were flows.Sock (before
# twohost's own wire types).
COMPAT_REF ?= 063599a
compat: build
	@rm -rf .compat && git worktree add -q --detach .compat $(COMPAT_REF)
	@cd .compat && $(GO) build -o ../bin/longhaul-compat-old ./cmd/longhaul; rc=$$?; cd .. && git worktree remove --force .compat; exit $$rc
	scripts/compat-twohost.sh bin/longhaul-compat-old $(BIN)
