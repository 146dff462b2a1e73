// Package layout holds the tree's import rules as a test (layout_test.go):
// the stages (ingest with its relay, consumers, auth) import none of each
// other; internal/* and schemas/* import no stage; nothing imports cmd.
// It has no code of its own.
package layout
