package streamio

import (
	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// CPUOver is the process's CPU use since start, nil when not measured.
func CPUOver(start cpuuse.Use, ok bool) *testdoc.CPUUse {
	end, ok2 := cpuuse.Now()
	if !ok || !ok2 {
		return nil
	}
	d := end.Sub(start)
	return &testdoc.CPUUse{RunS: d.Run.Seconds(), WaitS: d.Wait.Seconds()}
}
