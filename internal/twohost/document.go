package twohost

import "github.com/longhaul/longhaul/internal/twohost/testdoc"

// The test's documents are package testdoc's types, which every reader
// imports; these names let twohost's code (and probe, which reads a
// test's Doc) say them as before.
type (
	Doc        = testdoc.Doc
	Direction  = testdoc.Direction
	Phase      = testdoc.Phase
	Capacity   = testdoc.Capacity
	Limit      = testdoc.Limit
	Model      = testdoc.Model
	RTT        = testdoc.RTT
	Hosts      = testdoc.Hosts
	Plans      = testdoc.Plans
	CCPhase    = testdoc.CCPhase
	PacedPhase = testdoc.PacedPhase
	UDPPhase   = testdoc.UDPPhase
	Caps       = testdoc.Caps
	CPUUse     = testdoc.CPUUse
	URLDoc     = testdoc.URLDoc
	URLSample  = testdoc.URLSample
)

// The documents' names and values, as package testdoc has them.
const (
	Schema           = testdoc.Schema
	URLSchema        = testdoc.URLSchema
	HostClient       = testdoc.HostClient
	HostServer       = testdoc.HostServer
	HostPath         = testdoc.HostPath
	HostTest         = testdoc.HostTest
	HostServerOrPath = testdoc.HostServerOrPath
	URLDownload      = testdoc.URLDownload
	URLUpload        = testdoc.URLUpload
)
