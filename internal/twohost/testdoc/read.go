package testdoc

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/longhaul/longhaul/internal/badinput"
)

// Read decodes a longhaul.test/v1 document.
func Read(r io.Reader) (*Doc, error) {
	var d Doc
	dec := json.NewDecoder(r)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a longhaul test result: %w", badinput.JSON(err))
	}
	if d.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %s (write one with longhaul test --json)", d.Schema, Schema)
	}
	return &d, nil
}
