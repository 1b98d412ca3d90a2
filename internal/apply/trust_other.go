//go:build !unix

package apply

// trusted checks nothing where files have no Unix owner and mode.
func trusted(string, bool) error { return nil }
