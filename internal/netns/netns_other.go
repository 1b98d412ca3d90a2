//go:build !linux

package netns

// Create needs Linux network namespaces.
func Create(name string) error { return opError("create", name, ErrNotSupported) }

// Delete needs Linux network namespaces.
func Delete(name string) error { return opError("delete", name, ErrNotSupported) }

// Do needs Linux network namespaces: it returns an error wrapping
// ErrNotSupported without calling fn.
func Do(name string, fn func() error) error { return opError("do", name, ErrNotSupported) }
