#!/usr/bin/env bash
# Writes the fixture host trees under testdata/hosts (proc/sys, proc, etc)
# that audit's golden tests read with --root. Re-run after editing; the
# trees are checked in.
set -euo pipefail
cd "$(dirname "$0")/../testdata/hosts"

# sysctl HOST KEY VALUE
sysctl() { local f="$1/proc/sys/${2//.//}"; mkdir -p "$(dirname "$f")"; printf '%s\n' "$3" >"$f"; }
# file HOST PATH CONTENT
file() { mkdir -p "$(dirname "$1/$2")"; printf '%s' "$3" >"$1/$2"; }

common() { # HOST RELEASE HOSTNAME MEMKB
	rm -rf "$1"
	sysctl "$1" kernel.osrelease "$2"
	sysctl "$1" kernel.hostname "$3"
	file "$1" proc/meminfo "MemTotal:       $4 kB
MemFree:         1000000 kB
"
	for k in tcp_window_scaling tcp_sack tcp_timestamps tcp_slow_start_after_idle tcp_moderate_rcvbuf; do
		sysctl "$1" net.ipv4.$k 1
	done
	sysctl "$1" net.ipv4.tcp_no_metrics_save 0
	sysctl "$1" net.ipv4.tcp_mtu_probing 0
	sysctl "$1" net.ipv4.tcp_notsent_lowat 4294967295
	sysctl "$1" net.core.rmem_default 212992
	sysctl "$1" net.core.wmem_default 212992
}

# Ubuntu 20.04 with folklore tuning: old buffers, sysctl.d conflicts, a
# patched-kernel key, a fixed tcp_mem larger than RAM, tuned running.
h=ubuntu-2004
common $h 5.4.0-150-generic ubuntu-old 8141376
sysctl $h net.ipv4.tcp_rmem "4096	131072	6291456"
sysctl $h net.ipv4.tcp_wmem "4096	16384	4194304"
sysctl $h net.core.rmem_max 212992
sysctl $h net.core.wmem_max 212992
sysctl $h net.ipv4.tcp_mem "786432	1048576	26777216"
sysctl $h net.ipv4.tcp_adv_win_scale 1
sysctl $h net.ipv4.tcp_congestion_control cubic
sysctl $h net.ipv4.tcp_available_congestion_control "reno cubic"
sysctl $h net.ipv4.tcp_allowed_congestion_control "reno cubic"
sysctl $h net.core.default_qdisc fq_codel
file $h etc/sysctl.conf "# /etc/sysctl.conf - Configuration file for setting system variables
net.ipv4.tcp_rmem = 4096 87380 16777216
"
file $h etc/sysctl.d/10-network-security.conf "net.ipv4.conf.default.rp_filter=2
"
file $h etc/sysctl.d/60-fasterdata.conf "# copied from a tuning guide
net.ipv4.tcp_rmem = 4096 87380 33554432
net.ipv4.tcp_wmem = 4096 65536 33554432
net.ipv4.tcp_mem = 786432 1048576 26777216
net.ipv4.tcp_collapse_max_bytes = 6291456
"
file $h etc/sysctl.d/99-sysctl.conf ""
rm $h/etc/sysctl.d/99-sysctl.conf
ln -s ../sysctl.conf $h/etc/sysctl.d/99-sysctl.conf
sysctl $h net.ipv4.conf.default.rp_filter 2
file $h proc/812/comm "tuned
"
file $h proc/812/cmdline "/usr/bin/python3"

# Debian 13 on a current kernel with defaults: little to say.
h=debian-13
common $h 6.12.48+deb13-amd64 debian-new 16307200
sysctl $h net.ipv4.tcp_rmem "4096	131072	33554432"
sysctl $h net.ipv4.tcp_wmem "4096	16384	4194304"
sysctl $h net.core.rmem_max 212992
sysctl $h net.core.wmem_max 212992
sysctl $h net.ipv4.tcp_mem "188205	250942	376410"
sysctl $h net.ipv4.tcp_congestion_control cubic
sysctl $h net.ipv4.tcp_available_congestion_control "reno cubic"
sysctl $h net.ipv4.tcp_allowed_congestion_control "reno cubic"
sysctl $h net.core.default_qdisc pfifo_fast
file $h etc/sysctl.d/README.sysctl "see sysctl.d(5)
"

# A middlebox-like host with the TCP extensions and autotuning off.
h=broken
common $h 6.1.0-27-amd64 broken 4038656
sysctl $h net.ipv4.tcp_rmem "4096	131072	6291456"
sysctl $h net.ipv4.tcp_wmem "4096	16384	4194304"
sysctl $h net.core.rmem_max 212992
sysctl $h net.core.wmem_max 212992
sysctl $h net.ipv4.tcp_mem "94029	125373	188058"
sysctl $h net.ipv4.tcp_adv_win_scale 1
sysctl $h net.ipv4.tcp_window_scaling 0
sysctl $h net.ipv4.tcp_sack 0
sysctl $h net.ipv4.tcp_timestamps 0
sysctl $h net.ipv4.tcp_moderate_rcvbuf 0
sysctl $h net.ipv4.tcp_congestion_control reno
sysctl $h net.ipv4.tcp_available_congestion_control "reno"
sysctl $h net.ipv4.tcp_allowed_congestion_control "reno"
sysctl $h net.core.default_qdisc pfifo_fast
file $h etc/sysctl.d/50-bpftune.conf "-net.ipv4.tcp_shrink_window = 1
"
file $h proc/4242/comm "bpftune
"
