// Package filekind names what kind of file a mode says a path is, for the
// errors that refuse anything but a regular file where one is read (a
// FIFO would block, a device never ends, a link may point anywhere).
package filekind

import "io/fs"

// Of names the kind of file m describes: "a directory", "a FIFO", ...,
// and "not a regular file" for the kinds without a name here.
func Of(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}
