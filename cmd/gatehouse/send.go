package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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
	typ := fs.String("type", "payment.succeeded", "event type")
	id := fs.String("id", "", "event id (default: random evt_…)")
	object := fs.String("object", "pay_123", "subject object id placed in data.payment_id")
	bodyPath := fs.String("body", "", "send this file's bytes (- for standard input) instead of a generated envelope")
	contentType := fs.String("content-type", "application/json", "Content-Type of the request")
	extra := http.Header{}
	fs.Func("header", "a provider header to send, as \"Name: value\" (repeatable; e.g. X-GitHub-Event: push)", func(v string) error {
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
	cfg, err := config.Load(*cfgPath, false, e.getenv)
	if err != nil {
		return err
	}
	p, ok := cfg.Providers[*provider]
	if !ok {
		return fmt.Errorf("provider %q is not configured", *provider)
	}
	ip := wiring.Provider(p)
	if *id == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		*id = "evt_" + hex.EncodeToString(b)
	}
	now := time.Now().UTC()
	body, err := sendBody(*bodyPath, e.stdin, map[string]any{
		"id": *id, "type": *typ, "created_at": now.Format(time.RFC3339Nano),
		"data": map[string]any{"payment_id": *object},
	})
	if err != nil {
		return err
	}
	extra.Set("Content-Type", *contentType)
	sr := &signature.Request{Method: http.MethodPost, Header: extra, Body: body}
	if err := signature.SignRequest(ip.Signature, ip.Signature.Secrets[0].Value, sr, now, *id); err != nil {
		return fmt.Errorf("sign as provider %s: %w", *provider, err)
	}
	target := *url + "/webhooks/" + *provider
	if sr.RawQuery != "" {
		target += "?" + sr.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(sr.Body))
	if err != nil {
		return err
	}
	req.Header = sr.Header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	shown := *id
	if ids, err := ingest.DeliveryEventIDs(ip, &signature.Request{Method: http.MethodPost, RawQuery: sr.RawQuery, Header: sr.Header, Body: sr.Body}, now); err == nil {
		shown = strings.Join(ids, ",") // as the receiver recorded them: a --body's own ids
	}
	fmt.Fprintf(e.stdout, "%s %s event_id=%s %s\n", resp.Proto, resp.Status, shown, bytes.TrimSpace(msg))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gatehouse answered %s", resp.Status)
	}
	return nil
}

// sendBody is the file at path ("-": stdin), or the generated envelope.
func sendBody(path string, stdin io.Reader, envelope map[string]any) ([]byte, error) {
	switch path {
	case "":
		return json.Marshal(envelope)
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
