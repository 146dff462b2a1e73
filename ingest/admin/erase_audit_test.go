package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
)

// TestEraseAuditKeepsADigestNotTheValue: the audit row of an erasure by
// path (or by object) keeps a keyed digest of the value, never the value;
// without a key it keeps neither. The result and the audit row count what
// was removed in each table.
func TestEraseAuditKeepsADigestNotTheValue(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	const email = "ann.erased@example.com"
	for _, id := range []string{"e1", "e2"} {
		now := time.Now()
		payload := `{"id":"` + id + `","data":{"object":{"id":"cus_9","email":"` + email + `"}}}`
		if out := writeOne(t, w, inbox.Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(payload),
			SecretID: "s", AggregateID: "cus_9", Topic: "topic"}); !out.New {
			t.Fatalf("%s not new", id)
		}
	}
	key := NewAuditKey("k1", []byte("0123456789abcdef0123456789abcdef"))
	res, err := Erase(ctx, base, Erasure{Provider: "p", Path: "data.object.email", Value: email, RequestedBy: "op", AuditKey: key})
	if err != nil || res.Events != 2 || res.OutboxRows != 2 {
		t.Fatalf("erase by path: %+v, %v", res, err)
	}
	digest := key.Digest(email)
	if !strings.HasPrefix(digest, "hmac-sha256:k1:") || len(digest) != len("hmac-sha256:k1:")+64 {
		t.Fatalf("digest %q", digest)
	}
	if want := "path data.object.email = " + digest; res.Selector != want {
		t.Errorf("selector %q, want %q", res.Selector, want)
	}
	if NewAuditKey("k2", []byte("another key, another digest.....")).Digest(email) == digest {
		t.Error("the digest does not depend on the key")
	}
	res2, err := Erase(ctx, base, Erasure{Provider: "p", ObjectID: "cus_9", ObjectPaths: []string{"data.object.id"}, RequestedBy: "op"})
	if err != nil || res2.Selector != "object "+withheld {
		t.Fatalf("erase by object without a key: %+v, %v", res2, err)
	}
	var sel string
	var events, outbox, objects int
	if err := base.QueryRow(ctx, `SELECT selector, events, outbox_rows, objects FROM erasures WHERE id = $1`, res.ID).
		Scan(&sel, &events, &outbox, &objects); err != nil {
		t.Fatal(err)
	}
	if sel != res.Selector || events != 2 || outbox != 2 || objects != 0 {
		t.Errorf("audit row %q %d %d %d, want %q 2 2 0", sel, events, outbox, objects, res.Selector)
	}
	// The outbox rows it reached are listed for the relay (replication
	// mode publishes the WAL image of their insert).
	if n := count(t, base, `SELECT count(*) FROM outbox_erasures e JOIN outbox o ON o.id = e.outbox_id
WHERE e.provider = 'p' AND e.event_id IN ('e1', 'e2') AND e.erasure_id = $1 AND o.payload @> '{"erased": true}'`, res.ID); n != 2 {
		t.Errorf("%d outbox rows listed in outbox_erasures, want 2", n)
	}
	if n := count(t, base, `SELECT count(*) FROM erasures WHERE row_to_json(erasures)::text LIKE '%ann.erased%' OR row_to_json(erasures)::text LIKE '%cus_9%'`); n != 0 {
		t.Errorf("%d audit rows hold the erased value", n)
	}
}
