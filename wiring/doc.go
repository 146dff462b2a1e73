// Package wiring builds each stage's own Config from gatehouse's
// configuration (internal/config): the one place that knows both. The
// stages (ingest, ingest/relay, consumers, auth) and the API never import
// internal/config; cmd/gatehouse, the benchmarks and the stages' own tests
// of a YAML configuration call these functions instead. Nothing here holds
// state or applies a default: the defaults live in internal/config's
// schema, and each function only copies what a stage reads.
package wiring
