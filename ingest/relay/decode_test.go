package relay

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// insertMsg builds a pgoutput Insert message the way PostgreSQL writes it:
// 'I', the xid inside a streamed transaction, the relation id, 'N', the
// column count and each column (kind, then length and bytes for text).
func insertMsg(xid uint32, inStream bool, relID uint32, cols []*pglogrepl.TupleDataColumn) []byte {
	b := []byte{'I'}
	if inStream {
		b = binary.BigEndian.AppendUint32(b, xid)
	}
	b = binary.BigEndian.AppendUint32(b, relID)
	b = append(b, 'N')
	b = binary.BigEndian.AppendUint16(b, uint16(len(cols)))
	for _, c := range cols {
		b = append(b, c.DataType)
		if c.DataType == pglogrepl.TupleDataTypeText || c.DataType == pglogrepl.TupleDataTypeBinary {
			b = binary.BigEndian.AppendUint32(b, uint32(len(c.Data)))
			b = append(b, c.Data...)
		}
	}
	return b
}

func text(s string) *pglogrepl.TupleDataColumn {
	return &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeText, Data: []byte(s)}
}

var null = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeNull}

func outboxRelation() *pglogrepl.RelationMessage {
	rel := &pglogrepl.RelationMessage{RelationID: 16400, RelationName: "outbox"}
	// Migration 00050's columns, in its order.
	for _, n := range []string{"id", "aggregatetype", "aggregateid", "type", "payload", "event_id", "topic",
		"created_at", "seq", "event_time", "traceparent", "txid"} {
		rel.Columns = append(rel.Columns, &pglogrepl.RelationMessageColumn{Name: n})
	}
	return rel
}

// TestDecodeInsert checks the relay's own Insert decoding against
// pglogrepl's: the same Row for the same message, in and out of a
// streamed transaction, with NULL columns, and a clear error for a
// truncated message.
func TestDecodeInsert(t *testing.T) {
	rel := outboxRelation()
	s := &streamer{rels: map[uint32]*relation{rel.RelationID: newRelation(rel)}}
	full := []*pglogrepl.TupleDataColumn{text("0b7c3f0e-1111-4222-8333-944445555666"), text("stripe"), text("pay_1"),
		text("payment.succeeded"), text(`{"id":"evt_1","data":{}}`), text("evt_1"), text("gatehouse.webhooks.stripe"),
		text("2026-11-25 18:27:44.123456+00"), text("42"), text("2026-01-01T00:00:00Z"),
		text("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), text("771")}
	want := &Row{ID: "0b7c3f0e-1111-4222-8333-944445555666", AggregateType: "stripe", AggregateID: "pay_1",
		Type: "payment.succeeded", Payload: []byte(`{"id":"evt_1","data":{}}`), EventID: "evt_1",
		Topic: "gatehouse.webhooks.stripe", CreatedAt: time.Date(2026, 11, 25, 18, 27, 44, 123456000, time.UTC),
		EventTime: "2026-01-01T00:00:00Z", Seq: 42, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	nulls := append([]*pglogrepl.TupleDataColumn{}, full...)
	nulls[9], nulls[10] = null, null
	wantNulls := *want
	wantNulls.EventTime, wantNulls.Traceparent = "", ""
	for _, tc := range []struct {
		name     string
		inStream bool
		cols     []*pglogrepl.TupleDataColumn
		want     *Row
	}{
		{"committed", false, full, want},
		{"streamed", true, full, want},
		{"nulls", false, nulls, &wantNulls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := insertMsg(777, tc.inStream, rel.RelationID, tc.cols)
			xid, relID, tuple, err := parseInsert(msg, tc.inStream)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.decode(relID, tuple)
			if err != nil {
				t.Fatal(err)
			}
			if !got.CreatedAt.Equal(tc.want.CreatedAt) {
				t.Fatalf("created_at %v, want %v", got.CreatedAt, tc.want.CreatedAt)
			}
			got.CreatedAt = tc.want.CreatedAt
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("row\n got %+v\nwant %+v", got, tc.want)
			}
			// pglogrepl reads the same message the same way.
			pm, err := pglogrepl.ParseV2(msg, tc.inStream)
			if err != nil {
				t.Fatal(err)
			}
			ins := pm.(*pglogrepl.InsertMessageV2)
			if ins.RelationID != relID || (tc.inStream && ins.Xid != xid) {
				t.Fatalf("relation %d xid %d, pglogrepl: %d %d", relID, xid, ins.RelationID, ins.Xid)
			}
			for i, c := range ins.Tuple.Columns {
				if string(c.Data) != string(tc.cols[i].Data) || c.DataType != tc.cols[i].DataType {
					t.Fatalf("column %d differs from pglogrepl's", i)
				}
			}
			// Every truncation is an error, never a panic or a short row.
			for n := 1; n < len(msg); n++ {
				_, relID, tuple, err := parseInsert(msg[:n], tc.inStream)
				if err == nil {
					_, err = s.decode(relID, tuple)
				}
				if !errors.Is(err, errShortInsert) {
					t.Fatalf("truncated to %d of %d bytes: err %v", n, len(msg), err)
				}
			}
		})
	}
	// Other tables' inserts are skipped; an unknown relation is an error.
	other := &pglogrepl.RelationMessage{RelationID: 9, RelationName: "inbox",
		Columns: []*pglogrepl.RelationMessageColumn{{Name: "id"}}}
	s.rels[9] = newRelation(other)
	if row, err := s.decode(9, insertMsg(0, false, 9, []*pglogrepl.TupleDataColumn{text("x")})[6:]); row != nil || err != nil {
		t.Fatalf("insert into inbox: %v %v", row, err)
	}
	if _, err := s.decode(10, nil); err == nil {
		t.Fatal("unknown relation: no error")
	}
}

// BenchmarkDecodeInsert measures the reader goroutine's decoding of one
// outbox insert (go test -bench DecodeInsert -benchmem ./ingest/relay/).
func BenchmarkDecodeInsert(b *testing.B) {
	rel := outboxRelation()
	s := &streamer{rels: map[uint32]*relation{rel.RelationID: newRelation(rel)}}
	payload := `{"id":"evt_0b7c3f0e-1111-4222","type":"payment.succeeded","created_at":"2026-11-25T18:27:44Z","data":{"payment_id":"pay_00042","amount":4200,"currency":"eur","customer":"cus_00042","description":"benchmark event with a realistic envelope size"}}`
	msg := insertMsg(0, false, rel.RelationID, []*pglogrepl.TupleDataColumn{text("0b7c3f0e-1111-4222-8333-944445555666"),
		text("bench"), text("pay_00042"), text("payment.succeeded"), text(payload), text("evt_0b7c3f0e-1111-4222"),
		text("bench.topic"), text("2026-11-25 18:27:44.123456+00"), text("42"), text("2026-11-25T18:27:44Z"), null, text("771")})
	b.ReportAllocs()
	for b.Loop() {
		_, relID, tuple, err := parseInsert(msg, false)
		if err != nil {
			b.Fatal(err)
		}
		row, err := s.decode(relID, tuple)
		if err != nil {
			b.Fatal(err)
		}
		_ = row.Record("")
	}
}

// TestPGTimestampFastMatchesParse: the hand parser reads every
// timestamptz text PostgreSQL writes (any fraction length, offsets of
// hours, minutes and seconds, either sign) as time.Parse does, and leaves
// what it does not recognise to time.Parse.
func TestPGTimestampFastMatchesParse(t *testing.T) {
	layouts := []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"}
	ins := []string{"2026-11-25 18:27:44+00", "2026-11-25 18:27:44.1+00", "2026-11-25 18:27:44.123456+00",
		"2026-11-25 18:27:44.000001-03", "1999-12-31 23:59:59.5+05:30", "2000-01-01 00:00:00-09:30",
		"1883-11-18 12:03:58+00:03:58", "2024-02-29 12:00:00+14", "2026-11-25 18:27:44.123456789+00"}
	for _, in := range ins {
		fast, ok := pgTimestampFast(in)
		var want time.Time
		var err error
		for _, l := range layouts {
			if want, err = time.Parse(l, in); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("time.Parse(%q): %v", in, err)
		}
		if !ok || !fast.Equal(want) {
			t.Errorf("pgTimestampFast(%q) = %v %v, want %v", in, fast, ok, want)
		}
	}
	for _, in := range []string{"", "infinity", "-infinity", "2026-02-30 00:00:00+00", "2026-13-01 00:00:00+00",
		"2026-11-25T18:27:44+00", "2026-11-25 18:27:44 +00", "2026-11-25 18:27:44.+00", "2026-11-25 18:27:44+0",
		"2026-11-25 18:27:44+00:3", "12026-11-25 18:27:44+00", "2026-11-25 18:27:44.1234567890+00"} {
		if got, ok := pgTimestampFast(in); ok {
			t.Errorf("pgTimestampFast(%q) = %v, want it left to time.Parse", in, got)
		}
	}
}
