package diagnose

// Classify returns the state of the sender at sample s.
func (tl *Timeline) Classify(s Sample) State { return tl.classify(&s) }

// FromSamples builds a timeline from a slice of samples (e.g. tcp_info
// polls), keeping a series of at most maxPoints.
func FromSamples(samples []Sample, mss, maxPoints int) *Timeline {
	tl := &Timeline{MSS: mss, MaxPoints: maxPoints, MaxEvents: 1000}
	for _, s := range samples {
		tl.Add(s)
	}
	return tl
}

// Add appends a copy of s.
func (tl *Timeline) Add(s Sample) { tl.add(&s) }
