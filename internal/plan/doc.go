// Package plan turns a path (RTT, rate, flows), this host's role on it and
// a host snapshot into the smallest set of changes that lets the flows
// reach the rate: a Plan. It is pure: the snapshot is gathered elsewhere,
// every number comes from the path model (internal/pathmodel), and a Plan
// is plain data that round-trips through JSON (schema longhaul.plan/v1),
// so `longhaul plan` can write it, a person can read it and `longhaul
// apply` can apply it on the kernel it was made for.
//
// # Policy
//
//   - Buffers are sized from the model's need, never from folklore: the
//     tcp_rmem/tcp_wmem maximum becomes the need plus Headroom, rounded up
//     to a MiB, which stays within 2x of the need and far from the 2 GiB
//     int limit. A maximum that already covers the need is left alone:
//     plans only raise, never lower.
//   - Only the ends this host plays matter: a client receives the bulk
//     data (tcp_rmem, the route's initrwnd), a server sends it (tcp_wmem,
//     initcwnd, tcp_slow_start_after_idle, tcp_no_metrics_save); both
//     plans for either direction.
//   - net.core.rmem_max/wmem_max only clamp applications that set
//     SO_RCVBUF/SO_SNDBUF; they are planned only when the request says
//     applications do (AppBuffers), and otherwise an app item says to
//     leave those options unset so autotuning works.
//   - N flows must fit the memory budget (default a quarter of RAM): a plan
//     that cannot is refused; tcp_mem, the host-wide budget in pages, is
//     raised only when its pressure point is below what the flows need.
//   - Initial windows are per route, for the destination asked for, never
//     the whole host unless the destination is "default".
//
// Every item says what it is now, what it becomes, why (with the model's
// numbers) and what memory it lets the flows take.
package plan
