package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// runProviders lists the provider catalogue: for each scheme a provider
// may name, how it is signed, which headers carry what, where the event id,
// type and creation time come from, which path of the stored envelope is
// the Kafka key (the default aggregate_id_path), which handshake is
// answered, and what the tests verify it against.
func runProviders(_ context.Context, e env, args []string) error {
	fs, _ := newFlags("providers", e)
	only := fs.String("scheme", "", "show only this scheme")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("providers: unexpected argument %q (use --scheme)", fs.Arg(0))
	}
	names := providers.Names()
	if *only != "" {
		if _, ok := providers.Lookup(*only); !ok {
			return fmt.Errorf("providers: unknown scheme %q (one of %s)", *only, strings.Join(names, ", "))
		}
		names = []string{*only}
	}
	for i, name := range names {
		k, _ := providers.Lookup(name)
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "%s\n", name)
		row := func(label, v string) {
			if v != "" {
				fmt.Fprintf(e.stdout, "  %-11s %s\n", label+":", v)
			}
		}
		if name == "hmac" {
			row("signed", "as the provider's hmac definition says (docs/PROVIDERS.md: Adding a provider without code)")
			row("event id", "as its event_id says")
			row("event type", "as its event_type says")
			row("created at", "as its created_at says, else the receiver's clock")
			row("kafka key", "its aggregate_id_path, else the event id")
			row("dedupe", "(provider, event id) in the inbox, and when the event id comes from a header the content does not sign ({id}), "+
				"the SHA-256 of the signed content for replay_guard_ttl, as for github")
			row("redelivery", redeliveryText(name))
			row("reconcile", k.Reconcile.Describe())
			continue
		}
		d, _ := signature.Describe(k.Scheme, nil)
		if k.Scheme != name {
			row("scheme", k.Scheme)
		}
		row("headers", strings.Join(d.Headers, ", "))
		row("signed", d.Content)
		row("timestamp", d.Timestamp)
		row("event id", k.IDSource())
		row("event type", k.TypeSource())
		row("created at", k.TimeSource())
		row("kafka key", k.KeySource())
		row("dedupe", k.DedupeText())
		row("handshake", k.HandshakeText())
		row("verified", k.Vector)
		row("note", k.Note)
		row("redelivery", redeliveryText(name))
		row("reconcile", k.Reconcile.Describe())
		handlerRows(e, k.API)
	}
	return nil
}

// redeliveryText is the catalogue's redelivery window of scheme with its
// source: the least dedupe window its endpoints accept.
func redeliveryText(scheme string) string {
	k, _ := providers.Lookup(scheme)
	r := k.Redelivery
	w := "none"
	if r.Window > 0 {
		w = r.Window.String()
	}
	return fmt.Sprintf("%s: %s (%s)", w, r.Text, r.Source)
}

// handlerRows prints what the consumers do by default with a provider's
// events: its API reference and authentication and each fetch rule (with
// api_url set), or why there is none. forward (providers.<name>.forward)
// and the provider's own fetch rules come on top.
func handlerRows(e env, a providers.API) {
	row := func(label, v string) { fmt.Fprintf(e.stdout, "  %-11s %s\n", label+":", v) }
	switch {
	case a.EventOnly != "":
		row("handlers", "event-only: "+a.EventOnly)
		return
	case len(a.Fetch) == 0:
		row("handlers", "none by default: events are skipped unless providers.<name>.fetch or forward says what to do")
		return
	}
	auth := a.Auth
	switch auth {
	case "", providers.AuthBearer:
		auth = "Authorization: Bearer <api_key>"
	case providers.AuthBasic:
		auth = "HTTP basic, api_key = user:password"
	case providers.AuthHeader:
		auth = a.AuthHeader + ": <api_key>"
	case providers.AuthBot:
		auth = "Authorization: Bot <api_key>"
	case providers.AuthNone:
		auth = "no authentication"
	}
	if a.Accept != "" {
		auth += "; Accept: " + a.Accept
	}
	vh := a.VersionHeader
	if vh == "" {
		vh = "Api-Version"
	}
	row("handlers", "with api_url: fetch the object into provider_objects ("+a.Reference+")")
	row("api auth", auth+"; api_version in "+vh)
	for _, f := range a.Fetch {
		row("fetch", f.Describe())
	}
}
