package results

import (
	"errors"
	"testing"
	"time"
)

// Parts of one experiment merge into one file: every run in order, the
// earliest start, every build named; parts of different experiments do
// not.
func TestMerge(t *testing.T) {
	a := &File{Header: sampleHeader(), Runs: []Run{run("both-4M", 1, true, 1e8), run("both-16M", 1, true, 3e8)}}
	a.Header.Host.Version = "0a0bed0"
	b := &File{Header: sampleHeader(), Runs: []Run{run("both-4M", 1, true, 2e8)}}
	b.Header.Started = a.Header.Started.Add(-time.Hour)
	b.Header.Repeat = 5
	b.Header.Host.Version, b.Header.Host.Kernel = "538b5b3", "6.19"
	c := &File{Header: sampleHeader(), Runs: []Run{run("both-64M", 1, false, 0)}}
	c.Header.Host.Version = "0a0bed0"
	m, err := Merge([]*File{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header
	if len(m.Runs) != 4 || m.Runs[2].Metrics["throughput_bps"] != 2e8 || m.Runs[3].Case != "both-64M" {
		t.Errorf("runs %+v", m.Runs)
	}
	if !h.Started.Equal(b.Header.Started) || h.Repeat != 5 || h.Host.Version != "0a0bed0, 538b5b3" || h.Host.Kernel != "6.18, 6.19" || h.Host.Hostname != "h" {
		t.Errorf("header: started %v repeat %d host %+v", h.Started, h.Repeat, h.Host)
	}
	if s := Summarize(m.Runs); len(s) != 3 || s[0].N != 2 || s[0].Median["throughput_bps"] != 1.5e8 {
		t.Errorf("the 4M case's repeats from two parts: %+v", s)
	}

	for name, change := range map[string]func(h *Header){
		"scenario": func(h *Header) { h.Scenario = "upload" },
		"cc":       func(h *Header) { h.CC = "bbr" },
		"quick":    func(h *Header) { h.Quick = true },
		"path":     func(h *Header) { h.Path.RTTSeconds = 0.1 },
	} {
		other := &File{Header: sampleHeader(), Runs: []Run{run("both-4M", 1, true, 1e8)}}
		change(&other.Header)
		if _, err := Merge([]*File{a, other}); !errors.Is(err, ErrMerge) {
			t.Errorf("another %s merged: %v", name, err)
		}
	}
	// Runs on their own paths (the causes matrix) merge whatever the
	// header's default path.
	own := func(f *File) *File {
		for i := range f.Runs {
			f.Runs[i].Path = &RunPath{RTTSeconds: 0.05, RateBps: 1e8}
		}
		return f
	}
	other := own(&File{Header: sampleHeader(), Runs: []Run{run("both-4M", 1, true, 1e8)}})
	other.Header.Path.RTTSeconds = 0.1
	if _, err := Merge([]*File{own(a), other}); err != nil {
		t.Errorf("runs on their own paths: %v", err)
	}
	if _, err := Merge(nil); !errors.Is(err, ErrMerge) {
		t.Errorf("no files: %v", err)
	}
}
