package twohost

import "github.com/longhaul/longhaul/internal/twohost/judge"

// The judge's names that probe still says as twohost's.
type (
	Raw          = judge.Raw
	JudgeOptions = judge.JudgeOptions
)

// Judge is judge.Judge, for probe.
func Judge(raw *Raw, opt JudgeOptions) (*Doc, error) { return judge.Judge(raw, opt) }
