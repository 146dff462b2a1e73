package providers

import (
	"os"
	"strings"
	"testing"
)

// Every scheme says how it is reconciled, or why it cannot be.
func TestEverySchemeDeclaresReconciliation(t *testing.T) {
	for _, name := range Names() {
		k, _ := Lookup(name)
		r := k.Reconcile
		switch r.Way {
		case ReconcileBackfill:
			if r.List == "" || r.Source == "" || r.Reason != "" || r.Events == nil || r.Events.Validate(name) != nil {
				t.Errorf("%s: backfill needs List and Source, no Reason: %+v", name, r)
			}
		case ReconcileRedeliver:
			if r.List == "" || r.Redeliver == "" || r.Source == "" || r.Reason != "" {
				t.Errorf("%s: redeliver needs List, Redeliver and Source: %+v", name, r)
			}
		case "":
			if r.Reason == "" {
				t.Errorf("%s: neither a way nor a reason", name)
			}
		default:
			t.Errorf("%s: unknown way %q", name, r.Way)
		}
	}
	for name := range reconciles {
		if _, ok := Lookup(name); !ok {
			t.Errorf("reconciles names %q, not in the catalogue", name)
		}
	}
	if k, _ := Lookup("stripe"); k.Reconcile.Way != ReconcileBackfill {
		t.Error("stripe is reconciled by backfill")
	}
	if k, _ := Lookup("github"); k.Reconcile.Way != ReconcileRedeliver {
		t.Error("github is reconciled by redelivery")
	}
}

// docs/PROVIDERS.md's table says what the catalogue says.
func TestProvidersDocListsReconciliation(t *testing.T) {
	doc, err := os.ReadFile("../../docs/PROVIDERS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		k, _ := Lookup(name)
		row := "| `" + name + "` | " + k.Reconcile.Describe() + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/PROVIDERS.md lacks the row %s", row)
		}
	}
}
