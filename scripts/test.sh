#!/usr/bin/env bash
# make test, once deps and build are done: the test binaries (make
# unit-bins), then the unit and integration tests (make unit-run) in the
# foreground and, beside them at idle CPU
# priority (SCHED_IDLE, else nice 19), the steps that only compile:
# make vet and the race detector's and the fuzzer's binaries. Then, with
# nothing beside them, the ground-truth tests (make unit-truth), the race
# run (make race-run) and the fuzz run (make fuzz) on those binaries.
#
# Why: cmd/longhaul's integration tests wait on emulated paths most of
# their ten minutes (0.1-0.5 of a core each, measured per test with
# /usr/bin/time), while vet, the macOS and Windows builds and the race
# and fuzz binaries kept both cores busy for 7-8 minutes of a cold
# build before. A SCHED_IDLE task runs only on a CPU nothing else wants,
# and a waking test or emulator thread preempts it at once, so the
# tests keep the CPU they had; the timing checks are the same ones.
# Not quite on every machine: CI's 2-core VM failed ground-truth tests
# beside them (the emulator overloaded at 100 Mbit/s, three runs in one
# test), which never failed on a quiet machine; those run after.
#
# The compile steps' output is shown after the tests; make test fails if
# either side fails. Killed, it stops the background steps too.
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
work=$(mktemp -d)
bg=
cleanup() {
	if [ -n "$bg" ]; then
		kill -- -"$bg" 2>/dev/null
		wait "$bg" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

idle=(nice -n 19)
if chrt -i 0 true 2>/dev/null; then
	idle=(chrt -i 0)
fi
export FUZZ_BINDIR=$work/fuzz

# The test binaries first, on both CPUs: beside the compile steps they
# took 6.1 minutes from a cold cache here instead of 3.2.
$make --no-print-directory unit-bins || { echo "test: make unit-bins failed" >&2; exit 1; }

# In a session of its own, so that cleanup stops it and its children
# (go, compile, vet) as one group.
setsid "${idle[@]}" bash -c "$make --no-print-directory vet && $make --no-print-directory race-bins && FUZZ_BUILD_ONLY=1 scripts/fuzz.sh" \
	>"$work/compile.log" 2>&1 </dev/null &
bg=$!
echo "test: make vet, the race and fuzz binaries at idle priority (${idle[*]}) beside the unit tests; their output after them"

$make --no-print-directory unit-run
unit=$?
if [ "$unit" != 0 ]; then
	echo "test: make unit-run failed (exit $unit)" >&2
	exit "$unit"
fi
wait "$bg"
compile=$?
bg=
cat "$work/compile.log"
if [ "$compile" != 0 ]; then
	echo "test: make vet or the race and fuzz binaries failed (exit $compile)" >&2
	exit "$compile"
fi
# The ground-truth tests (make unit-truth) on a quiet machine: nothing
# else runs beside them.
$make --no-print-directory unit-truth || { echo "test: make unit-truth failed" >&2; exit 1; }
$make --no-print-directory race-run && $make --no-print-directory fuzz
