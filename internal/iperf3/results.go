package iperf3

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// exchangeResults sends this end's results (EXCHANGE_RESULTS), reads the
// server's into res and waits for DISPLAY_RESULTS.
func (r *run) exchangeResults(res *Result, cpu CPU) error {
	o := r.o
	// Our results: what iperf3's client sends. A receiver has no
	// retransmissions to report (-1); a sender that does not read tcp_info
	// says so with sender_has_retransmits 0.
	doc := resultsDoc{CPUUtilTotal: cpu.Total, CPUUtilUser: cpu.User, CPUUtilSystem: cpu.System, SenderHasRetransmits: 0}
	if o.Reverse {
		doc.SenderHasRetransmits = -1
	}
	for _, s := range res.Streams {
		doc.Streams = append(doc.Streams, resultsStream{ID: s.ID, Bytes: float64(s.Bytes), Retransmits: -1, EndTime: res.Elapsed.Seconds()})
	}
	r.phase = "sending the results"
	r.ctrl.SetWriteDeadline(r.waitUntil())
	if err := writeJSON(r.ctrl, doc); err != nil {
		return r.fail(err, "")
	}
	r.phase = "waiting for the server's results (after EXCHANGE_RESULTS)"
	r.ctrl.SetReadDeadline(r.waitUntil())
	body, err := readJSON(r.ctrl, maxResultsJSON)
	if err != nil {
		if errors.Is(err, errTooLong) {
			return r.errorf("sent a result document too long (%v): is its output (-J) very long? try fewer streams or a shorter --duration", err)
		}
		return r.fail(err, "")
	}
	if err := fillResults(res, body); err != nil {
		return r.errorf("sent a malformed result document: %v", err)
	}
	return r.expect(stateDisplayResults, "after the results")
}

// fillResults puts the server's results document into res.
func fillResults(res *Result, body []byte) error {
	d, err := decodeResults(body)
	if err != nil {
		return err
	}
	res.ServerCPU = CPU{Total: d.CPUUtilTotal, User: d.CPUUtilUser, System: d.CPUUtilSystem}
	res.ServerCongestion = d.CongestionUsed
	byID := map[int]*Stream{}
	for i := range res.Streams {
		byID[res.Streams[i].ID] = &res.Streams[i]
	}
	for _, s := range d.Streams {
		st := byID[s.ID]
		if st == nil {
			return fmt.Errorf("stream id %d is not one of this test's", s.ID)
		}
		st.ServerBytes = count(&s.Bytes)
		st.ServerRetransmits = count(&s.Retransmits)
		st.ServerTime = seconds(s.EndTime) - seconds(s.StartTime)
	}
	var out *parsedOutput
	switch {
	case len(d.ServerOutputJSON) > 0 && string(d.ServerOutputJSON) != "null":
		if out, err = parseJSONOutput(d.ServerOutputJSON); err != nil {
			return err
		}
		res.ServerOutputJSON = true
		res.ServerVersion = out.version
	case d.ServerOutputText != nil:
		res.ServerOutputText = *d.ServerOutputText
		out = parseTextOutput(res.ServerOutputText)
	default:
		return nil
	}
	assignIntervals(res, out)
	return nil
}

// assignIntervals gives each stream the server's intervals for it. The
// server names its sockets and the peer port of each; that port is this
// end's local port unless a NAT changed it, and then the server's accept
// order, which is the order we dialled, still matches.
func assignIntervals(res *Result, out *parsedOutput) {
	byPort := map[int]int{}
	for i, s := range res.Streams {
		if _, p, err := net.SplitHostPort(s.Local); err == nil {
			n, _ := strconv.Atoi(p)
			byPort[n] = i
		}
	}
	matched := len(out.sockets) == len(res.Streams)
	for _, sock := range out.sockets {
		if _, ok := byPort[out.portOf[sock]]; !ok {
			matched = false
		}
	}
	for k, sock := range out.sockets {
		i := k
		if matched {
			i = byPort[out.portOf[sock]]
		}
		if i < len(res.Streams) {
			res.Streams[i].Intervals = out.intervals[sock]
		}
	}
}
