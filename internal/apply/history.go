// The transactions in the journal directory: the list rollback --list
// prints and the ones an interrupted apply left.

package apply

import (
	"time"
)

// interrupted returns the transactions a crash left half done; a damaged
// journal is an error: nobody can tell what it left behind.
func interrupted(st store) ([]*Journal, error) {
	ids, err := st.ids()
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, id := range ids {
		j, err := st.load(id)
		if err != nil {
			return nil, refuse("%v", err)
		}
		if j.State == StateApplying || j.State == StateRollingBack {
			out = append(out, j)
		}
	}
	return out, nil
}

// Summary lines for --list and start-up warnings.
type TxSummary struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	State   string    `json:"state"`
	Summary string    `json:"summary,omitempty"`
	Root    string    `json:"root,omitempty"`
	Netns   string    `json:"netns,omitempty"`
	Persist bool      `json:"persist"`
	Changes int       `json:"changes"`
	// Damaged says why the journal cannot be used; the rest is then empty.
	Damaged string `json:"damaged,omitempty"`
}

// Interrupted reports transactions a crash left half done, and damaged
// journals, so that every command can tell the user at start.
func Interrupted(o Options) ([]TxSummary, error) {
	all, err := List(o)
	if err != nil {
		return nil, err
	}
	// A transaction half done while another apply or rollback holds the
	// journal lock is in progress, not interrupted.
	od, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	running := store{od.StateDir}.busy()
	var out []TxSummary
	for _, t := range all {
		if t.Damaged != "" || (!running && (t.State == StateApplying || t.State == StateRollingBack)) {
			out = append(out, t)
		}
	}
	return out, nil
}

// List returns every transaction in the state directory, oldest first.
func List(o Options) ([]TxSummary, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	st := store{o.StateDir}
	ids, err := st.ids()
	if err != nil {
		return nil, err
	}
	var out []TxSummary
	for _, id := range ids {
		j, err := st.load(id)
		if err != nil {
			out = append(out, TxSummary{ID: id, Damaged: err.Error()})
			continue
		}
		out = append(out, TxSummary{ID: j.ID, Created: j.Created, State: j.State, Summary: j.Summary, Root: j.Root, Netns: j.Netns,
			Persist: j.Persist, Changes: len(j.Sysctls) + len(j.Routes) + len(j.Files)})
	}
	return out, nil
}
