package twohost

import (
	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// cpuOver is the process's CPU use since start, nil when not measured.
func cpuOver(start cpuuse.Use, ok bool) *testdoc.CPUUse {
	end, ok2 := cpuuse.Now()
	if !ok || !ok2 {
		return nil
	}
	d := end.Sub(start)
	return &testdoc.CPUUse{RunS: d.Run.Seconds(), WaitS: d.Wait.Seconds()}
}
