# longhaul: `make demo` and `make test` set up a fresh Debian 12 machine
# themselves (run as root: they apt-get what is missing).

GO       ?= go
BIN      := bin/longhaul
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 3s
export PATH := $(PATH):/usr/local/go/bin:/usr/lib/go/bin:$(HOME)/go/bin
export CGO_ENABLED := 0

.PHONY: all deps build test unit fuzz fuzz-long vet demo bench bench-emulator bench-analyze eval-captures clean

all: build

# deps installs the system packages the build, tests and demo use.
deps:
	@scripts/deps.sh

build:
	@command -v $(GO) >/dev/null || { echo "make: go not found; install Go >= 1.23 (https://go.dev/dl)" >&2; exit 1; }
	$(GO) build -trimpath -ldflags "-s -w -X github.com/longhaul/longhaul/internal/cli.version=$(VERSION)" -o $(BIN) ./cmd/longhaul

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt: not formatted: $$out" >&2; exit 1; fi

# unit and integration tests; privileged tests skip without CAP_SYS_ADMIN.
# -p 1: the emulator tests measure time and must not share the CPUs with
# other packages' integration tests.
unit:
	$(GO) test -count=1 -p 1 ./...

# every fuzz target briefly, on its checked-in corpus and fresh inputs.
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

fuzz-long:
	@FUZZTIME=60s scripts/fuzz.sh

test: deps build vet unit fuzz

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# emulator throughput, CPU and RTT accuracy against the raw veth ceiling
# (root; ~10 min; REPEATS=N, QUICK=1, OUT=file.json): scripts/bench-emulator.sh
bench-emulator: build
	@scripts/bench-emulator.sh

# analyze's speed and memory on a >= 500 MB capture made in namespaces
# (iperf3 + tcpdump -s 128), against tcptrace -n -l and tshark -z conv,tcp
# in the same run (root; ~6 min; REPEATS=N, SIZE_MB=N, OUT=file.json):
# scripts/bench-analyze.sh
bench-analyze: build
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

clean:
	rm -rf bin out
