//go:build unix

package capture

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// MapFile maps f, a regular file opened for reading, for [Open] to read
// in place. It fails (read the file instead) for anything but a
// non-empty regular file, or where the system refuses the mapping.
// Close the Mapping once done with the packets; closing f does not
// unmap it.
func MapFile(f *os.File) (*Mapping, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > math.MaxInt {
		return nil, errNotMappable
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// Read ahead eagerly; a hint only.
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	return &Mapping{data: data}, nil
}

func unmap(b []byte) error { return unix.Munmap(b) }

// release hands pages already read back to the kernel: they leave this
// process's resident memory (not the page cache). A hint only.
func release(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
