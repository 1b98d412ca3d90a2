package emit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
)

// podSafe are the plan keys Kubernetes lets a pod set in its own network
// namespace without kubelet's --allowed-unsafe-sysctls: tcp_rmem and
// tcp_wmem are in the safe set since 1.32 (kubernetes#125234, kernels
// >= 4.15, where they are per network namespace).
var podSafe = map[string]bool{"net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true}

// Images the DaemonSet runs: busybox's sysctl applet writes the values
// once in an init container, then pause holds the pod so the DaemonSet
// stays ready and reapplies on every node that joins or reboots.
const (
	sysctlImage = "busybox:1.36"
	pauseImage  = "registry.k8s.io/pause:3.10"
)

// k8sDaemonSet sets every planned sysctl in each node's host network
// namespace (hostNetwork): the host-wide keys only exist there, and pods
// with their own network namespace take tcp_rmem/tcp_wmem from
// securityContext (k8s-pod), not from the node.
func k8sDaemonSet(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString(header(p, "k8s", "kubectl apply -f this.yaml; pods with their own network namespace also need --emit k8s-pod."))
	ss := Sysctls(p)
	args := []string{"sysctl", "-w"}
	for _, s := range ss {
		args = append(args, s.Key+"="+s.Value)
	}
	if len(ss) == 0 {
		b.WriteString("# The plan changes no sysctl: the DaemonSet only checks that sysctl runs.\n")
		args = []string{"sysctl", "net.ipv4.tcp_rmem"}
	}
	if rs := routes(p); len(rs) > 0 {
		fmt.Fprintf(&b, "# Routes are not set here: %d planned route(s) need --emit nmstate (kubernetes-nmstate's\n# NodeNetworkConfigurationPolicy takes it as spec.desiredState).\n", len(rs))
	}
	b.WriteString(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: longhaul-node-sysctls
  namespace: kube-system
  labels: {app.kubernetes.io/name: longhaul-node-sysctls, app.kubernetes.io/managed-by: longhaul}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: longhaul-node-sysctls}
  template:
    metadata:
      labels: {app.kubernetes.io/name: longhaul-node-sysctls}
    spec:
      hostNetwork: true
      tolerations: [{operator: Exists}]
      initContainers:
        - name: sysctl
          image: ` + sysctlImage + `
          securityContext: {privileged: true}
          command:
`)
	for _, a := range args {
		fmt.Fprintf(&b, "            - %s\n", strconv.Quote(a))
	}
	b.WriteString(`      containers:
        - name: pause
          image: ` + pauseImage + `
          resources: {requests: {cpu: 1m, memory: 8Mi}, limits: {memory: 16Mi}}
`)
	return b.String(), nil
}

// k8sPod is a strategic-merge patch for a workload's pod template
// (kubectl patch deployment NAME --patch-file this.yaml): the safe
// per-namespace keys only.
func k8sPod(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString(header(p, "k8s-pod", "kubectl patch deployment|statefulset|daemonset NAME --patch-file this.yaml"))
	var safe, unsafe, host []Setting
	for _, s := range Sysctls(p) {
		switch {
		case s.Host:
			host = append(host, s)
		case podSafe[s.Key]:
			safe = append(safe, s)
		default:
			unsafe = append(unsafe, s)
		}
	}
	if len(unsafe) > 0 {
		fmt.Fprintf(&b, "# Left out, unsafe pod sysctls (the kubelet refuses the pod unless started with\n# --allowed-unsafe-sysctls=%s): %s.\n", strings.Join(keys(unsafe), ","), keyList(unsafe))
	}
	if len(host) > 0 {
		fmt.Fprintf(&b, "# Left out, host-wide (set on the node: --emit k8s): %s.\n", keyList(host))
	}
	b.WriteString("spec:\n  template:\n    spec:\n      securityContext:\n        sysctls:")
	if len(safe) == 0 {
		b.WriteString(" []\n")
		return b.String(), nil
	}
	b.WriteString("\n")
	for _, s := range safe {
		fmt.Fprintf(&b, "          - name: %s\n            value: %s\n", strconv.Quote(s.Key), strconv.Quote(s.Value))
	}
	return b.String(), nil
}

func keys(ss []Setting) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Key
	}
	return out
}

// nmstate is the desired state for the planned routes. nmstate changes a
// route by removing the old entry and adding the new one in the same
// state (a route's metrics are part of its identity), so an existing
// route is listed absent first.
func nmstate(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString(header(p, "nmstate", "nmstatectl apply this.yaml (or kubernetes-nmstate: a NodeNetworkConfigurationPolicy's spec.desiredState)"))
	if ss := Sysctls(p); len(ss) > 0 {
		fmt.Fprintf(&b, "# nmstate sets no sysctls: %d planned sysctl(s) need --emit sysctl.d, tuned or k8s.\n", len(ss))
	}
	rs := routes(p)
	if len(rs) == 0 {
		return "", noRoutes()
	}
	b.WriteString("routes:\n  config:\n")
	for _, r := range rs {
		if r.Dev == "" {
			return "", badinput.Errorf("route %s: nmstate needs the route's interface and the plan does not name it (made from --root or --snapshot without routes): make the plan on the host", r.Dst)
		}
		entry := fmt.Sprintf("    - destination: %s\n      next-hop-interface: %s\n", dstPrefix(r.Route), r.Dev)
		if r.Gateway != "" {
			entry += fmt.Sprintf("      next-hop-address: %s\n", r.Gateway)
		}
		if r.Table != 0 && r.Table != 254 {
			entry += fmt.Sprintf("      table-id: %d\n", r.Table)
		}
		if r.Exists {
			b.WriteString(entry + "      state: absent\n")
		}
		b.WriteString(entry)
		if r.InitCwnd > 0 {
			fmt.Fprintf(&b, "      initcwnd: %d\n", r.InitCwnd)
		}
		if r.InitRwnd > 0 {
			fmt.Fprintf(&b, "      initrwnd: %d\n", r.InitRwnd)
		}
	}
	return b.String(), nil
}
