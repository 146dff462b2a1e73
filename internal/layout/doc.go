// Package layout holds the repository's rules as tests: the import rules
// (layout_test.go: the stages — ingest with its relay, consumers, auth —
// import none of each other; internal/* and schemas/* import no stage;
// nothing imports cmd; no stage depends on internal/config), the
// documentation's (links_test.go: every relative link of every Markdown
// file resolves inside the repository, and docs/ARCHITECTURE.md's layout
// lists every package; docrefs_test.go: every document and heading a Go
// comment or string names exists; docnames_test.go: every Go name the
// documentation cites is declared in the module), and the benchmarks'
// (benchsql_test.go: a benchmark calls the schema's functions with the
// argument counts production uses). It has no code of its own.
package layout
