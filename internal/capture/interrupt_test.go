package capture_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// failAfter reads n bytes of r, then fails with err.
type failAfter struct {
	r   io.Reader
	n   int
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	k, err := f.r.Read(p[:min(len(p), f.n)])
	f.n -= k
	return k, err
}

// An interrupted read is an interruption, not "corrupt at byte N" nor
// "an empty file": the error still matches context.Canceled.
func TestInterruptedReadIsNotCorruption(t *testing.T) {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	frame := ct.Ether(seg(false).IP())
	for range 2000 {
		w.PacketOn(0, t0, frame, len(frame))
	}
	file := w.Bytes()
	if _, err := capture.Open(&failAfter{r: bytes.NewReader(file), n: 0, err: context.Canceled}); !errors.Is(err, context.Canceled) || errors.Is(err, capture.ErrFormat) {
		t.Errorf("interrupted before the first byte: %v", err)
	}
	r, err := capture.Open(&failAfter{r: bytes.NewReader(file), n: len(file) / 2, err: context.Canceled})
	if err != nil {
		t.Fatal(err)
	}
	var p capture.Packet
	for err == nil {
		err = r.Next(&p)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, capture.ErrCorrupt) {
		t.Errorf("interrupted mid-file: %v", err)
	}
}
