package iperf3

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The control protocol's state numbers, as iperf3 defines them. They have
// not changed since 3.0; a server sends them one signed byte at a time and
// a client answers with the few it owns (TEST_END, IPERF_DONE,
// CLIENT_TERMINATE).
const (
	stateTestStart       int8 = 1
	stateTestRunning     int8 = 2
	stateTestEnd         int8 = 4
	stateParamExchange   int8 = 9
	stateCreateStreams   int8 = 10
	stateServerTerminate int8 = 11
	stateClientTerminate int8 = 12
	stateExchangeResults int8 = 13
	stateDisplayResults  int8 = 14
	stateIperfDone       int8 = 16
	stateAccessDenied    int8 = -1
	stateServerError     int8 = -2
)

// stateName names a state for error messages; a number the protocol does not
// define is shown as a number, so a garbage byte reads as garbage.
func stateName(s int8) string {
	switch s {
	case stateTestStart:
		return "TEST_START"
	case stateTestRunning:
		return "TEST_RUNNING"
	case stateTestEnd:
		return "TEST_END"
	case stateParamExchange:
		return "PARAM_EXCHANGE"
	case stateCreateStreams:
		return "CREATE_STREAMS"
	case stateServerTerminate:
		return "SERVER_TERMINATE"
	case stateClientTerminate:
		return "CLIENT_TERMINATE"
	case stateExchangeResults:
		return "EXCHANGE_RESULTS"
	case stateDisplayResults:
		return "DISPLAY_RESULTS"
	case stateIperfDone:
		return "IPERF_DONE"
	case stateAccessDenied:
		return "ACCESS_DENIED"
	case stateServerError:
		return "SERVER_ERROR"
	}
	return fmt.Sprintf("unknown state %d", s)
}

// cookieLen is iperf's COOKIE_SIZE: 36 characters and a NUL. The server
// compares it with strcmp, so any 36 printable characters do; ours use the
// alphabet iperf3's own client uses so a server's log looks ordinary.
const cookieLen = 37

const cookieAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

func newCookie() ([cookieLen]byte, error) {
	var c [cookieLen]byte
	if _, err := rand.Read(c[:cookieLen-1]); err != nil {
		return c, err
	}
	for i := range cookieLen - 1 {
		c[i] = cookieAlphabet[int(c[i])%len(cookieAlphabet)]
	}
	c[cookieLen-1] = 0
	return c, nil
}

// Limits on what a server may make us read. A results document carries the
// server's output when we ask for it (get_server_output): with a -J server
// that is one object per stream per second, about 300 bytes each, so 4 MiB
// holds 128 streams for over 100 s or 4 streams for an hour. Every other
// document is small; nothing else a server sends is length-prefixed.
const (
	maxResultsJSON = 4 << 20
	maxSmallJSON   = 8 << 10
)

// errTooLong is returned (wrapped) when a length prefix exceeds its limit:
// the length is checked before anything is allocated.
var errTooLong = errors.New("length prefix over the limit")

// readJSON reads one length-prefixed document: a 4-byte big-endian length
// and that many bytes. The buffer grows only as bytes arrive, so a server
// that announces 4 MiB and sends 10 bytes costs 10 bytes, not 4 MiB.
func readJSON(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, errors.New("empty document (length 0)")
	}
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d accepted", errTooLong, n, limit)
	}
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, int64(n))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%d of %d announced bytes: %w", got, n, err)
	}
	return buf.Bytes(), nil
}

// writeJSON sends v as iperf's JSON_write does: compact JSON behind its
// 4-byte big-endian length, in one write so a reader never sees half.
func writeJSON(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(msg, uint32(len(body)))
	copy(msg[4:], body)
	_, err = w.Write(msg)
	return err
}

// serverErrorTail decodes what follows SERVER_ERROR: iperf's i_errno and the
// C errno, each a big-endian int32. 3.12's failed authentication sends only
// the first and closes, so a missing errno is not an error (hasErrno false).
func readServerErrorTail(r io.Reader) (ierr, errno int32, hasErrno bool, err error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, false, err
	}
	ierr = int32(binary.BigEndian.Uint32(b[:]))
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return ierr, 0, false, nil
	}
	return ierr, int32(binary.BigEndian.Uint32(b[:])), true, nil
}

// params is what the client sends at PARAM_EXCHANGE. Every server from 3.1
// reads these names; 3.17+ check the types (tcp and reverse must be true, the
// others numbers), which is why reverse is omitted rather than false.
type params struct {
	TCP             bool   `json:"tcp"`
	Omit            int    `json:"omit"`
	Time            int    `json:"time"`
	Num             int    `json:"num"`
	Blockcount      int    `json:"blockcount"`
	Parallel        int    `json:"parallel"`
	Reverse         bool   `json:"reverse,omitempty"`
	Len             int    `json:"len"`
	PacingTimer     int    `json:"pacing_timer"`
	GetServerOutput int    `json:"get_server_output"`
	ClientVersion   string `json:"client_version"`
}

// clientVersion is what we tell the server: iperf3 servers only log it; a
// name that is not an iperf version keeps longhaul's runs recognisable in
// the server's JSON output ("client_version" is not checked anywhere).
const clientVersion = "longhaul"

// resultsDoc is the results document both ends send at EXCHANGE_RESULTS.
// The server requires the cpu fields, sender_has_retransmits and, per
// stream, id, bytes, retransmits, jitter, errors and packets (3.1 on);
// start_time and end_time are read from 3.2 on.
type resultsDoc struct {
	CPUUtilTotal         float64         `json:"cpu_util_total"`
	CPUUtilUser          float64         `json:"cpu_util_user"`
	CPUUtilSystem        float64         `json:"cpu_util_system"`
	SenderHasRetransmits float64         `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	Streams              []resultsStream `json:"streams"`
	// Only in the server's document, when get_server_output was asked:
	// one or the other as the server runs with or without -J.
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText *string         `json:"server_output_text,omitempty"`
}

// Counts are float64: iperf 3.12's cJSON prints -1 as 18446744073709551615,
// which no Go integer type decodes; count() makes them integers.
type resultsStream struct {
	ID          int     `json:"id"`
	Bytes       float64 `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      float64 `json:"errors"`
	Packets     float64 `json:"packets"`
	StartTime   float64 `json:"start_time"`
	EndTime     float64 `json:"end_time"`
}

// streamID is the id iperf3 gives the i-th stream (0-based): 1 for the
// first, then 3, 4, 5... (iperf_add_stream counts from 2 for the second
// and its authors keep it for compatibility). The server matches the
// client's results to its streams by these ids (IESTREAMID otherwise).
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// decodeResults parses and checks the server's results document: the
// fields iperf3's own client requires, per stream ids it knows, numbers
// that are not negative where a count is meant.
func decodeResults(body []byte) (*resultsDoc, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	for _, k := range []string{"cpu_util_total", "cpu_util_user", "cpu_util_system", "sender_has_retransmits", "streams"} {
		if _, ok := raw[k]; !ok {
			return nil, fmt.Errorf("no %q", k)
		}
	}
	var d resultsDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, err
	}
	if len(d.Streams) > maxStreams {
		return nil, fmt.Errorf("%d streams (at most %d)", len(d.Streams), maxStreams)
	}
	seen := map[int]bool{}
	for _, s := range d.Streams {
		if count(&s.Bytes) < 0 {
			return nil, fmt.Errorf("stream %d: bytes %v is not a count", s.ID, s.Bytes)
		}
		if seen[s.ID] {
			return nil, fmt.Errorf("stream id %d twice", s.ID)
		}
		seen[s.ID] = true
	}
	return &d, nil
}

// maxStreams is iperf3's MAX_STREAMS: its client refuses more, so a server
// has never been asked for more, and a results document listing more is
// not one a server wrote.
const maxStreams = 128
