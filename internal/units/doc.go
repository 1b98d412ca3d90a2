// Package units parses and formats the quantities people type on the
// longhaul command line and read in its human output: durations (RTTs),
// rates, byte counts and percentages (loss).
//
// It exists for humans only. Machine output (JSON) carries plain SI numbers
// (seconds, bits per second, bytes, fractions) and never goes through here.
//
// Conventions:
//
//   - Units are required wherever a bare number would be ambiguous: "200" is
//     rejected as a duration or rate because it could mean 200ms or 200s,
//     200bit/s or 200Mbit/s. A bare 0 is always accepted, since zero needs
//     no unit. A bare integer is accepted as a byte count.
//   - Rates: lowercase b is bit and uppercase B is byte, as in "1Gbit/s",
//     "1Gbps", "1Gb/s" (bits) and "125MB/s", "125MBps" (bytes). "bps" means
//     bits per second, as network people use it; note that tc(8) reads
//     "bps" as bytes, so "mbps"/"gbps" with a lowercase prefix are rejected
//     as ambiguous. tc-style "kbit", "mbit", "gbit" are accepted: spelling
//     out "bit" makes them unambiguous.
//   - Prefixes k/K, M, G, T are SI (powers of 1000); Ki, Mi, Gi, Ti are IEC
//     (powers of 1024).
//   - Sizes: "kB"/"KB", "MB", "GB", "TB" are SI; "KiB", "MiB", ... are IEC.
//     A bare K, M, G or T suffix ("640K", "12M") is binary, because that is
//     what iperf3 -w, sysctl and most socket-buffer documentation mean by
//     it. Lowercase "kb", "mb", "Gb" and friends could be bits and are
//     rejected.
//   - Errors are one line, quote the input and say what is accepted; they
//     never name a flag (callers wrap them with one).
//   - Formatting uses at most 4 significant digits, trims trailing zeros and
//     never uses scientific notation, so output is stable for golden tests:
//     "1 Gbit/s", "166.8 Mbit/s", "37.88 MB", "36.12 MiB", "200 ms".
package units
