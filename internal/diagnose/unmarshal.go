package diagnose

// UnmarshalText reads a state's name back (the points of a document's
// timeline): the readers of analyze's document decode its own types. A
// name this build does not know (a newer writer's) reads as NumStates,
// which prints as "invalid", not as an error that would refuse the
// whole document.
func (s *State) UnmarshalText(b []byte) error {
	*s = NumStates
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
		}
	}
	return nil
}

// UnmarshalText reads an event kind's name back, as State's: an unknown
// name reads as an invalid kind.
func (k *EventKind) UnmarshalText(b []byte) error {
	*k = numEvents
	for i, n := range eventNames {
		if n == string(b) {
			*k = EventKind(i)
		}
	}
	return nil
}
