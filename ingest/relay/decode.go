package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pglogrepl"
)

// The outbox columns the relay reads, by position in relation.field.
const (
	colID = iota
	colAggregateType
	colAggregateID
	colType
	colPayload
	colEventID
	colTopic
	colCreatedAt
	colEventTime
	colTraceparent
	colSeq
	colVia
	numCols
)

var colNames = [numCols]string{"id", "aggregatetype", "aggregateid", "type", "payload", "event_id", "topic",
	"created_at", "event_time", "traceparent", "seq", "via"}

// relation maps the tuple columns of a relation message to the outbox
// columns the relay reads.
type relation struct {
	outbox bool
	field  []int8 // per tuple column: its col* constant, or -1
}

func newRelation(m *pglogrepl.RelationMessage) *relation {
	rel := &relation{outbox: m.RelationName == "outbox", field: make([]int8, len(m.Columns))}
	for i, c := range m.Columns {
		rel.field[i] = -1
		for k, name := range colNames {
			if c.Name == name {
				rel.field[i] = int8(k)
			}
		}
	}
	return rel
}

var errShortInsert = errors.New("malformed pgoutput insert message")

// parseInsert reads the header of a pgoutput Insert message (data starts
// with 'I'): the (sub)transaction's xid when inside a streamed
// transaction, the relation id, and the new tuple's bytes. It allocates
// nothing: tuple aliases data.
func parseInsert(data []byte, inStream bool) (xid, relID uint32, tuple []byte, err error) {
	p := 1
	if inStream {
		if len(data) < p+4 {
			return 0, 0, nil, errShortInsert
		}
		xid = binary.BigEndian.Uint32(data[p:])
		p += 4
	}
	if len(data) < p+5 || data[p+4] != 'N' {
		return 0, 0, nil, errShortInsert
	}
	return xid, binary.BigEndian.Uint32(data[p:]), data[p+5:], nil
}

// decode turns an outbox insert tuple (pgoutput TupleData) into a Row;
// inserts into other tables yield nil. The tuple is copied once: every
// text column of the row is a substring of that copy (pglogrepl's decoder
// allocated and copied each column byte by byte).
func (s *streamer) decode(relID uint32, tuple []byte) (*Row, error) {
	rel, ok := s.rels[relID]
	if !ok {
		return nil, fmt.Errorf("insert for unknown relation %d", relID)
	}
	if !rel.outbox {
		return nil, nil
	}
	if len(tuple) < 2 {
		return nil, fmt.Errorf("relation %d: %w", relID, errShortInsert)
	}
	var at [numCols][2]int // offset and length in tuple; length -1: absent
	for i := range at {
		at[i][1] = -1
	}
	n, p := int(binary.BigEndian.Uint16(tuple)), 2
	for i := range n {
		if p >= len(tuple) {
			return nil, fmt.Errorf("relation %d: %w", relID, errShortInsert)
		}
		kind := tuple[p]
		p++
		switch kind {
		case pglogrepl.TupleDataTypeNull, pglogrepl.TupleDataTypeToast:
			continue
		case pglogrepl.TupleDataTypeText, pglogrepl.TupleDataTypeBinary:
		default:
			return nil, fmt.Errorf("relation %d: column %d of unknown kind %q: %w", relID, i, kind, errShortInsert)
		}
		if p+4 > len(tuple) {
			return nil, fmt.Errorf("relation %d: %w", relID, errShortInsert)
		}
		l := int(binary.BigEndian.Uint32(tuple[p:]))
		p += 4
		if l < 0 || p+l > len(tuple) {
			return nil, fmt.Errorf("relation %d: %w", relID, errShortInsert)
		}
		// Only text columns are read (the relay never asks for binary).
		if i < len(rel.field) && rel.field[i] >= 0 && kind == pglogrepl.TupleDataTypeText {
			at[rel.field[i]] = [2]int{p, l}
		}
		p += l
	}
	blob := string(tuple)
	col := func(c int) string {
		if at[c][1] < 0 {
			return ""
		}
		return blob[at[c][0] : at[c][0]+at[c][1]]
	}
	row := &Row{
		ID: col(colID), AggregateType: col(colAggregateType), AggregateID: col(colAggregateID),
		Type: col(colType), EventID: col(colEventID), Topic: col(colTopic),
		CreatedAt: pgTimestamp(col(colCreatedAt)), EventTime: col(colEventTime), Traceparent: col(colTraceparent),
		Via: col(colVia),
	}
	if at[colPayload][1] >= 0 {
		row.Payload = []byte(col(colPayload))
	}
	row.Seq, _ = strconv.ParseInt(col(colSeq), 10, 64)
	if row.ID == "" || row.Topic == "" {
		return nil, fmt.Errorf("outbox insert without id or topic (relation %d)", relID)
	}
	return row, nil
}
