package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/longhaul/longhaul/internal/emit"
	"github.com/longhaul/longhaul/internal/plan"
)

// FuzzReadPlan: a plan file from any bytes (apply, plan --emit --from
// and audit --against read files people edit and copy between hosts)
// is read or refused, never a panic, and what is read is written in
// every --emit format or refused by plan.CheckFields.
func FuzzReadPlan(f *testing.F) {
	for _, name := range []string{"testdata/golden/plan-ubuntu-2004.json.golden", "../emit/testdata/fleet.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"longhaul.plan/v1","items":[{"kind":"sysctl","key":"net.core.rmem_max","new":"1"}]}`))
	f.Add([]byte(`{"schema":"longhaul.plan/v1","items":null,"unknown":1}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "plan.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := readPlan(context.Background(), path)
		if err != nil {
			return
		}
		checked := plan.CheckFields(p) == nil
		for _, fm := range emit.Formats() {
			if _, err := emit.Render(p, fm.Name); err == nil && !checked {
				t.Fatalf("%s written from a plan CheckFields refuses", fm.Name)
			}
		}
	})
}
