//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// serve's key=value start line gives the caps in units, not "120" and
// "17179869184" (issue 53); --log-json keeps the numbers.
func TestServingLineUnits(t *testing.T) {
	cfg := server.ServerConfig{MaxClients: 4, Caps: testdoc.Caps{MaxDurationS: 120, MaxBytes: 16 << 30, MaxStreams: 16}}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("serving", servingAttrs("127.0.0.1:5201", cfg, false)...)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("serving", servingAttrs("127.0.0.1:5201", cfg, true)...)
	if got := text.String(); !strings.Contains(got, `caps="2 min, 16 GiB and 16 stream(s) per test"`) || strings.Contains(got, "17179869184") {
		t.Errorf("text line %q", got)
	}
	if got := js.String(); !strings.Contains(got, `"max_bytes":17179869184`) || !strings.Contains(got, `"max_duration_s":120`) {
		t.Errorf("JSON line %q", got)
	}
}
