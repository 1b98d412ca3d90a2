package tcpflow

// Schema names analyze's document.
const Schema = "longhaul.analyze/v1"

// Doc is analyze's document (`analyze --json`, longhaul.analyze/v1): the
// capture's file name beside its analysis. analyze writes it; report
// and the lab read it.
type Doc struct {
	Schema string `json:"schema"`
	File   string `json:"file"`
	*Analysis
}
