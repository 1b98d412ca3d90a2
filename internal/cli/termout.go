package cli

import (
	"io"

	"github.com/longhaul/longhaul/internal/termsafe"
)

// Every command writes through termsafe filters (see Run): text that came
// from a file or a far host (a snapshot's hostname, a lab label, an error
// quoting either) cannot drive the terminal. These helpers are for what
// must pass unfiltered.

// rawWriter is the writer under w's termsafe filter (w itself if it has
// none): for a child process that must get the real file descriptor, and
// to ask whether the output is a terminal.
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(*termsafe.Writer); ok {
		return t.Raw()
	}
	return w
}

// writeControl writes a control sequence longhaul itself means to send
// (a progress line's "\r\033[K"), past w's filter and after what it
// holds. Never for text from outside.
func writeControl(w io.Writer, s string) {
	if t, ok := w.(*termsafe.Writer); ok {
		_, _ = t.WriteRaw([]byte(s))
		return
	}
	_, _ = io.WriteString(w, s)
}
