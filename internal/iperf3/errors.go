package iperf3

import "fmt"

// serverError is a SERVER_ERROR: the server refused the test and said why
// with its i_errno (iperf3's IE* error numbers, stable since 3.0) and errno.
type serverError struct {
	addr     string
	ierr     int32
	errno    int32
	hasErrno bool
}

// serverErrorText says, for the i_errno values a server sends to a client,
// what it means for someone running longhaul and what to do. A server only
// sends SERVER_ERROR when it could not set up the test after the parameter
// exchange: authentication, its listener, or a parameter it refuses.
var serverErrorText = map[int32]string{
	5:   "refused the test's duration (at most 86400 s); use a shorter --duration",
	6:   "refused the number of streams (at most 128); use fewer --streams",
	7:   "refused the block size (at most 1 MiB)",
	27:  "refused the test: its total bitrate limit (iperf3 --server-bitrate-limit) is below what the test asks",
	102: "could not listen for the data streams; try again later",
	104: "could not accept the data streams; try again later",
	106: "could not read the data streams' cookie; try again later",
	124: "could not set its socket buffer size",
	130: "could not set its socket window size",
	134: "could not set the congestion control",
	142: "requires authentication (iperf3 --rsa-private-key-path); longhaul does not send iperf3 credentials",
	144: "saw no data for its receive timeout (iperf3 --rcv-timeout); is the path dropping the data?",
	200: "could not create a data stream; try again later",
	202: "could not start its data stream listener: is its port in use? try again later",
	204: "could not accept a data stream; try again later",
	208: "did not know a stream id longhaul sent",
}

func (e *serverError) Error() string {
	if t, ok := serverErrorText[e.ierr]; ok {
		return fmt.Sprintf("iperf3 server %s %s", e.addr, t)
	}
	if e.hasErrno && e.errno != 0 {
		return fmt.Sprintf("iperf3 server %s refused the test with iperf3 error %d (errno %d); its own log says more", e.addr, e.ierr, e.errno)
	}
	return fmt.Sprintf("iperf3 server %s refused the test with iperf3 error %d; its own log says more", e.addr, e.ierr)
}
