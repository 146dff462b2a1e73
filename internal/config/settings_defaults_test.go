package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// TestSchemaDefaultsAreTheStagesDefaults: a default is written once. The
// defaults the generated reference and JSON Schema print (Keys, from
// Parse) are the ones each stage applies when it is built without a file
// (ingest.New, relay.New, consumers.New, tracing.Setup and api.New call
// the same ApplyDefaults, relay.New the kafka section's too, ingest's
// maintenance the storage section's; auth/bearer's New applies the api
// section's constants, and auth takes the auth section's through
// auth.SettingsOf): for each section, every key's
// printed default equals the zero section after ApplyDefaults, and no key
// of the section has a default of its own elsewhere (a default note).
func TestSchemaDefaultsAreTheStagesDefaults(t *testing.T) {
	// Each section as its stage applies its defaults, from its zero value.
	sections := map[string]interface{ ApplyDefaults() }{
		"ingest": &settings.Ingest{}, "relay": &settings.Relay{}, "consumers": &settings.Consumers{}, "tracing": &settings.Tracing{},
		"api": &settings.API{}, "kafka": &settings.Kafka{}, "storage": &settings.Storage{}, "auth": &settings.Auth{},
	}

	// Defaults that depend on other sections, applied by internal/config
	// across them (applyAdmissionDefaults: a provider's part of the
	// unverified bytes depends on how many providers are configured); a
	// stage built without a file gives no provider a part of its own.
	acrossSections := map[string]bool{"ingest.reserved_unverified_bytes": true}

	keys := map[string]Key{}
	for _, k := range Keys() {
		keys[k.Path] = k
	}
	checked := 0
	for name, sec := range sections {
		sec.ApplyDefaults()
		v := reflect.ValueOf(sec).Elem()
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() { // a resolved secret, set by ResolveSecrets
				continue
			}
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			k, ok := keys[name+"."+y]
			if !ok {
				t.Errorf("%s.%s: not a key of the schema", name, y)
				continue
			}
			if k.DefaultNote != "" && !v.Field(i).IsZero() {
				t.Errorf("%s: the schema notes %q, the stage applies %v", k.Path, k.DefaultNote, v.Field(i).Interface())
			}
			if k.DefaultNote != "" || acrossSections[k.Path] {
				continue
			}
			fv := v.Field(i)
			if fv.Kind() == reflect.Pointer && !fv.IsNil() { // a default that 0 cannot mean
				fv = fv.Elem()
			}
			want := defaultText(fv)
			if k.Default != want {
				t.Errorf("%s: the schema prints default %q, the stage applies %q", k.Path, k.Default, want)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Fatalf("only %d keys compared", checked)
	}
}
