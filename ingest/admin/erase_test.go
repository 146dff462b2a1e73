package admin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
)

func TestEraseByEventObjectAndPathKeepsTheKeyAndIsAudited(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	write := func(id, object, customer string) {
		t.Helper()
		now := time.Now()
		payload := `{"id":"` + id + `","data":{"object":{"id":"` + object + `","customer":"` + customer + `","email":"a@example.com"}}}`
		if out := writeOne(t, w, inbox.Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(payload),
			SecretID: "s", AggregateID: object, Topic: "topic"}); !out.New {
			t.Fatalf("%s not new", id)
		}
	}
	write("e1", "pi_1", "cus_1")
	write("e2", "pi_2", "cus_1")
	write("e3", "pi_2", "cus_2")
	write("e4", "pi_3", "cus_3")
	mustExec(t, base, `INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id)
VALUES ('p', 'pi_2', 'payment_intent', 1, '{"email":"a@example.com"}', 'e3')`)
	erased := func(id string) bool {
		return count(t, base, `SELECT count(*) FROM inbox WHERE event_id = $1 AND payload @> '{"erased": true}'`, id) == 1
	}

	res, err := Erase(ctx, base, Erasure{Provider: "p", EventID: "e4", RequestedBy: "op"})
	if err != nil || res.Events != 1 || res.OutboxRows != 1 || !erased("e4") || erased("e1") {
		t.Fatalf("erase by event: %+v, %v", res, err)
	}
	res, err = Erase(ctx, base, Erasure{Provider: "p", ObjectID: "pi_2", ObjectPaths: []string{"data.object.id"}, RequestedBy: "op", Reason: "GDPR art. 17"})
	if err != nil || res.Events != 2 || res.Objects != 1 || !erased("e2") || !erased("e3") || erased("e1") {
		t.Fatalf("erase by object: %+v, %v", res, err)
	}
	res, err = Erase(ctx, base, Erasure{Provider: "p", Path: "data.object.customer", Value: "cus_1", RequestedBy: "op"})
	if err != nil || res.Events != 1 || !erased("e1") { // e2 (cus_1) was already erased
		t.Fatalf("erase by path: %+v, %v", res, err)
	}
	if n := count(t, base, `SELECT count(*) FROM inbox WHERE payload::text LIKE '%example.com%'`); n != 0 {
		t.Fatalf("%d inbox payloads still hold the e-mail address", n)
	}
	if n := count(t, base, `SELECT count(*) FROM outbox WHERE payload::text LIKE '%example.com%'`); n != 0 {
		t.Fatalf("%d outbox payloads still hold the e-mail address", n)
	}
	if n := count(t, base, `SELECT count(*) FROM provider_objects`); n != 0 {
		t.Fatalf("the erased object's projection is still there")
	}
	// The audit: who, what, how many, in order.
	rows, err := base.Query(ctx, `SELECT requested_by, selector, reason, events FROM erasures ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var by, sel, reason string
		var n int
		if err := rows.Scan(&by, &sel, &reason, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{by, sel, reason, string(rune('0' + n))}, "|"))
	}
	// The object id and the path's value are not kept (no audit key here:
	// not even a digest; TestEraseAuditKeepsADigestNotTheValue).
	want := "op|event e4||1;op|object " + withheld + "|GDPR art. 17|2;op|path data.object.customer = " + withheld + "||1"
	if strings.Join(got, ";") != want {
		t.Fatalf("audit rows %q, want %q", strings.Join(got, ";"), want)
	}
	// The key is kept: a redelivery of an erased event is still a duplicate.
	if out := writeOne(t, w, rec("e1", 0)); out.New {
		t.Fatal("redelivery of an erased event recorded as new")
	}
}

func TestEraseRefusesAnUnclearSelector(t *testing.T) {
	base, _ := newTestWriter(t, 0)
	for _, e := range []Erasure{
		{Provider: "p", RequestedBy: "op"},
		{Provider: "p", EventID: "e", ObjectID: "o", ObjectPaths: []string{"id"}, RequestedBy: "op"},
		{Provider: "p", Path: "data.customer", RequestedBy: "op"},
		{Provider: "p", Path: "data..customer", Value: "x", RequestedBy: "op"},
		{Provider: "p", ObjectID: "o", RequestedBy: "op"},
		{EventID: "e", RequestedBy: "op"},
		{Provider: "p", EventID: "e"},
	} {
		if _, err := Erase(context.Background(), base, e); !errors.Is(err, ErrBadErasure) {
			t.Errorf("%+v: err = %v, want ErrBadErasure", e, err)
		}
	}
	if n := count(t, base, `SELECT count(*) FROM erasures`); n != 0 {
		t.Fatalf("refused requests audited: %d rows", n)
	}
}
