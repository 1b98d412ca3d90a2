package cli

import "fmt"

// writeReport renders a results file as HTML.
func writeReport(results, out string) error {
	return fmt.Errorf("report: not built yet")
}
