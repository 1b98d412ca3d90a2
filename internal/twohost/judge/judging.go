package judge

import "github.com/longhaul/longhaul/internal/twohost/testdoc"

// judging is a test's document while Judge (or JudgeIperf) builds it,
// with what only the judge knows beside it.
type judging struct {
	*testdoc.Doc
	// rateFromRamp: PathRateBps is what flows still in slow start
	// carried.
	rateFromRamp bool
}

// urlJudging is a URL test's document while JudgeURL builds it.
type urlJudging struct{ *testdoc.URLDoc }
