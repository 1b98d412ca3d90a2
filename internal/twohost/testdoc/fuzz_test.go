package testdoc

import (
	"bytes"
	"testing"
)

// FuzzRead: a test document from any bytes (test --compare and
// report read documents other hosts wrote) is decoded or refused, never
// a panic; what is decoded has the document's schema.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"schema":"longhaul.test/v1","server":"198.18.0.2:9978","directions":[{"name":"download","limit":{"host":"server","setting":"net.ipv4.tcp_wmem"}}]}`))
	f.Add([]byte(`{"schema":"longhaul.test-url/v1"}`))
	f.Add([]byte(`{"schema":"longhaul.test/v1","directions":null,"hosts":{"server":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Read(bytes.NewReader(b))
		if err == nil && (d == nil || d.Schema != Schema) {
			t.Fatalf("decoded %+v", d)
		}
	})
}
