// Package docschema keeps the JSON Schema of every versioned document
// (docs/schema/*.json) generated from the producers' Go types: its test
// writes them with -update (make schemas) and fails when a checked-in
// schema drifts from its type, then validates real documents of each
// kind against them. It has no code of its own beyond the test.
package docschema
