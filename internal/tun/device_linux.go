package tun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TUNSETOFFLOAD flags (include/uapi/linux/if_tun.h).
const (
	TunFCsum   uint = 0x01 // TUN_F_CSUM: the reader accepts NEEDS_CSUM frames
	TunFTSO4   uint = 0x02 // TUN_F_TSO4
	TunFTSO6   uint = 0x04 // TUN_F_TSO6
	TunFTSOECN uint = 0x08 // TUN_F_TSO_ECN (not requested)
	TunFUFO    uint = 0x10 // TUN_F_UFO (not requested)
	TunFUSO4   uint = 0x20 // TUN_F_USO4 (Linux 6.2+, only together with USO6)
	TunFUSO6   uint = 0x40 // TUN_F_USO6
)

const (
	offloadsBase = TunFCsum | TunFTSO4 | TunFTSO6
	offloadsUSO  = TunFUSO4 | TunFUSO6
)

// Device is an open TUN queue configured for virtio_net_hdr frames with
// checksum and segmentation offloads. Its methods are safe for concurrent
// use; Read and Write block the calling goroutine (not its thread) through
// Go's netpoller.
type Device struct {
	f        *os.File
	name     string
	offloads uint

	closeOnce sync.Once
	closeErr  error
}

var _ Dev = (*Device)(nil)

// New takes over f, an open TUN queue created with IFF_TUN|IFF_NO_PI|
// IFF_VNET_HDR (for example netlink.Tuntap{Mode: TUNTAP_MODE_TUN, Flags:
// TUNTAP_NO_PI|TUNTAP_VNET_HDR|TUNTAP_ONE_QUEUE, Queues: 1}.Fds[0]), and
// configures it:
//
//   - TUNSETVNETHDRSZ 10: plain virtio_net_hdr, no num_buffers;
//   - TUNSETVNETLE 1: little-endian header fields (native on x86; makes
//     the encoding explicit on big-endian hosts);
//   - TUNSETOFFLOAD TUN_F_CSUM|TUN_F_TSO4|TUN_F_TSO6, plus
//     TUN_F_USO4|TUN_F_USO6 when the kernel accepts them (Linux 6.2+);
//     Offloads reports what was accepted.
//
// It then duplicates the descriptor in non-blocking mode registered with
// the netpoller and closes f (the queue lives on in the duplicate), so that
// the caller must not use f afterwards, and Close of the Device is what
// detaches the queue (destroying a non-persistent device). On error f is
// left open and remains the caller's. name is the interface name; if empty
// it is queried with TUNGETIFF, otherwise it must match.
func New(f *os.File, name string) (*Device, error) {
	if f == nil {
		return nil, errors.New("tun: new: nil file")
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("tun: new %s: %w", name, err)
	}
	var (
		dupFD    = -1
		offloads uint
		kname    string
		setupErr error
	)
	ctlErr := rc.Control(func(fd uintptr) {
		kname, offloads, setupErr = configure(int(fd))
		if setupErr != nil {
			return
		}
		dupFD, setupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if setupErr != nil {
			setupErr = fmt.Errorf("dup: %w", setupErr)
		}
	})
	if ctlErr != nil {
		return nil, fmt.Errorf("tun: new %s: %w", name, ctlErr)
	}
	if setupErr != nil {
		if name == "" {
			name = kname
		}
		return nil, fmt.Errorf("tun: new %s: %w", name, setupErr)
	}
	if name == "" {
		name = kname
	} else if name != kname {
		unix.Close(dupFD)
		return nil, fmt.Errorf("tun: new %s: the file is attached to device %q", name, kname)
	}
	if err := unix.SetNonblock(dupFD, true); err != nil {
		unix.Close(dupFD)
		return nil, fmt.Errorf("tun: new %s: set non-blocking: %w", name, err)
	}
	// With O_NONBLOCK set, os.NewFile registers the descriptor with the
	// netpoller: Read parks the goroutine and Close wakes it up.
	nf := os.NewFile(uintptr(dupFD), "tun:"+name)
	f.Close()
	return &Device{f: nf, name: name, offloads: offloads}, nil
}

// configure checks the device flags and sets the header size, byte order
// and offloads on fd. It returns the interface name and accepted offloads.
func configure(fd int) (string, uint, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return "", 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.TUNGETIFF, ifr); err != nil {
		return "", 0, fmt.Errorf("TUNGETIFF (is this a TUN file?): %w", err)
	}
	name := ifr.Name()
	flags := ifr.Uint16()
	const want = unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR
	if flags&(unix.IFF_TUN|unix.IFF_TAP|unix.IFF_NO_PI|unix.IFF_VNET_HDR) != want {
		return name, 0, fmt.Errorf("device flags %#x: want IFF_TUN|IFF_NO_PI|IFF_VNET_HDR and not IFF_TAP", flags)
	}
	if err := ioctlIntPtr(fd, unix.TUNSETVNETHDRSZ, VirtioNetHdrLen); err != nil {
		return name, 0, fmt.Errorf("TUNSETVNETHDRSZ %d: %w", VirtioNetHdrLen, err)
	}
	if err := ioctlIntPtr(fd, unix.TUNSETVNETLE, 1); err != nil && !(hostLittleEndian() && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY))) {
		return name, 0, fmt.Errorf("TUNSETVNETLE: %w", err)
	}
	offloads := offloadsBase | offloadsUSO
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, int(offloads)); err != nil {
		if !errors.Is(err, unix.EINVAL) {
			return name, 0, fmt.Errorf("TUNSETOFFLOAD %#x: %w", offloads, err)
		}
		// Kernels before 6.2 reject unknown flags with EINVAL.
		offloads = offloadsBase
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, int(offloads)); err != nil {
			return name, 0, fmt.Errorf("TUNSETOFFLOAD %#x: %w", offloads, err)
		}
	}
	return name, offloads, nil
}

// ioctlIntPtr issues an ioctl whose argument is a pointer to an int.
func ioctlIntPtr(fd int, req uint, v int32) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&v)))
	if errno != 0 {
		return errno
	}
	return nil
}

func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// Name returns the interface name.
func (d *Device) Name() string { return d.name }

// Offloads returns the TUN_F_* flags the kernel accepted.
func (d *Device) Offloads() uint { return d.offloads }

// Read reads one frame (virtio_net_hdr + IP packet) into buf. buf must be
// at least MaxFrameLen bytes: the kernel silently truncates a frame that
// does not fit, so shorter buffers are refused with io.ErrShortBuffer.
// After Close, Read returns an error wrapping os.ErrClosed.
func (d *Device) Read(buf []byte) (int, error) {
	if len(buf) < MaxFrameLen {
		return 0, fmt.Errorf("tun: read %s: buffer of %d bytes, need %d: %w", d.name, len(buf), MaxFrameLen, io.ErrShortBuffer)
	}
	return d.f.Read(buf)
}

// Write writes one frame (virtio_net_hdr + IP packet). The kernel rejects
// inconsistent headers with EINVAL.
func (d *Device) Write(frame []byte) (int, error) {
	return d.f.Write(frame)
}

// Close closes the queue; pending Reads and Writes return an error
// wrapping os.ErrClosed. Closing the last queue of a non-persistent device
// removes the interface. Close is idempotent.
func (d *Device) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.f.Close() })
	return d.closeErr
}
