package iperf3

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed corpus under testdata/fuzz from testdata/*.exchange")

// fuzzSeeds are what servers send that has a structure: every recorded
// results document (text and -J output) behind its length, SERVER_ERROR
// tails of 3.12 (one number) and 3.19 (two), and lengths over the limit.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range recordCases {
		x := readExchange(t, filepath.Join("testdata", c.name+".exchange"))
		for _, m := range x.msgs {
			if m.from == "s" && m.kind == "json" {
				seeds = append(seeds, lengthPrefixed(m.text))
			}
		}
	}
	seeds = append(seeds,
		[]byte{0, 0, 0, 142},
		[]byte{0, 0, 0, 202, 0, 0, 0, 98},
		[]byte{0xff, 0xff, 0xff, 0xff, '{'},
		lengthPrefixed(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":1}],"server_output_json":{"start":{"connected":[{"socket":5,"remote_port":1}]},"intervals":[{"streams":[{"socket":5,"bytes":1e300,"rtt":-5,"snd_cwnd":1.5}]}]}}`),
	)
	return seeds
}

// FuzzDecodeServer feeds arbitrary bytes to every decoder of what a server
// sends: the length-prefixed results document and the output inside it
// (JSON or text), and SERVER_ERROR's tail. None may panic, none may
// allocate beyond what arrived, and what they return stays in its bounds.
func FuzzDecodeServer(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := readJSON(bytes.NewReader(b), maxResultsJSON)
		if err == nil {
			if len(body) != int(binary.BigEndian.Uint32(b)) || len(body) > len(b)-4 {
				t.Fatalf("document of %d bytes from %d", len(body), len(b))
			}
			res := &Result{Streams: []Stream{{ID: 1, Local: "127.0.0.1:1"}, {ID: 3, Local: "127.0.0.1:2"}}}
			if fillResults(res, body) == nil {
				for _, s := range res.Streams {
					if s.ServerBytes < -1 || s.ServerRetransmits < -1 || len(s.Intervals) > maxIntervals {
						t.Fatalf("stream %+v", s)
					}
					for _, iv := range s.Intervals {
						if iv.Bytes < -1 || iv.SndCwnd < -1 || iv.RTT < -1 || iv.Start < 0 || iv.PMTU < 0 {
							t.Fatalf("interval %+v", iv)
						}
					}
				}
			}
		}
		if ierr, errno, has, err := readServerErrorTail(bytes.NewReader(b)); err == nil {
			e := &serverError{addr: "a", ierr: ierr, errno: errno, hasErrno: has}
			if strings.Contains(e.Error(), "\n") {
				t.Fatalf("two lines: %q", e.Error())
			}
		}
		p := parseTextOutput(string(b))
		for _, ivs := range p.intervals {
			for _, iv := range ivs {
				if iv.Bytes < -1 || iv.SndCwnd < -1 || iv.Retransmits < -1 {
					t.Fatalf("text interval %+v", iv)
				}
			}
		}
	})
}

// TestWriteFuzzCorpus writes fuzzSeeds to testdata/fuzz/FuzzDecodeServer
// when run with -update-fuzz-corpus, so the corpus follows the recordings.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-fuzz-corpus to rewrite testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeServer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
