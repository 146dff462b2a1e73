package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// Helpers of TestTracingEndToEnd: reading the traces back from Jaeger.

// pipeline is one event's trace: its receiver, relay and first consumer span.
type pipeline struct {
	receiver, publish, consumer testenv.JaegerSpan
	spans                       []testenv.JaegerSpan
}

type traceView struct {
	t *testing.T
	j *testenv.Jaeger
}

func newTraceView(t *testing.T, j *testenv.Jaeger) *traceView { return &traceView{t, j} }

// pipeline finds the delivery span of event id and checks that its trace
// holds the three processes' spans in causal order: receiver (root) →
// relay publish → consumer process, each starting no earlier than its
// parent. Spans reach Jaeger within a few seconds of the processes' exit.
func (v *traceView) pipeline(id string) pipeline {
	v.t.Helper()
	var p pipeline
	deadline := time.Now().Add(30 * time.Second)
	for {
		traces, err := v.j.Traces("gatehouse-serve", 1000)
		if err != nil {
			v.t.Fatal(err)
		}
		for _, spans := range traces {
			for _, s := range spans {
				if s.OperationName == "POST /webhooks/demo" && s.Tag("gatehouse.event_id") == id {
					p.receiver, p.spans = s, spans
				}
			}
		}
		if p.receiver.SpanID != "" {
			pub := v.childNamed(p.spans, p.receiver, "")
			if pub != nil {
				if c := v.childNamed(p.spans, *pub, ""); c != nil {
					p.publish, p.consumer = *pub, *c
					break
				}
			}
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: no complete trace in Jaeger:\n%s", id, describe(p.spans))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(p.receiver.References) > 0 && hasRef(p.receiver, "CHILD_OF", "") {
		v.t.Errorf("%s: the delivery span has a parent", id)
	}
	for _, c := range []struct {
		s       testenv.JaegerSpan
		service string
		kind    string
	}{{p.receiver, "gatehouse-serve", "server"}, {p.publish, "gatehouse-relay", "producer"}, {p.consumer, "gatehouse-consume", "consumer"}} {
		if c.s.Service != c.service || c.s.Tag("span.kind") != c.kind {
			v.t.Errorf("%s: span %q is from %s (%s), want %s (%s)", id, c.s.OperationName, c.s.Service, c.s.Tag("span.kind"), c.service, c.kind)
		}
	}
	if p.publish.StartTime < p.receiver.StartTime || p.consumer.StartTime < p.publish.StartTime {
		v.t.Errorf("%s: spans out of causal order: %d %d %d", id, p.receiver.StartTime, p.publish.StartTime, p.consumer.StartTime)
	}
	if p.consumer.Tag("messaging.system") != "kafka" || p.consumer.Tag("messaging.consumer.group.name") == "" ||
		p.consumer.Tag("messaging.kafka.offset") == "" || p.publish.Tag("messaging.destination.partition.id") == "" {
		v.t.Errorf("%s: messaging attributes missing: %+v / %+v", id, p.publish.Tags, p.consumer.Tags)
	}
	return p
}

// settle waits until Jaeger holds as many spans one second later as now:
// the processes' last spans reach it in their final export at exit, and
// Jaeger stores what it receives after a short batching delay.
func (v *traceView) settle() {
	v.t.Helper()
	count := func() int {
		n := 0
		for _, svc := range []string{"gatehouse-serve", "gatehouse-relay", "gatehouse-consume", "gatehouse-replay"} {
			traces, err := v.j.Traces(svc, 1000)
			if err != nil {
				v.t.Fatal(err)
			}
			for _, spans := range traces {
				n += len(spans)
			}
		}
		return n
	}
	last := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		n := count()
		if n == last && n > 0 {
			return
		}
		last = n
	}
	v.t.Fatal("the span count in Jaeger did not settle within 30 s")
}

// childNamed returns a span of spans whose parent is parent, named op
// (any name when op is "").
func (v *traceView) childNamed(spans []testenv.JaegerSpan, parent testenv.JaegerSpan, op string) *testenv.JaegerSpan {
	for i, s := range spans {
		if (op == "" || s.OperationName == op) && s.SpanID != parent.SpanID {
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" && r.SpanID == parent.SpanID {
					return &spans[i]
				}
			}
		}
	}
	return nil
}

// linksTo reports a FOLLOWS_FROM reference of s to a span named op.
func (v *traceView) linksTo(s testenv.JaegerSpan, op string) bool {
	for _, r := range s.References {
		if r.RefType != "FOLLOWS_FROM" {
			continue
		}
		spans, err := v.j.Trace(r.TraceID)
		if err != nil {
			v.t.Fatal(err)
		}
		for _, o := range spans {
			if o.SpanID == r.SpanID && o.OperationName == op {
				return true
			}
		}
	}
	return false
}

func hasRef(s testenv.JaegerSpan, typ, traceID string) bool {
	for _, r := range s.References {
		if r.RefType == typ && (traceID == "" || r.TraceID == traceID) {
			return true
		}
	}
	return false
}

func countOps(spans []testenv.JaegerSpan, op string) int {
	n := 0
	for _, s := range spans {
		if s.OperationName == op {
			n++
		}
	}
	return n
}

func describe(spans []testenv.JaegerSpan) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %s %q refs=%v\n", s.Service, s.SpanID, s.OperationName, s.References)
	}
	return b.String()
}

// logHasTrace reports a JSON log line about event id carrying trace_id.
func logHasTrace(logs, id, traceID string) bool {
	for _, l := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["event_id"] == id && rec["trace_id"] == traceID && rec["span_id"] != nil {
			return true
		}
	}
	return false
}
