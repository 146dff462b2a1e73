// Package settings declares the settings of gatehouse's stages, each in
// one place: the Go field with its yaml key and doc comment (which the
// configuration's generator reads for docs/CONFIG.md and the JSON
// Schema), its default (ApplyDefaults) and its validation (Validate).
//
// internal/config composes these sections into the configuration file,
// resolves secrets and validates across sections; each stage takes its
// section unchanged (relay.Settings, consumers.Config's embedded
// Consumers, tracing.Settings) and applies the same defaults when it is
// built without a file (tests, benchmarks). A default is written once,
// here. The package imports only the shared vocabulary (schemas/*), so
// every stage and internal/config may import it.
package settings

import "fmt"

// errorf is a validation error naming its key ("relay.mode: …").
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// setDefault sets *v to def when *v is its type's zero value.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
