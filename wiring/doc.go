// Package wiring builds the stage configs that are not a section handed
// over unchanged: a provider's entry, which feeds several stages (the
// receiver, the maintenance, the consumers' fetch and forwards), the
// Kafka client with its resolved secrets, the login's settings with
// theirs. Sections that a stage takes as they are (relay, consumers,
// tracing) are declared in internal/settings and passed straight from
// the configuration, with no copy here. The
// stages (ingest, ingest/relay, consumers, auth) and the API never import
// internal/config; cmd/gatehouse, the benchmarks and the stages' own tests
// of a YAML configuration call these functions instead. Nothing here holds
// state or applies a default: the defaults live in internal/config's
// schema, and each function only copies what a stage reads.
package wiring
