package relay

import (
	"fmt"
	"strconv"

	"github.com/jackc/pglogrepl"
)

// relation maps the outbox columns of a relation message to tuple indexes.
type relation struct {
	outbox bool
	idx    map[string]int
}

func newRelation(m *pglogrepl.RelationMessage) *relation {
	rel := &relation{outbox: m.RelationName == "outbox", idx: map[string]int{}}
	for i, c := range m.Columns {
		rel.idx[c.Name] = i
	}
	return rel
}

// decode turns an outbox insert tuple into a Row; inserts into other tables
// yield nil.
func (s *streamer) decode(relID uint32, tuple *pglogrepl.TupleData) (*Row, error) {
	rel, ok := s.rels[relID]
	if !ok {
		return nil, fmt.Errorf("insert for unknown relation %d", relID)
	}
	if !rel.outbox || tuple == nil {
		return nil, nil
	}
	col := func(name string) []byte {
		i, ok := rel.idx[name]
		if !ok || i >= len(tuple.Columns) || tuple.Columns[i].DataType != pglogrepl.TupleDataTypeText {
			return nil
		}
		return tuple.Columns[i].Data
	}
	row := &Row{
		ID: string(col("id")), AggregateType: string(col("aggregatetype")), AggregateID: string(col("aggregateid")),
		Type: string(col("type")), Payload: col("payload"), EventID: string(col("event_id")), Topic: string(col("topic")),
		CreatedAt: pgTimestamp(string(col("created_at"))), EventTime: string(col("event_time")),
		Traceparent: string(col("traceparent")),
	}
	row.Seq, _ = strconv.ParseInt(string(col("seq")), 10, 64)
	if row.ID == "" || row.Topic == "" {
		return nil, fmt.Errorf("outbox insert without id or topic (relation %d)", relID)
	}
	return row, nil
}
