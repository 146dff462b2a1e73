package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// endOffsets is each partition's end offset of topic: where the records
// published from now on begin.
func endOffsets(t *testing.T, brokers []string, topic string) map[int32]kgo.Offset {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	if len(out) == 0 {
		t.Fatalf("topic %s has no partitions", topic)
	}
	return out
}

// outcomeRecords is the consumer's count of records of topic processed
// with outcome, read from its /metrics.
func outcomeRecords(t *testing.T, admin, topic, outcome string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "gatehouse_consumer_records_processed_total{") && strings.Contains(l, `outcome="`+outcome+`"`) &&
			strings.Contains(l, `topic="`+topic+`"`) {
			v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// rowsHolding counts the rows of table holding value: in the row read as
// text, or in a bytea column (a row's text shows those as hex).
func rowsHolding(t *testing.T, conn *pgx.Conn, table, value string) int {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT column_name FROM information_schema.columns
WHERE table_schema = 'public' AND table_name = $1 AND data_type = 'bytea'`, table)
	if err != nil {
		t.Fatal(err)
	}
	cond := `t::text LIKE '%' || $1 || '%'`
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			t.Fatal(err)
		}
		cond += fmt.Sprintf(` OR position(convert_to($1, 'UTF8') IN t.%s) > 0`, pgx.Identifier{col}.Sanitize())
	}
	rows.Close()
	return count(t, conn, fmt.Sprintf(`SELECT count(*) FROM %s t WHERE %s`, pgx.Identifier{table}.Sanitize(), cond), value)
}

// count runs a count query.
func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func atoiOr0(m []string) int64 {
	if len(m) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
