package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

func runSend(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("send", e)
	provider := fs.String("provider", "demo", "configured provider to send as")
	url := fs.String("url", "http://localhost:8080", "gatehouse's public base URL")
	typ := fs.String("type", "", "event type (default: an example of the provider's, e.g. push for github, payment_intent.succeeded for stripe)")
	id := fs.String("id", "", "event id (default: a random id of the provider's form)")
	object := fs.String("object", "", "id of the object the event is about, placed at the provider's aggregate_id_path: the Kafka key (default: an example id)")
	bodyPath := fs.String("body", "", "send this file's bytes (- for standard input) instead of a generated delivery")
	contentType := fs.String("content-type", "", "Content-Type of the request (default: the provider's)")
	signingKey := fs.String("signing-key", "", "private key for a provider that signs with a key pair (discord, sendgrid): gatehouse holds only the public key; a literal, env:NAME or file:/path")
	extra := http.Header{}
	fs.Func("header", "a provider header to send, as \"Name: value\" (repeatable; replaces the generated one)", func(v string) error {
		name, val, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("want \"Name: value\", got %q", v)
		}
		extra.Add(strings.TrimSpace(name), strings.TrimSpace(val))
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Only this provider's secrets are resolved: another's env: secret
	// unset in this shell does not concern a test delivery.
	prefix := "providers." + *provider + "."
	cfg, err := config.LoadFor(*cfgPath, false, e.getenv, func(path string) bool { return strings.HasPrefix(path, prefix) })
	if err != nil {
		return err
	}
	p, ok := cfg.Providers[*provider]
	if !ok {
		return fmt.Errorf("provider %q is not configured in %s (configured: %s)", *provider, *cfgPath, strings.Join(slices.Sorted(maps.Keys(cfg.Providers)), ", "))
	}
	ip := wiring.Provider(p)
	secret := ip.Signature.Secrets[0].Value
	if form, pair := keyPairSchemes[p.Kind().Scheme]; pair {
		if *signingKey == "" {
			return fmt.Errorf("provider %s (scheme %s) is signed with the provider's private key, which gatehouse never has (it holds the public key): pass --signing-key with the private key of the pair whose public key is configured (%s), or send a test event from the provider's own dashboard", *provider, p.Scheme, form)
		}
		if secret, err = config.ResolveSecret(*signingKey, e.getenv); err != nil {
			return fmt.Errorf("--signing-key: %w", err)
		}
	}
	now := time.Now().UTC()
	d, err := buildDelivery(*provider, p, *typ, *object, *id, now, set["object"], set["id"])
	if err != nil {
		return err
	}
	if *bodyPath == "" {
		for _, n := range d.notes {
			fmt.Fprintln(e.stderr, "note:", n)
		}
	} else {
		if d.body, err = sendBody(*bodyPath, e.stdin); err != nil {
			return err
		}
	}
	for name, vs := range extra {
		d.header[name] = vs
	}
	if *contentType != "" {
		d.contentType = *contentType
	}
	d.header.Set("Content-Type", d.contentType)
	sr := &signature.Request{Method: http.MethodPost, Header: d.header, Body: d.body}
	if err := signature.SignRequest(ip.Signature, secret, sr, now, d.signedID); err != nil {
		return fmt.Errorf("sign as provider %s: %w", *provider, err)
	}
	target := *url + "/webhooks/" + *provider
	if sr.RawQuery != "" {
		target += "?" + sr.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(sr.Body))
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	req.Header = sr.Header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	shown := d.signedID
	if ids, err := ingest.DeliveryEventIDs(ip, &signature.Request{Method: http.MethodPost, RawQuery: sr.RawQuery, Header: sr.Header, Body: sr.Body}, now); err == nil {
		shown = strings.Join(ids, ",") // as the receiver records them: a digest, a --body's own ids
	}
	fmt.Fprintf(e.stdout, "%s %s event_id=%s %s\n", resp.Proto, resp.Status, shown, bytes.TrimSpace(msg))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gatehouse answered %s", resp.Status)
	}
	return nil
}

// sendBody is the file at path ("-": stdin).
func sendBody(path string, stdin io.Reader) ([]byte, error) {
	switch path {
	case "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read body from standard input: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}
