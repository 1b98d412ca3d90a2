package diagnose

// Causes lists every path cause diagnose may name, in the order its
// documents explain them: the vocabulary other packages (the lab's
// matrix, report) check their names against, so that a name spelled
// differently there fails a test instead of never matching.
func Causes() []string {
	return []string{CauseRandomLoss, CauseShallowBuffer, CauseBufferbloat, CausePolicer, CauseReordering,
		CausePMTUBlackHole, CauseWindowScaleStripped, CauseCPUBound, CauseSharedBottleneck}
}

// Flags lists every flag a verdict may carry.
func Flags() []string {
	return []string{FlagNoWindowScaling, FlagWindowScaleUnknown, FlagHardwareDups, FlagMSSClamped, FlagReordering,
		FlagBufferbloat, FlagMidStream, FlagSuperFrames, FlagCoarseClock, FlagClockSteps, FlagCaptureDrops,
		FlagRTOStall, FlagPeerUnresponsive, FlagRequestResponse, FlagWaitsOnPeer, FlagNoRTT, FlagPayloadOnly,
		FlagInconsistent}
}
