package emit

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// The Kubernetes and nmstate outputs are decoded strictly (unknown fields
// are errors) into the API's field names, then checked for the rules the
// API server and nmstate enforce.

type k8sContainer struct {
	Name            string            `yaml:"name"`
	Image           string            `yaml:"image"`
	Command         []string          `yaml:"command"`
	SecurityContext map[string]bool   `yaml:"securityContext"`
	Resources       map[string]any    `yaml:"resources"`
	Env             []map[string]any  `yaml:"env"`
	VolumeMounts    []map[string]any  `yaml:"volumeMounts"`
	Extra           map[string]string `yaml:",inline"`
}

type daemonSet struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				HostNetwork    bool                `yaml:"hostNetwork"`
				Tolerations    []map[string]string `yaml:"tolerations"`
				InitContainers []k8sContainer      `yaml:"initContainers"`
				Containers     []k8sContainer      `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func strict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
}

func TestK8sDaemonSet(t *testing.T) {
	p := loadPlan(t, "fleet.json")
	out, err := Render(p, "k8s")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(yamlDocs(t, out)); n != 1 {
		t.Fatalf("%d YAML documents, want 1", n)
	}
	var ds daemonSet
	strict(t, out, &ds)
	s := ds.Spec.Template.Spec
	switch {
	case ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet":
		t.Errorf("%s %s, want apps/v1 DaemonSet", ds.APIVersion, ds.Kind)
	case !dns1123.MatchString(ds.Metadata.Name) || ds.Metadata.Namespace == "":
		t.Errorf("metadata %+v", ds.Metadata)
	case len(ds.Spec.Selector.MatchLabels) == 0 || !cmp.Equal(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels):
		t.Errorf("the selector %v must select the template's labels %v (apps/v1 rejects it otherwise)", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels)
	case !s.HostNetwork:
		t.Error("not hostNetwork: the sysctls would land in the pod's own namespace")
	case len(s.InitContainers) != 1 || len(s.Containers) != 1:
		t.Fatalf("containers %d+%d, want 1 init + 1", len(s.InitContainers), len(s.Containers))
	}
	for _, c := range append(s.InitContainers, s.Containers...) {
		if !dns1123.MatchString(c.Name) || c.Image == "" {
			t.Errorf("container %q image %q", c.Name, c.Image)
		}
	}
	init := s.InitContainers[0]
	if !init.SecurityContext["privileged"] || len(init.Command) < 3 || init.Command[0] != "sysctl" || init.Command[1] != "-w" {
		t.Fatalf("init container %+v", init)
	}
	got := map[string]string{}
	for _, kv := range init.Command[2:] {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{}
	for _, s := range Sysctls(p) {
		want[s.Key] = s.Value
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sysctl -w arguments (-plan +DaemonSet):\n%s", diff)
	}
}

func TestK8sPod(t *testing.T) {
	var patch struct {
		Spec struct {
			Template struct {
				Spec struct {
					SecurityContext struct {
						Sysctls []struct {
							Name  string `yaml:"name"`
							Value string `yaml:"value"`
						} `yaml:"sysctls"`
					} `yaml:"securityContext"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	out, err := Render(loadPlan(t, "fleet.json"), "k8s-pod")
	if err != nil {
		t.Fatal(err)
	}
	strict(t, out, &patch)
	got := map[string]string{}
	for _, s := range patch.Spec.Template.Spec.SecurityContext.Sysctls {
		got[s.Name] = s.Value
	}
	// The fleet plan also has host-wide keys and unsafe per-namespace
	// ones: only the two safe keys may reach a pod.
	want := map[string]string{"net.ipv4.tcp_rmem": "4096 131072 15728640", "net.ipv4.tcp_wmem": "4096 16384 11534336"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod sysctls (-want +got):\n%s", diff)
	}
	for _, left := range []string{"net.core.rmem_max", "net.ipv4.tcp_slow_start_after_idle", "--allowed-unsafe-sysctls="} {
		if !strings.Contains(string(out), left) {
			t.Errorf("the comment does not name %s", left)
		}
	}
}

func TestNmstate(t *testing.T) {
	var state struct {
		Routes struct {
			Config []struct {
				Destination string `yaml:"destination"`
				Iface       string `yaml:"next-hop-interface"`
				Gateway     string `yaml:"next-hop-address"`
				TableID     int    `yaml:"table-id"`
				State       string `yaml:"state"`
				InitCwnd    int    `yaml:"initcwnd"`
				InitRwnd    int    `yaml:"initrwnd"`
			} `yaml:"config"`
		} `yaml:"routes"`
	}
	out, err := Render(loadPlan(t, "fleet.json"), "nmstate")
	if err != nil {
		t.Fatal(err)
	}
	strict(t, out, &state)
	rs := state.Routes.Config
	if len(rs) != 2 {
		t.Fatalf("%d route entries, want the old route absent and the new one", len(rs))
	}
	old, nw := rs[0], rs[1]
	if old.State != "absent" || nw.State != "" || old.Destination != "0.0.0.0/0" || nw.Destination != old.Destination ||
		nw.Iface != "eth0" || old.Iface != nw.Iface || nw.Gateway != "10.0.0.1" || nw.InitCwnd != 20 || old.InitCwnd != 0 {
		t.Errorf("routes %+v", rs)
	}
}
