package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// env bundles what every subcommand receives from run.
type env struct {
	getenv func(string) string
	stdin  io.Reader // the process's standard input (send --body -)
	stdout io.Writer
	stderr io.Writer
}

// subcommand is one entry of `gatehouse help`.
type subcommand struct {
	name    string
	summary string // one line, for the list
	about   string // a paragraph, for `gatehouse help <name>` and `--help`
	example string
	run     func(ctx context.Context, e env, args []string) error
}

// subcommands returns every subcommand, in the order `gatehouse help`
// lists them: the long-running stages, then the tools. (A function, not a
// variable: the subcommands' own code looks their help up here.)
func subcommands() []subcommand {
	return []subcommand{
		{"serve", "serve webhooks, login and the API (public and admin listeners)",
			"Runs the public listener (webhook receiver, browser login, /api/v1) and the admin listener (/metrics, /healthz, /readyz) until SIGTERM, then shuts both down gracefully.",
			"gatehouse serve --config gatehouse.yaml", runServe},
		{"relay", "publish outbox rows to Kafka (logical replication, or --mode poll)",
			"Publishes every outbox row to its provider's Kafka topic, Debezium-style: streams the WAL through a replication slot (or polls the outbox with --mode poll). One relay per slot is active; others wait as standbys.",
			"GATEHOUSE_KAFKA_BROKERS=kafka:9092 gatehouse relay", runRelay},
		{"consume", "process provider events from Kafka (consumer group, retries, dead letters)",
			"Runs one member of the consumer group: batches of events are claimed, their objects fetched from the providers' APIs, the effects applied once; failures go through the retry topics to the dead-letter topic.",
			"GATEHOUSE_KAFKA_BROKERS=kafka:9092 gatehouse consume", runConsume},
		{"dev", "serve + relay + consumers in one process; embedded Kafka when no brokers are configured",
			"Runs serve, relay and the consumers in one process for local work, with an in-memory Kafka when kafka.brokers is empty. `make run` uses it.",
			"gatehouse dev --config gatehouse.yaml", runDev},
		{"migrate", "apply pending database migrations",
			"Applies the embedded SQL migrations that the database does not have yet, and reports how many ran.",
			"gatehouse migrate --config gatehouse.yaml", runMigrate},
		{"replay", "re-enqueue stored, verified events through the outbox (one by id, or dead ones in bulk)",
			"Re-enqueues a stored, verified event through the outbox (never a forged HTTP request): one by id, or every dead event matching a filter; the inbox row goes back to pending and the replay is recorded with who asked.",
			"gatehouse replay --dead --provider stripe --since 24h --dry-run", runReplay},
		{"reconcile", "compare a provider's own record with the inbox now: backfill (Stripe) or redeliver (GitHub) what is missing",
			"Runs one reconciliation pass of a provider: lists what the provider recorded over the window (--since, else from the durable cursor), and stores each event the inbox lacks (backfill: marked via reconcile) or asks the provider to redeliver it (redelivery), never further back than the dedupe window. Prints a progress line per page and the counts at the end; --dry-run lists the missing ids and changes nothing. serve runs the same pass periodically for providers with reconcile.enabled (docs/PROVIDERS.md \"Reconciliation\").",
			"gatehouse reconcile --provider stripe --since 72h --dry-run", runReconcile},
		{"erase", "remove the stored payload of events (by --event-id, --object, or --path with --value), keeping their dedupe keys",
			"Replaces the stored payload of the selected events of one provider (in the inbox and any outbox copy) by an erasure marker, removes the consumers' projections the erased events were applied under, keeps the dedupe keys so a redelivery is still refused, and records who, when, the selector and the counts in the erasures audit table. Kafka records within topic retention and backups are not reached (docs/SECURITY.md \"Erasure\").",
			"gatehouse erase --provider stripe --path data.object.customer --value cus_123 --reason 'ticket 4711'", runErase},
		{"send", "sign a test event with a provider's first secret and POST it",
			"Builds the delivery the provider's scheme sends (its headers, its body's shape, the event's id and type where the provider puts them, --object at the provider's aggregate_id_path: the Kafka key), or takes the body from --body, signs it with the provider's first configured secret, adds --header, and POSTs it to the receiver: a smoke test of a deployment, for every provider of the catalogue. Only that provider's secrets are resolved. Discord and SendGrid sign with a private key gatehouse never holds: pass it with --signing-key.",
			"gatehouse send --url http://127.0.0.1:8080 --provider github --type issues.opened --object octo-org/octo-repo", runSend},
		{"providers", "list the providers gatehouse verifies: headers, signed content, event id, Kafka key, handshake",
			"Lists every scheme a provider may name in the configuration: the headers it sends, what is signed and how, the timestamp window, where the event id, type and creation time (ce_time) come from, the Kafka key (the default aggregate_id_path: paths in the stored envelope, tried in order, then the event id), the handshake answered, and the library or documentation its tests take their vectors from.",
			"gatehouse providers --scheme twilio", runProviders},
		{"tail", "print the records of a Kafka topic as JSON lines (--topic, --from-beginning)",
			"Reads a topic and prints each record (key, headers, value) as one JSON line, from the end or from the beginning.",
			"gatehouse tail --topic gatehouse.webhooks.demo --from-beginning", runTail},
		{"sessions", "list or revoke browser sessions (list|revoke --user <issuer>,<subject>; rekey)",
			"Lists a user's browser sessions, revokes them (and their refresh-token families), or re-encrypts stored tokens under the newest key.",
			"gatehouse sessions revoke --user https://idp.example.com,248289761001", runSessions},
		{"config", "validate a configuration file and print it with secrets redacted (check), or every key at its default (defaults)",
			"check validates the file (an error names the key's YAML path and line) and prints the effective configuration — defaults and GATEHOUSE_* overrides applied — as YAML, every secret redacted; defaults prints a complete file of every key at its default with its description as a comment (reference: docs/CONFIG.md).",
			"gatehouse config check --config gatehouse.yaml", runConfig},
		{"doctor", "check a deployment before traffic: database, wal_level, migrations, slot, Kafka, OP, secrets, clocks, partitions",
			"Checks the deployment the configuration describes, read-only, and prints one line per check — ✓ passed, ✗ failed with the fix, ○ skipped with the reason (no brokers or no OP configured, the database unreachable) — then how many passed, failed and were skipped: the configuration and every secret resolve; the database answers, wal_level is logical (relay mode replication), no migration is pending, the relay's slot and publication exist and no inactive slot retains WAL; the clocks agree within 2s; time partitions exist ahead and none outlived its retention; the Kafka brokers answer and every provider's topics exist; the OpenID Providers' discovery and JWKS answer; the admin listener is not public. Exits non-zero on any ✗.",
			"gatehouse doctor --config /etc/gatehouse/gatehouse.yaml", runDoctor},
		{"version", "print the release version and the revision it was built from",
			"Prints the release version, the VCS revision this binary was built from (and whether the tree was modified), the module version and the Go version (also `gatehouse --version`).",
			"gatehouse version", runVersion},
	}
}

func lookup(name string) (subcommand, bool) {
	all := subcommands()
	i := slices.IndexFunc(all, func(s subcommand) bool { return s.name == name })
	if i < 0 {
		return subcommand{}, false
	}
	return all[i], true
}

// run is the whole program: main only supplies the process's context,
// arguments, environment and output streams. Help asked for goes to stdout
// and succeeds; a missing or unknown subcommand prints the list to stderr
// and fails.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: os.Stdin, stdout: stdout, stderr: stderr}
	switch {
	case len(args) == 0:
		usage(stderr)
		return errors.New("missing subcommand")
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		usage(stdout)
		return nil
	case args[0] == "--version" || args[0] == "-version":
		return runVersion(ctx, e, nil)
	case args[0] == "help":
		if len(args) == 1 {
			usage(stdout)
			return nil
		}
		sc, ok := lookup(args[1])
		if !ok {
			usage(stderr)
			return fmt.Errorf("help: unknown subcommand %q", args[1])
		}
		e.stderr = stdout // the flag set prints its usage there
		err := sc.run(ctx, e, []string{"--help"})
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	sc, ok := lookup(args[0])
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
	if wantsHelp(args[1:]) {
		e.stderr = stdout
	}
	err := sc.run(ctx, e, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// wantsHelp reports -h or --help among a subcommand's flags.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("gatehouse signs people in and receives webhooks: verified, recorded once, relayed to Kafka, processed once.\n\n")
	b.WriteString("usage: gatehouse <subcommand> [flags]\n       gatehouse help <subcommand>\n\nsubcommands:\n")
	for _, s := range subcommands() {
		fmt.Fprintf(&b, "  %-10s %s\n", s.name, s.summary)
	}
	b.WriteString("\nExample: gatehouse serve --config gatehouse.yaml\n")
	_, _ = io.WriteString(w, b.String())
}

// newFlags returns a subcommand's flag set with the common --config flag;
// its usage says what the subcommand does, shows an example, then lists
// the flags.
func newFlags(name string, e env) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("gatehouse "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	sc, _ := lookup(strings.Fields(name)[0])
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: gatehouse %s [flags]\n\n%s\n\nExample:\n  %s\n\nFlags:\n", name, sc.about, sc.example)
		fs.PrintDefaults()
	}
	cfg := fs.String("config", "gatehouse.yaml", "path of the YAML configuration file")
	return fs, cfg
}
