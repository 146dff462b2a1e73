package envelope

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/schemas"
)

// TestSourcePathIsLookupPath: a source's path lookups, the root's members
// remembered between them, read what schemas.LookupPath reads, in any
// order, repeated names, arrays, missing members and non-object roots
// included.
func TestSourcePathIsLookupPath(t *testing.T) {
	docs := []string{
		`{"event-data":{"id":"mg1","event":"delivered","timestamp":1700000000.5,"message":{"headers":{"message-id":"m@x"}}},"signature":{"token":"t"}}`,
		`{"a":1,"a":{"b":"last wins"},"n":-2.5e3,"s":"","t":true,"z":null,"arr":[{"id":"x"},{"id":7}]}`,
		`[{"id":"first"},{"id":"second"}]`,
		`"just a string"`,
		`{}`,
	}
	paths := []string{"event-data.id", "event-data.event", "event-data.timestamp", "event-data.message.headers.message-id",
		"signature.token", "signature", "event-data", "missing", "missing.id", "a", "a.b", "n", "s", "t", "z", "arr.1.id", "arr.0.id",
		"arr.2.id", "0.id", "1.id", "", "."}
	for _, doc := range docs {
		src := &source{root: gjson.Parse(doc)}
		for round := range 2 { // the second round reads remembered members
			for _, p := range paths {
				want, _ := schemas.LookupPath(gjson.Parse(doc), p)
				if got := src.path(p); got != want {
					t.Errorf("round %d: %s in %s = %q, LookupPath %q", round, p, doc, got, want)
				}
			}
		}
	}
}
