package providers

import "testing"

func TestEverySchemeDocumentsItsRedeliveryWindow(t *testing.T) {
	for _, name := range Names() {
		k, _ := Lookup(name)
		if r := k.Redelivery; r.Text == "" || r.Source == "" {
			t.Errorf("scheme %q has no documented redelivery window with its source", name)
		}
	}
	for name := range redeliveries {
		if _, ok := Lookup(name); !ok {
			t.Errorf("redelivery window of %q, which is not a scheme", name)
		}
	}
}
