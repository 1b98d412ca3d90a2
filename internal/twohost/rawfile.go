package twohost

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// RawSchema names the file of a test's measurements before judging
// (test -o DIR writes DIR/raw.json): test --judge reads it back and
// judges it again, with this build's rules, without the network.
const RawSchema = "longhaul.test-raw/v1"

// rawFile is the file's form: the schema beside the measurements.
type rawFile struct {
	Schema string     `json:"schema"`
	Raw    *judge.Raw `json:"raw"`
}

// Caps of a raw file read back: a test within the server's caps stays
// far under them (a phase of an hour sampled every 100 ms on MaxStreams
// streams is 2.3 M samples an end).
const (
	maxRawBytes   = 1 << 30
	maxRawPhases  = 64
	maxRawRTTs    = 1 << 20
	maxRawSamples = 1 << 22
)

// WriteRaw writes raw as a RawSchema document.
func WriteRaw(w io.Writer, raw *judge.Raw) error {
	enc := json.NewEncoder(w)
	return enc.Encode(rawFile{Schema: RawSchema, Raw: raw})
}

// ReadRaw reads a RawSchema document back and checks what judge.Judge takes
// on trust from this host's own measurements (the server's part it
// checks as it does for a live server's).
func ReadRaw(r io.Reader) (*judge.Raw, error) {
	var f rawFile
	dec := json.NewDecoder(io.LimitReader(r, maxRawBytes))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a longhaul test's measurements: %w", badinput.JSON(err))
	}
	if f.Schema != RawSchema {
		return nil, fmt.Errorf("schema %q, want %s (test -o DIR writes DIR/raw.json)", f.Schema, RawSchema)
	}
	raw := f.Raw
	if raw == nil {
		return nil, fmt.Errorf("%s without measurements", RawSchema)
	}
	if err := checkRaw(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", RawSchema, err)
	}
	return raw, nil
}

// checkRaw bounds what a live test bounds itself: the phases, the pings
// (none negative), the samples of each phase.
func checkRaw(raw *judge.Raw) error {
	if len(raw.Phases) > maxRawPhases {
		return fmt.Errorf("%d phases, at most %d", len(raw.Phases), maxRawPhases)
	}
	if err := checkRTTs("idle pings", raw.IdleRTTs); err != nil {
		return err
	}
	if raw.PhaseLength < 0 || raw.BlackHoleMSS < 0 {
		return fmt.Errorf("negative phase length or black-hole MSS")
	}
	if len(raw.PhaseCut) > 1000 {
		return fmt.Errorf("a phase-cut note of %d bytes, at most 1000", len(raw.PhaseCut))
	}
	for i, p := range raw.Phases {
		if err := checkRTTs(fmt.Sprintf("phase %d's pings", i+1), p.LoadedRTTs); err != nil {
			return err
		}
		if len(p.Client) > maxRawSamples || len(p.Server) > maxRawSamples {
			return fmt.Errorf("phase %d: %d and %d samples, at most %d an end", i+1, len(p.Client), len(p.Server), maxRawSamples)
		}
		if p.Grant.Streams < 0 || p.Grant.Streams > wire.MaxStreams || p.Grant.DurationS < 0 || p.Grant.RateBps < 0 {
			return fmt.Errorf("phase %d: %d streams, %g s, %g bit/s: out of range", i+1, p.Grant.Streams, p.Grant.DurationS, p.Grant.RateBps)
		}
	}
	return nil
}

func checkRTTs(what string, ds []time.Duration) error {
	if len(ds) > maxRawRTTs {
		return fmt.Errorf("%d %s, at most %d", len(ds), what, maxRawRTTs)
	}
	for _, d := range ds {
		if d < 0 {
			return fmt.Errorf("%s: a negative round trip (%v)", what, d)
		}
	}
	return nil
}
