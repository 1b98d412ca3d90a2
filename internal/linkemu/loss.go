package linkemu

import (
	"fmt"
	"math/rand/v2"
)

// LossModel describes random per-segment loss. A Link calls Start once, at
// New, to get its own loss process, so a LossModel value can be shared by
// several links.
type LossModel interface {
	// Validate reports invalid parameters as a one-line lowercase error.
	Validate() error
	// Start returns a fresh loss process with its own state.
	Start() LossProcess
}

// LossProcess decides, segment by segment and in arrival order, whether a
// segment is lost. It must draw randomness only from r (seeded from
// Config.Seed) to keep the model deterministic. Overload drops happen before
// it is consulted and do not advance it.
type LossProcess interface {
	Lost(r *rand.Rand) bool
}

// Bernoulli loses each segment independently with probability P.
type Bernoulli struct {
	P float64
}

// Validate implements LossModel.
func (b Bernoulli) Validate() error {
	return checkProb("loss probability", b.P)
}

// Start implements LossModel; Bernoulli has no state.
func (b Bernoulli) Start() LossProcess { return b }

// Lost implements LossProcess.
func (b Bernoulli) Lost(r *rand.Rand) bool {
	return b.P > 0 && r.Float64() < b.P
}

// GilbertElliott is the two-state bursty loss model: before each segment
// the chain moves from good to bad with probability PGoodToBad (from bad to
// good with PBadToGood), then the segment is lost with probability LossGood
// or LossBad of the current state. The chain starts in the good state.
type GilbertElliott struct {
	PGoodToBad, PBadToGood float64
	LossGood, LossBad      float64
}

// Validate implements LossModel.
func (g GilbertElliott) Validate() error {
	if err := checkProb("gilbert-elliott good-to-bad probability", g.PGoodToBad); err != nil {
		return err
	}
	if err := checkProb("gilbert-elliott bad-to-good probability", g.PBadToGood); err != nil {
		return err
	}
	if err := checkProb("gilbert-elliott good-state loss", g.LossGood); err != nil {
		return err
	}
	return checkProb("gilbert-elliott bad-state loss", g.LossBad)
}

// MeanLoss is the stationary loss probability of the chain.
func (g GilbertElliott) MeanLoss() float64 {
	t := g.PGoodToBad + g.PBadToGood
	if t == 0 {
		return g.LossGood // never leaves the good state
	}
	pBad := g.PGoodToBad / t
	return (1-pBad)*g.LossGood + pBad*g.LossBad
}

// Start implements LossModel.
func (g GilbertElliott) Start() LossProcess { return &geProcess{m: g} }

type geProcess struct {
	m   GilbertElliott
	bad bool
}

func (s *geProcess) Lost(r *rand.Rand) bool {
	if s.bad {
		if s.m.PBadToGood > 0 && r.Float64() < s.m.PBadToGood {
			s.bad = false
		}
	} else if s.m.PGoodToBad > 0 && r.Float64() < s.m.PGoodToBad {
		s.bad = true
	}
	p := s.m.LossGood
	if s.bad {
		p = s.m.LossBad
	}
	return p > 0 && r.Float64() < p
}

func checkProb(what string, p float64) error {
	if !(p >= 0 && p <= 1) { // also rejects NaN
		return fmt.Errorf("%s must be in [0,1] (got %v)", what, p)
	}
	return nil
}
