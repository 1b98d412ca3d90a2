// Package topo builds the emulator's topology: a client and a server
// network namespace, each with one TUN device, whose file descriptors
// the caller (the data plane) reads and writes to move packets between
// them through a delay/rate/loss model.
//
// # Layout
//
//	 namespace <prefix>-<runid>-c               namespace <prefix>-<runid>-s
//	+----------------------------+             +----------------------------+
//	| lo                         |             | lo                         |
//	| lh0 (TUN) 198.18.0.1/32    |             | lh0 (TUN) 198.18.0.2/32    |
//	|     peer 198.18.0.2        |             |     peer 198.18.0.1        |
//	+-------------|--------------+             +--------------|-------------+
//	              | Client().Tun                  Server().Tun |
//	              +------> data plane (this process) <---------+
//	                    reads one side, delays, writes the other
//
// Each TUN device has its end's address as a point-to-point /32 with the
// other end's address as peer, so the kernel installs a host route to the
// peer through lh0 and nothing else. Addresses come from 198.18.0.0/15,
// the benchmarking range (RFC 2544), which never collides with real
// networks. Both devices have MTU 1500 and txqueuelen 10000 by default;
// IPv6 is disabled on lh0 so that router solicitations, DAD and MLD never
// cross the emulated link, and net.ipv4.tcp_no_metrics_save=1 keeps one
// experiment's cached ssthresh and RTT out of the next. Sysctls given in
// the [Spec] are written inside the namespace and read back; the effective
// values are in [End.Sysctls], and the host's own values never change.
//
// # Why TUN and not veth
//
// A veth pair moves packets inside the kernel, and this kernel has no
// netem, fq or other qdisc that can delay them: delay must be applied in
// userspace. A TUN device hands every packet to a file descriptor, so the
// data plane sees each packet (as a GSO super-packet once it enables
// offloads on the IFF_VNET_HDR descriptor) and decides when, and whether,
// to deliver it to the other side. The devices are not persistent: they
// disappear with their last descriptor, so a crashed process leaves no
// device behind.
//
// # Names, state and reaping
//
// A run has a random 10-hex-digit id. Its namespaces are
// "<prefix>-<runid>-c" and "<prefix>-<runid>-s" (default prefix "lh")
// and its state file is /run/longhaul/<prefix>-<runid>.json, which names
// the owning process by PID, start time (field 22 of /proc/PID/stat) and
// boot id, so that a reused PID is not mistaken for the owner. [Up] writes
// the state file before creating anything, so a process killed at any
// point leaves something the reaping can attribute; and [Up] reaps its
// prefix first: it deletes the runs of its prefix whose owner is gone, after SIGKILLing, by PID, every process still inside their
// namespaces (matched by the inode of /proc/PID/ns/net); runs of live
// owners are never touched, and nothing outside the exact naming pattern
// is. Tests use their own random prefixes so they never see other runs.
//
// # Lifetime
//
// [Topology.Close] kills what runs in the namespaces, closes the TUN
// descriptors, deletes the namespaces and removes the state file. It is
// the caller's job to call Close on SIGINT and SIGTERM (for example via
// signal.NotifyContext and defer); a SIGKILLed or crashed run is cleaned
// up by the next Up with its prefix. The data plane must not keep
// duplicates of the TUN descriptors after Close: an open descriptor keeps
// its device, and through it the namespace, alive.
//
// # Running peers
//
// [End.Command] runs a program inside a namespace through
// `ip netns exec`, in its own process group so that Close (and
// cancelling its context) can kill it together with its children.
//
// # Privileges
//
// Everything here needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root). Errors
// from creating namespaces wrap netns.ErrNotPermitted when they are
// missing.
package topo
