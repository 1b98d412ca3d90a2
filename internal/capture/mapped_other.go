//go:build !unix

package capture

import "os"

// MapFile is not available here: read the file instead.
func MapFile(f *os.File) (*Mapping, error) { return nil, errNotMappable }

func unmap(b []byte) error { return nil }

func release(b []byte) {}
