package pathmodel

// Memory compares what N flows can take with net.ipv4.tcp_mem (a global
// budget in pages for all TCP sockets: above "pressure" the kernel starts
// shrinking buffers, at "max" it refuses to grow them) and with RAM.
type Memory struct {
	Flows int `json:"flows"`
	// NeededBytes is what the flows take with buffers just large enough
	// for the path (receiver side: the larger of the two ends).
	NeededBytes int64 `json:"needed_bytes"`
	// WorstCaseBytes is what they may take when every buffer grows to its
	// configured maximum (0 when the maxima are not known).
	WorstCaseBytes      int64   `json:"worst_case_bytes,omitempty"`
	TCPMemPressureBytes int64   `json:"tcp_mem_pressure_bytes,omitempty"`
	TCPMemMaxBytes      int64   `json:"tcp_mem_max_bytes,omitempty"`
	RAMBytes            int64   `json:"ram_bytes,omitempty"`
	FitsPressure        bool    `json:"fits_pressure"`
	FitsMax             bool    `json:"fits_max"`
	ShareOfRAM          float64 `json:"share_of_ram,omitempty"`
}

// FlowMemory is the memory n flows need when each has a buffer of
// perFlow bytes, against tcp_mem (pages) and RAM.
func FlowMemory(n int, perFlow, worstPerFlow int64, tcpMemPages [3]int64, pageSize, ram int64) Memory {
	m := Memory{
		Flows:               n,
		NeededBytes:         int64(n) * perFlow,
		WorstCaseBytes:      int64(n) * worstPerFlow,
		TCPMemPressureBytes: tcpMemPages[1] * pageSize,
		TCPMemMaxBytes:      tcpMemPages[2] * pageSize,
		RAMBytes:            ram,
	}
	m.FitsPressure = m.TCPMemPressureBytes == 0 || m.NeededBytes <= m.TCPMemPressureBytes
	m.FitsMax = m.TCPMemMaxBytes == 0 || m.NeededBytes <= m.TCPMemMaxBytes
	if ram > 0 {
		m.ShareOfRAM = float64(m.NeededBytes) / float64(ram)
	}
	return m
}

func memoryFor(in Input, r Result) Memory {
	// One host is usually one end of all its long flows; take the end that
	// needs more so the answer holds for either role.
	perFlow := max(used(r.Receiver), used(r.Sender))
	worst := max(r.Receiver.BufferBytes, r.Sender.BufferBytes)
	return FlowMemory(in.Flows, perFlow, worst, in.TCPMemPages, in.PageSize, in.RAMBytes)
}

// used is what one flow's buffer at this end grows to: what the path
// needs, but never past the configured maximum.
func used(e End) int64 {
	if e.BufferBytes > 0 {
		return min(e.NeededBytes, e.BufferBytes)
	}
	return e.NeededBytes
}
