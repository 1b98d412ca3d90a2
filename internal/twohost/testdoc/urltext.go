package testdoc

import (
	"fmt"
	"io"
	"strings"

	"github.com/longhaul/longhaul/internal/units"
)

// WriteURLText prints a URL test for people.
func WriteURLText(w io.Writer, d *URLDoc) {
	if d.Direction == URLUpload {
		writeUploadText(w, d)
		return
	}
	ended := "the body ended"
	if !d.Complete {
		ended = "stopped at the time limit"
	}
	fmt.Fprintf(w, "longhaul test %s (%s, %s): %s\n", d.URL, d.Remote, d.Status, ended)
	fmt.Fprintf(w, "  %s in %s: %s; steady half %s\n", units.FormatBytes(float64(d.Bytes)), FormatSeconds(d.DurationS), units.FormatRate(d.ThroughputBps), units.FormatRate(d.SteadyBps))
	fmt.Fprintf(w, "  rtt: handshake %s, under load %s (%.0f round trips)\n", FormatSeconds(d.ConnectS), FormatSeconds(d.LoadedRTT), d.Rounds)
	fmt.Fprintf(w, "  window: advertised up to %s, tcp_rmem allows %s; in flight %s", units.FormatBytes(float64(d.MaxWindowBytes)),
		units.FormatBytes(float64(d.WindowCeilingBytes)), units.FormatBytes(d.InFlightBytes))
	if d.OutOfOrder > 0 {
		fmt.Fprintf(w, "; %d segments out of order", d.OutOfOrder)
	}
	fmt.Fprintf(w, "\n\nlimited by %s\n", d.Limit.Text)
	if len(d.Fix) > 0 {
		fmt.Fprintln(w)
		for _, l := range d.Fix {
			fmt.Fprintln(w, l)
		}
	}
	if d.Limit.Host == HostServerOrPath {
		fmt.Fprintf(w, "\nnote: the far end is not longhaul, so its send side and the path look alike from here\n")
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// writeUploadText prints an upload to a URL for people.
func writeUploadText(w io.Writer, d *URLDoc) {
	ended := "the body was sent and the server answered"
	if !d.Complete {
		ended = "stopped at the time limit"
	}
	fmt.Fprintf(w, "longhaul test %s --upload (%s, %s, %s): %s\n", d.URL, d.Remote, d.Method, d.Status, ended)
	fmt.Fprintf(w, "  %s of a %s body in %s: %s; steady half %s\n", units.FormatBytes(float64(d.Bytes)), units.FormatBytes(float64(d.BodyBytes)),
		FormatSeconds(d.DurationS), units.FormatRate(d.ThroughputBps), units.FormatRate(d.SteadyBps))
	fmt.Fprintf(w, "  rtt: handshake %s, under load %s (%.0f round trips)\n", FormatSeconds(d.ConnectS), FormatSeconds(d.LoadedRTT), d.Rounds)
	fmt.Fprintf(w, "  window: the server advertised up to %s; in flight %s (this host's tcp_wmem allows %s by the path model); %d segments retransmitted\n",
		units.FormatBytes(float64(d.PeerWindowBytes)), units.FormatBytes(d.InFlightBytes), units.FormatBytes(float64(d.SendCeilingBytes)), d.Retrans)
	if f := d.Flow; f != nil {
		fmt.Fprintf(w, "  verdict of this host's socket: %s (%.0f%% of the steady half): %s\n", f.Verdict.Verdict, 100*f.Verdict.Share, strings.TrimSuffix(f.Verdict.Summary, "."))
	}
	fmt.Fprintf(w, "\nlimited by %s\n", d.Limit.Text)
	if len(d.Fix) > 0 {
		fmt.Fprintln(w)
		for _, l := range d.Fix {
			fmt.Fprintln(w, l)
		}
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
