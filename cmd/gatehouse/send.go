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
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
)

func runSend(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("send", e)
	provider := fs.String("provider", "demo", "configured provider to send as")
	url := fs.String("url", "http://localhost:8080", "gatehouse's public base URL")
	typ := fs.String("type", "payment.succeeded", "event type")
	id := fs.String("id", "", "event id (default: random evt_…)")
	object := fs.String("object", "pay_123", "subject object id placed in data.payment_id")
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
	if *id == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		*id = "evt_" + hex.EncodeToString(b)
	}
	now := time.Now().UTC()
	body, err := json.Marshal(map[string]any{
		"id": *id, "type": *typ, "created_at": now.Format(time.RFC3339),
		"data": map[string]any{"payment_id": *object},
	})
	if err != nil {
		return err
	}
	sr := &signature.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	if err := signature.SignRequest(p.SignatureConfig(), p.Secrets[0].Resolved(), sr, now, *id); err != nil {
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
	fmt.Fprintf(e.stdout, "%s %s event_id=%s %s\n", resp.Proto, resp.Status, *id, bytes.TrimSpace(msg))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gatehouse answered %s", resp.Status)
	}
	return nil
}
