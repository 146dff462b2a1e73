package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/schemas"
)

// asyncAPIParserVersion is the @asyncapi/parser pinned in
// deploy/local/asyncapi/package.json (and its lock file).
const asyncAPIParserVersion = "3.6.3"

// parserReport is what deploy/local/asyncapi/validate.cjs prints.
type parserReport struct {
	Parser      string `json:"parser"`
	Document    bool   `json:"document"`
	Diagnostics []struct {
		Severity, Code, Message, Path string
	} `json:"diagnostics"`
	Messages []struct {
		Channel, Message  string
		Headers, Required []string
	} `json:"messages"`
}

func (r parserReport) errors() []string {
	var out []string
	for _, d := range r.Diagnostics {
		if d.Severity == "error" {
			out = append(out, d.Path+": "+d.Message+" ("+d.Code+")")
		}
	}
	return out
}

// runAsyncAPIParser runs the official AsyncAPI parser over file. It fails
// the test (never skips) when the parser is not installed.
func runAsyncAPIParser(t *testing.T, file string) (parserReport, error) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "bin", "asyncapi", "node_modules")
	pkg, err := os.ReadFile(filepath.Join(modules, "@asyncapi", "parser", "package.json"))
	var meta struct{ Version string }
	if err == nil {
		err = json.Unmarshal(pkg, &meta)
	}
	if err != nil || meta.Version != asyncAPIParserVersion {
		t.Fatalf("@asyncapi/parser %s is not installed in bin/asyncapi (found %q, %v): run deploy/local/deps.sh (make test runs it)",
			asyncAPIParserVersion, meta.Version, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (deploy/local/deps.sh installs it): %v", err)
	}
	cmd := exec.Command(node, filepath.Join(root, "deploy", "local", "asyncapi", "validate.cjs"), file)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep parserReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("parser output is not its JSON report (%v; exit %v)\nstdout: %s\nstderr: %s", err, runErr, stdout.String(), stderr.String())
	}
	if rep.Parser != asyncAPIParserVersion {
		t.Fatalf("parser reports version %q, want %s", rep.Parser, asyncAPIParserVersion)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		t.Fatalf("run parser: %v\nstderr: %s", runErr, stderr.String())
	}
	return rep, runErr
}

// TestAsyncAPIOfficialParser loads schemas/asyncapi.yaml with the official
// AsyncAPI parser (@asyncapi/parser, the one AsyncAPI Studio, the generator
// and catalogues build on): it must return a document with no
// error-severity diagnostic. Then the headers of the relay's records (built
// by the relay's own code, relay.Row.Record) are held against the headers
// the document declares for the webhooks channel, as the parser resolved
// them: every written header is declared, every required one is written.
func TestAsyncAPIOfficialParser(t *testing.T) {
	rep, err := runAsyncAPIParser(t, "asyncapi.yaml")
	for _, d := range rep.Diagnostics {
		t.Logf("%s %s: %s (%s)", d.Severity, d.Path, d.Message, d.Code)
	}
	if errs := rep.errors(); len(errs) > 0 || !rep.Document || err != nil {
		t.Fatalf("the official AsyncAPI parser refuses asyncapi.yaml (document returned: %v, exit: %v):\n%s",
			rep.Document, err, strings.Join(errs, "\n"))
	}
	var declared, required []string
	for _, m := range rep.Messages {
		if m.Channel == "webhooks" {
			declared, required = m.Headers, m.Required
		}
	}
	if len(declared) == 0 {
		t.Fatalf("the parser found no headers schema on channel webhooks: %+v", rep.Messages)
	}
	full := relay.Row{ID: "0193a6a4-7d2e-7c1a-9b6e-1f2d3c4b5a69", AggregateType: "demo", AggregateID: "pay_1",
		Type: "payment.succeeded", Payload: []byte(`{"id":"evt_1","type":"payment.succeeded"}`), EventID: "evt_1",
		Topic: schemas.DefaultTopic("demo"), EventTime: "2026-11-20T10:15:41.314187999Z",
		CreatedAt: time.Date(2026, 11, 20, 10, 15, 42, 123456000, time.UTC)}
	bare := full
	// No creation time anywhere: the fewest headers the relay writes.
	bare.EventTime, bare.CreatedAt = "", time.Time{}
	traced := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for name, tc := range map[string]struct {
		row relay.Row
		tp  string
	}{"with ce_time": {full, ""}, "without ce_time": {bare, ""}, "traced": {full, traced}} {
		var written []string
		for _, h := range tc.row.Record(tc.tp).Headers {
			written = append(written, h.Key)
		}
		for _, h := range written {
			if !slices.Contains(declared, h) {
				t.Errorf("%s: the relay writes header %q, which asyncapi.yaml does not declare (declared: %v)", name, h, declared)
			}
		}
		for _, h := range required {
			if !slices.Contains(written, h) {
				t.Errorf("%s: asyncapi.yaml requires header %q, which the relay does not write (written: %v)", name, h, written)
			}
		}
	}
}

// TestAsyncAPIParserRefusesBrokenCopies proves the parser test can fail: a
// copy of the document with the defect the official parser once refused
// (retention.ms as an array, where the Kafka channel binding requires an
// integer), and one whose headers schema does not exist, each give an
// error diagnostic.
func TestAsyncAPIParserRefusesBrokenCopies(t *testing.T) {
	raw, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ old, new, wantPath string }{
		"retention.ms array": {"retention.ms: 604800000", "retention.ms: [604800000]",
			"channels.webhooks.bindings.kafka.topicConfiguration.retention.ms"},
		"missing headers schema": {"$ref: './record-headers.schema.json'", "$ref: './no-such-headers.schema.json'", "components.messages"},
	} {
		t.Run(name, func(t *testing.T) {
			if !bytes.Contains(raw, []byte(c.old)) {
				t.Fatalf("asyncapi.yaml no longer contains %q: update this test", c.old)
			}
			dir := t.TempDir()
			files, _ := filepath.Glob("*.schema.json")
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			broken := filepath.Join(dir, "asyncapi.yaml")
			if err := os.WriteFile(broken, bytes.Replace(raw, []byte(c.old), []byte(c.new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := runAsyncAPIParser(t, broken)
			errs := rep.errors()
			if err == nil || len(errs) == 0 {
				t.Fatalf("the parser accepted the broken copy (exit %v, diagnostics %+v)", err, rep.Diagnostics)
			}
			found := false
			for _, e := range errs {
				found = found || strings.HasPrefix(e, c.wantPath)
			}
			if !found {
				t.Errorf("no error diagnostic at %s; got:\n%s", c.wantPath, strings.Join(errs, "\n"))
			}
			sort.Strings(errs)
			t.Logf("refused as expected:\n%s", strings.Join(errs, "\n"))
		})
	}
}
