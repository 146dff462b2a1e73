// Package wiring builds the stage configs that are not a section handed
// over unchanged: a provider's entry, which feeds several stages (the
// receiver, ingest's maintenance, replay and erasure, the API, the
// consumers' fetch and forwards, reconciliation). Every section (ingest,
// relay, kafka, consumers, storage, api, auth, tracing) is declared once
// in internal/settings, with its default, validation and secret
// resolution, and passed straight from the configuration: a stage takes
// it unchanged (relay.Settings, relay.Kafka, the embedded sections of
// ingest.Config, consumers.Config, api.Config and
// upkeep.MaintenanceConfig) or builds its runtime form from it itself
// (auth.SettingsOf, bearer.ConfigOf). The stages (ingest, ingest/relay,
// consumers, auth) and the API never import internal/config;
// cmd/gatehouse, the benchmarks and the stages' own tests of a YAML
// configuration call these functions instead. Nothing here holds state
// or applies a default, and each function only copies what a stage reads
// of a provider. (cmd/gatehouse's consumersConfig assembles the
// consumers' Config from the kafka, consumers and storage sections and
// these parts: package consumers' tests import wiring, so wiring cannot
// import consumers.)
package wiring
