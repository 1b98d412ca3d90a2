package flows

import "time"

// Schema names flows' document.
const Schema = "longhaul.flows/v1"

// Doc is one interval's document (`flows --json`, longhaul.flows/v1; one
// a line with --watch): the flows judged over the interval between two
// dumps. flows writes it; the lab reads it.
type Doc struct {
	Schema   string    `json:"schema"`
	Time     time.Time `json:"time"`
	Netns    string    `json:"netns"`
	Interval float64   `json:"interval_s"`
	Sockets  int       `json:"sockets"`
	Flows    []Flow    `json:"flows"`
}
