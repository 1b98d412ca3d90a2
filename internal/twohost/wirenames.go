package twohost

import "github.com/longhaul/longhaul/internal/twohost/wire"

// The wire's names that probe and meshplan still say as twohost's.
type RemoteError = wire.RemoteError

// The wire's constants probe and meshplan read.
const (
	DefaultPort   = wire.DefaultPort
	MaxStreams    = wire.MaxStreams
	CodeBusy      = wire.CodeBusy
	PhaseDownload = wire.PhaseDownload
	PhaseUpload   = wire.PhaseUpload
	PhaseCapacity = wire.PhaseCapacity
)
