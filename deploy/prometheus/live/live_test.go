package live

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// TestLive: with webhooks arriving, stopping the relay makes the relay's
// backlog alert fire (its copy here fires at 3 s instead of 60 s, with no
// `for:`) and reach a person: Prometheus sends it to a real Alertmanager
// routed by the shipped deploy/alertmanager/alertmanager.yml, which pages
// through PagerDuty's Events API and posts to Slack's incoming webhook
// (local receivers standing in for both); starting the relay again clears
// it and both get the resolution; every shipped rule evaluates on the
// scraped data; every dashboard query parses and names exported metrics.
func TestLive(t *testing.T) {
	s := startStack(t, func(file, text string) string {
		if file != "relay.rules.yml" {
			return text
		}
		head, rest, ok := strings.Cut(text, "- alert: GatehouseRelayOutboxBacklog")
		if !ok {
			t.Fatal("relay.rules.yml has no GatehouseRelayOutboxBacklog")
		}
		block, after, _ := strings.Cut(rest, "- alert:")
		block = strings.Replace(block, "gatehouse_relay_outbox_oldest_unsent_age_seconds) > 60", "gatehouse_relay_outbox_oldest_unsent_age_seconds) > 3", 1)
		block = strings.Replace(block, "for: 5m", "for: 0s", 1)
		return head + "- alert: GatehouseRelayOutboxBacklog" + block + "- alert:" + after
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a provider sending ten events a second
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			s.send(fmt.Sprintf("evt_live_%05d", i), true)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	// A duplicate and a badly signed delivery, so their series exist.
	if c := s.send("evt_live_00000", true); c != 204 {
		t.Fatalf("duplicate delivery: %d", c)
	}
	if c := s.send("evt_live_bad", false); c != 400 {
		t.Fatalf("badly signed delivery: %d", c)
	}
	s.waitFor("events processed by the consumers", time.Minute, func() bool {
		v, err := s.query(`sum(gatehouse_consumer_records_processed_total)`)
		return err == nil && len(v) == 1 && v[0].Value[1] != "0"
	})
	if s.firing("GatehouseRelayOutboxBacklog") {
		t.Fatal("the relay backlog alert fires while the relay runs")
	}

	t.Run("relay backlog alert", func(t *testing.T) {
		s.relay.Stop()
		s.waitFor("GatehouseRelayOutboxBacklog firing with the relay stopped", 90*time.Second, func() bool {
			return s.firing("GatehouseRelayOutboxBacklog")
		})
		s.waitFor("the page reaching PagerDuty", time.Minute, func() bool {
			return s.am.pagerduty.got(`"routing_key":"`+s.am.routingKey+`"`, `"event_action":"trigger"`, "GatehouseRelayOutboxBacklog")
		})
		s.waitFor("the alert reaching Slack", time.Minute, func() bool {
			return s.am.slack.got("[FIRING] GatehouseRelayOutboxBacklog (page)", "#gatehouse-alerts", "docs/RUNBOOK.md#gatehouserelayoutboxbacklog")
		})
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if err := s.relay.Start(rctx); err != nil {
			t.Fatal(err)
		}
		s.waitFor("GatehouseRelayOutboxBacklog cleared with the relay back", 90*time.Second, func() bool {
			return !s.firing("GatehouseRelayOutboxBacklog")
		})
		s.waitFor("the resolution reaching PagerDuty and Slack", 2*time.Minute, func() bool {
			return s.am.pagerduty.got(`"event_action":"resolve"`) && s.am.slack.got("[RESOLVED] GatehouseRelayOutboxBacklog")
		})
	})

	t.Run("every rule evaluates", func(t *testing.T) {
		files, _ := filepath.Glob("../*.rules.yml")
		n := 0
		for _, f := range files {
			for _, r := range ruleExprs(t, f) {
				n++
				if _, err := s.query(r.expr); err != nil {
					t.Errorf("%s: %s: %v", filepath.Base(f), r.name, err)
				}
			}
		}
		if n < 20 {
			t.Fatalf("only %d rules found", n)
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		exported := map[string]bool{}
		for _, p := range []string{s.serve.Admin, s.relay.Admin, s.consum.Admin} {
			for name := range scrape(t, p) {
				exported[name] = true
			}
		}
		queries := dashboardQueries(t, "../../grafana/gatehouse.json")
		if len(queries) < 20 {
			t.Fatalf("only %d dashboard queries", len(queries))
		}
		for panel, expr := range queries {
			e, err := parser.ParseExpr(strings.ReplaceAll(expr, "$__rate_interval", "5m"))
			if err != nil {
				t.Errorf("panel %q: %q does not parse: %v", panel, expr, err)
				continue
			}
			for _, name := range metricNames(e) {
				if !exported[name] {
					t.Errorf("panel %q names %s, which no gatehouse process exports", panel, name)
				}
			}
		}
	})
}

type rule struct{ name, expr string }

// ruleExprs reads the alert and recording rules of a rule file.
func ruleExprs(t *testing.T, path string) []rule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, rule{name: r.Alert + r.Record, expr: r.Expr})
		}
	}
	return out
}

// dashboardQueries returns "panel title #n" → expr for every target.
func dashboardQueries(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(d.Templating.List) == 0 || d.Templating.List[0].Type != "datasource" {
		t.Errorf("%s: the datasource must be a variable", path)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("%s #%d", p.Title, i+1)] = tg.Expr
		}
	}
	return out
}

// metricNames lists the metric names an expression selects.
func metricNames(e parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			seen[vs.Name] = true
		}
		return nil
	})
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
