// Package sysconf reads the host's persistent tuning sources: the sysctl
// configuration files applied at boot, the tuning daemons that may rewrite
// settings at run time, the amount of memory, and the kernel release.
//
// Everything is read below a configurable filesystem root ("/" on a real host,
// a fixture tree in tests). Each source follows "gather then judge": a thin
// reader does the I/O and hands an io.Reader to a pure parser that does the
// work, so the parsers can be tested and fuzzed without a host.
//
// # Sysctl configuration
//
// ReadSysctlConfig reproduces the file selection of systemd-sysctl, as
// documented in sysctl.d(5), and of procps "sysctl --system":
//
//   - Files named *.conf are read from /etc/sysctl.d, /run/sysctl.d,
//     /usr/local/lib/sysctl.d, /usr/lib/sysctl.d and /lib/sysctl.d, in that
//     order of precedence.
//   - A file in an earlier directory overrides the file of the same basename
//     in every later directory. A symlink to /dev/null or an empty file masks
//     the name entirely, so no file of that name is applied.
//   - The remaining files are applied in lexicographic order of their
//     basename, whatever directory they live in; a later assignment to a key
//     overrides an earlier one.
//   - /etc/sysctl.conf is applied last (procps behaviour). Distributions that
//     link /etc/sysctl.d/99-sysctl.conf to ../sysctl.conf make systemd read
//     the same file; a file that resolves to /etc/sysctl.conf is counted once,
//     as /etc/sysctl.conf.
//
// Symlinks are resolved inside the root, as if the root were "/", so
// absolute link targets in a fixture tree stay inside the tree. Entries that
// cannot be resolved (dangling links, loops) and entries that are not regular
// files are ignored and do not mask, as in systemd.
//
// Each line is "key = value". Blank lines and lines whose first non-blank
// character is '#' or ';' are comments. Keys may use '.' or '/' as separators;
// following sysctl.d(5), if the first separator is a '/', dots and slashes are
// interchanged, so net/ipv4/tcp_rmem is reported as net.ipv4.tcp_rmem and
// net/ipv4/conf/eth0.100/rp_filter as net.ipv4.conf.eth0/100.rp_filter. A
// leading '-' marks an assignment whose failure is ignored; a key containing
// glob characters applies to every matching key. Runs of white space inside a
// value are collapsed to one space, as the kernel ignores them in vector
// values such as tcp_rmem. A line "-key" without '=' is the sysctl.d(5) way to
// exclude a key from earlier globs; it assigns nothing and is skipped.
//
// # Processes, memory, kernel
//
// FindDaemons scans a proc root for daemons such as tuned and bpftune (which
// rewrite sysctls at run time) and NetworkManager or systemd-networkd (which
// own routes and their persistence). ReadMemTotal reads /proc/meminfo's MemTotal in
// bytes, and ParseKernelRelease reads "uname -r" strings.
package sysconf
