#!/usr/bin/env bash
# walkthrough-twohost: the README's two-host walkthrough on an emulated
# path (root): 200 ms, 1 Gbit/s, both hosts with Ubuntu-like buffers
# (tcp_rmem max 6 MiB, tcp_wmem max 4 MiB). longhaul serve runs in the
# server namespace; test, apply (each plan in its host's namespace) and
# test again run from the client's. Output in $OUT (default a temporary
# directory, printed at the end). LONGHAUL=PATH picks the binary.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
L=${LONGHAUL:-$here/bin/longhaul}
OUT=${OUT:-$(mktemp -d)}
cd "$OUT"
head -c 32 /dev/urandom | base64 >token
chmod 600 token
cat >client.sh <<EOS
#!/bin/sh
set -e
echo '\$ longhaul test server.example.net --auth token -o before'
$L test \$LONGHAUL_SERVER --auth token --netns \$LONGHAUL_CLIENT_NETNS -o before
echo '\$ longhaul apply before/server-plan.json    # on the server'
$L apply before/server-plan.json --netns \$LONGHAUL_SERVER_NETNS --state-dir $OUT/state-server
echo '\$ longhaul apply before/client-plan.json    # here'
$L apply before/client-plan.json --netns \$LONGHAUL_CLIENT_NETNS --state-dir $OUT/state-client
echo '\$ longhaul test server.example.net --auth token -o after'
$L test \$LONGHAUL_SERVER --auth token --netns \$LONGHAUL_CLIENT_NETNS -o after
echo '\$ longhaul test --compare before/test.json after/test.json'
$L test --compare before/test.json after/test.json
EOS
chmod +x client.sh
ubuntu_r="4096 131072 6291456" ubuntu_w="4096 16384 4194304"
"$L" emulate --rtt 200ms --rate 1Gbit/s --cc cubic \
	--client-sysctl "net.ipv4.tcp_rmem=$ubuntu_r" --client-sysctl "net.ipv4.tcp_wmem=$ubuntu_w" \
	--server-sysctl "net.ipv4.tcp_rmem=$ubuntu_r" --server-sysctl "net.ipv4.tcp_wmem=$ubuntu_w" \
	--server "$L serve --auth $OUT/token --netns \$LONGHAUL_SERVER_NETNS 2>$OUT/serve.log" -- ./client.sh
echo "walkthrough: files in $OUT (longhaul report $OUT/before/test.json draws the first run)" >&2
