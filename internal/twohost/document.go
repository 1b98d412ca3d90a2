package twohost

import "github.com/longhaul/longhaul/internal/twohost/testdoc"

// Doc is testdoc.Doc, the test's document, for probe, which reads it as
// twohost's.
type Doc = testdoc.Doc
