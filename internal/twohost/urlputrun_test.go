//go:build linux

package twohost

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// uploadTo runs an upload on loopback against handler.
func uploadTo(t *testing.T, handler http.HandlerFunc, o URLOptions) (*judge.URLRaw, error) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	o.URL, o.Upload = srv.URL+"/upload", true
	return RunURL(context.Background(), o)
}

// reads the whole body, then answers.
func readAll(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
	}
}

// An upload sends the whole body with its Content-Length, by the method
// asked, and samples the sending socket.
func TestRunURLUpload(t *testing.T) {
	var method string
	var length int64
	raw, err := uploadTo(t, func(w http.ResponseWriter, r *http.Request) {
		method, length = r.Method, r.ContentLength
		n, _ := io.Copy(io.Discard, r.Body)
		if n != r.ContentLength {
			w.WriteHeader(http.StatusBadRequest)
		}
	}, URLOptions{Method: "put", Size: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodPut || length != 3<<20 {
		t.Errorf("the server got %s with Content-Length %d; want PUT of %d", method, length, 3<<20)
	}
	if !raw.Complete || raw.Bytes != 3<<20 || raw.Direction != testdoc.URLUpload || raw.Status != "200 OK" || len(raw.Sent) == 0 {
		t.Errorf("complete %v, %d bytes, direction %q, status %q, %d samples", raw.Complete, raw.Bytes, raw.Direction, raw.Status, len(raw.Sent))
	}
	if n := len(raw.Sent); n > 0 && raw.Sent[n-1].Sock.BytesAcked < 3<<20 {
		t.Errorf("the last sample acknowledged %d bytes", raw.Sent[n-1].Sock.BytesAcked)
	}
}

// --body sends a file; a file that is not regular, or another method,
// is one line.
func TestRunURLUploadBody(t *testing.T) {
	f := filepath.Join(t.TempDir(), "image.jpg")
	if err := os.WriteFile(f, []byte(strings.Repeat("x", 605_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := uploadTo(t, readAll(http.StatusCreated), URLOptions{BodyFile: f})
	if err != nil || !raw.Complete || raw.Bytes != 605_000 || raw.Method != http.MethodPost {
		t.Fatalf("err %v; raw %+v", err, raw)
	}
	for _, o := range []URLOptions{{BodyFile: t.TempDir()}, {BodyFile: f + ".missing"}, {Method: "PATCH"}} {
		if _, err := uploadTo(t, readAll(200), o); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v; want one line", o, err)
		}
	}
}

// A refusal, a redirect and a connection closed early are one line each,
// saying what to do; an answer before the body's end is a note.
func TestRunURLUploadServerAnswers(t *testing.T) {
	closeEarly := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.CopyN(io.Discard, r.Body, 1<<20)
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	}
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"refused": {readAll(http.StatusMethodNotAllowed), "405 Method Not Allowed: the server refused the body: give a URL that accepts a POST of 8.389 MB (status 2xx), or try --method PUT"},
		"redirected": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, `302 Found: the server redirects to "/elsewhere"`},
		"closed":       {closeEarly, "the server closed the connection after"},
		"server error": {readAll(http.StatusInternalServerError), "500 Internal Server Error: the server refused the body"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := uploadTo(t, tc.h, URLOptions{Size: 8 << 20})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v; want one line with %q", err, tc.want)
			}
		})
	}
	// It answers after 64 KiB, then reads the rest slowly (a server that
	// stops reading resets the connection: the "closed" case).
	raw, err := uploadTo(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = io.Copy(io.Discard, r.Body)
	}, URLOptions{Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if raw.Complete || len(raw.Notes) != 1 || !strings.Contains(raw.Notes[0], "before reading it all") {
		t.Errorf("complete %v, notes %q; want a note that the server answered early", raw.Complete, raw.Notes)
	}
}

// --duration ends an upload the server reads slowly: a measurement, not
// an error, of the bytes acknowledged.
func TestRunURLUploadLimit(t *testing.T) {
	done := make(chan struct{})
	raw, err := uploadTo(t, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4096)
		for {
			select {
			case <-done: // what loopback buffered would take seconds to read
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := r.Body.Read(buf); err != nil {
				return
			}
		}
	}, URLOptions{Size: 1 << 30, Limit: time.Second})
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Complete || raw.Bytes <= 0 || raw.Bytes >= 1<<30 || raw.Duration > 3*time.Second || raw.Status != "no answer yet" {
		t.Errorf("complete %v, %d bytes in %s, status %q; want stopped at the limit", raw.Complete, raw.Bytes, raw.Duration, raw.Status)
	}
}
