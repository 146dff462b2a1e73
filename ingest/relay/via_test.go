package relay

import (
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/gatehouse/gatehouse/schemas"
)

// outbox.via (migration 00007, after txid) is read from the WAL and
// published as the CloudEvents extension attribute ce_gatehousevia; a
// relation without the column (an older database) publishes none.
func TestViaPublishedAsCloudEventsExtension(t *testing.T) {
	rel := outboxRelation()
	rel.Columns = append(rel.Columns, &pglogrepl.RelationMessageColumn{Name: "via"})
	s := &streamer{rels: map[uint32]*relation{rel.RelationID: newRelation(rel)}}
	cols := []*pglogrepl.TupleDataColumn{text("0b7c3f0e-1111-4222-8333-944445555666"), text("stripe"), text("pay_1"),
		text("payment.succeeded"), text(`{"id":"evt_1"}`), text("evt_1"), text("gatehouse.webhooks.stripe"),
		text("2026-11-25 18:27:44.123456+00"), text("42"), null, null, text("771"), text("reconcile")}
	_, relID, tuple, err := parseInsert(insertMsg(1, false, rel.RelationID, cols), false)
	if err != nil {
		t.Fatal(err)
	}
	row, err := s.decode(relID, tuple)
	if err != nil {
		t.Fatal(err)
	}
	if row.Via != schemas.ViaReconcile {
		t.Fatalf("via = %q, want reconcile", row.Via)
	}
	if h := schemas.Headers(row.Record("")); h[schemas.HeaderVia] != "reconcile" {
		t.Fatalf("headers %v: want ce_gatehousevia reconcile", h)
	}
	dec, err := schemas.Decode(row.Record(""))
	if err != nil || dec.Via != schemas.ViaReconcile {
		t.Fatalf("decoded via %q, %v", dec.Via, err)
	}
	row.Via = ""
	if _, ok := schemas.Headers(row.Record(""))[schemas.HeaderVia]; ok {
		t.Fatal("a row without via published ce_gatehousevia")
	}
}
