package tun

// Dev is a TUN device as the data plane sees it: frames of a
// virtio_net_hdr followed by an IP packet. *Device implements it on a real
// TUN file descriptor; package tuntest provides a channel-based fake.
type Dev interface {
	// Read reads one frame into buf and returns its length. buf should
	// hold MaxFrameLen bytes.
	Read(buf []byte) (int, error)
	// Write writes one frame.
	Write(frame []byte) (int, error)
	// Close releases the device and unblocks pending Reads and Writes,
	// which then return an error wrapping os.ErrClosed.
	Close() error
	// Name returns the interface name.
	Name() string
}
