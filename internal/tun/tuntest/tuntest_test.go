package tuntest_test

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/tun/tuntest"
)

var _ tun.Dev = (*tuntest.Device)(nil)

func TestReadWrite(t *testing.T) {
	d := tuntest.New("fake0")
	if d.Name() != "fake0" {
		t.Errorf("Name() = %q", d.Name())
	}
	in := []byte{1, 2, 3}
	if err := d.Inject(in, time.Second); err != nil {
		t.Fatal(err)
	}
	in[0] = 9 // Inject copied the frame
	buf := make([]byte, tun.MaxFrameLen)
	n, err := d.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{1, 2, 3}, buf[:n]); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}

	out := []byte{4, 5}
	if n, err := d.Write(out); err != nil || n != 2 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	out[0] = 9 // Write copied the frame
	got, err := d.Next(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{4, 5}, got); diff != "" {
		t.Errorf("Next (-want +got):\n%s", diff)
	}
	if _, err := d.Next(10 * time.Millisecond); err == nil {
		t.Error("Next with nothing written: no error")
	}
}

func TestShortBuffer(t *testing.T) {
	d := tuntest.New("fake0")
	d.In <- []byte{1, 2, 3}
	n, err := d.Read(make([]byte, 2))
	if n != 2 || !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("Read into 2 bytes = %d, %v; want 2, io.ErrShortBuffer", n, err)
	}
}

func TestCloseUnblocks(t *testing.T) {
	d := tuntest.NewSize("fake0", 0)
	readErr := make(chan error, 1)
	writeErr := make(chan error, 1)
	go func() {
		_, err := d.Read(make([]byte, 10))
		readErr <- err
	}()
	go func() {
		_, err := d.Write([]byte{1})
		writeErr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]chan error{"Read": readErr, "Write": writeErr} {
		select {
		case err := <-c:
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("%s after Close: %v, want os.ErrClosed", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("%s still blocked after Close", name)
		}
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d.Inject([]byte{1}, time.Second); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Inject after Close: %v", err)
	}
	select {
	case <-d.Closed():
	default:
		t.Error("Closed() not closed")
	}
}

func TestPair(t *testing.T) {
	a, b := tuntest.NewPair("a0", "b0")
	if _, err := a.Write([]byte("to b")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("to a")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := b.Read(buf)
	if err != nil || string(buf[:n]) != "to b" {
		t.Errorf("b.Read = %q, %v", buf[:n], err)
	}
	n, err = a.Read(buf)
	if err != nil || string(buf[:n]) != "to a" {
		t.Errorf("a.Read = %q, %v", buf[:n], err)
	}
}
