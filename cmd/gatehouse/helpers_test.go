package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// signedRequest is a delivery of body to the demo provider, signed with
// e2eSecret (reference scheme) at the current time.
func signedRequest(ctx context.Context, public, body string) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(e2eSecret))
	mac.Write([]byte(ts + "." + body))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, public+"/webhooks/demo", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gatehouse-Timestamp", ts)
	req.Header.Set("X-Gatehouse-Signature", hex.EncodeToString(mac.Sum(nil)))
	return req
}

// postSigned delivers body and fails the test unless it is acknowledged
// with 204.
func postSigned(t *testing.T, public, body string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(signedRequest(context.Background(), public, body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delivery answered %d, want 204", resp.StatusCode)
	}
}

// inboxState is the processing state of event id ("" when absent).
func inboxState(t *testing.T, dbURL, id string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		return ""
	}
	defer conn.Close(context.Background())
	var st string
	_ = conn.QueryRow(context.Background(), `SELECT processing_state FROM inbox WHERE event_id = $1`, id).Scan(&st)
	return st
}
