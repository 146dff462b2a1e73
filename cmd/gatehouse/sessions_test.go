package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestSessionsRevokeCommand: `gatehouse sessions revoke --user <issuer>,<subject>`
// ends every session of that user (seen by the very next lookup) and no other.
func TestSessionsRevokeCommand(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.Postgres(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"GATEHOUSE_DATABASE_URL":        dbURL,
		"GATEHOUSE_AUTH_ENCRYPTION_KEY": base64.StdEncoding.EncodeToString(key),
	}
	getenv := func(k string) string { return env[k] }
	const iss = "https://login.example.com/"
	insert := func(sub, cookie string) {
		fid, sid := uuid.New(), uuid.New()
		now := time.Now()
		h := sha256.Sum256([]byte(cookie))
		if _, err := pool.Exec(ctx, `INSERT INTO auth_refresh_families (id, issuer, subject, created_at) VALUES ($1,$2,$3,$4)`, fid, iss, sub, now); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO auth_sessions (id, token_hash, issuer, subject, device, family_id, created_at, last_seen_at, absolute_expires_at)
			VALUES ($1,$2,$3,$4,'Firefox on Linux',$5,$6,$6,$7)`, sid, h[:], iss, sub, fid, now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	insert("alice,with-comma", "cookie-a1")
	insert("alice,with-comma", "cookie-a2")
	insert("bob", "cookie-b")

	var out, errOut bytes.Buffer
	args := []string{"sessions", "list", "--user", iss + ",alice,with-comma"}
	if err := run(ctx, args, getenv, &out, &errOut); err != nil {
		t.Fatalf("sessions list: %v\n%s", err, errOut.String())
	}
	if n := strings.Count(out.String(), `"device":"Firefox on Linux"`); n != 2 {
		t.Fatalf("sessions list printed %d sessions:\n%s", n, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"sessions", "revoke", "--user", iss + ",alice,with-comma", "--reason", "password reset"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("sessions revoke: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "revoked 2 session(s)") {
		t.Fatalf("revoke output: %q", out.String())
	}
	a := auth.Settings{CookieName: "__Host-gatehouse-session", SessionIdleTimeout: time.Hour, SessionLifetime: 2 * time.Hour,
		EncryptionKeys: []auth.Key{{ID: "k", Value: key}}}
	store, err := auth.NewStore(auth.StoreConfig{Pool: pool, Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cookie-a1", "cookie-a2"} {
		if _, err := store.Lookup(ctx, c); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("%s after revoke: %v", c, err)
		}
	}
	if _, err := store.Lookup(ctx, "cookie-b"); err != nil {
		t.Fatalf("another user's session was revoked: %v", err)
	}
	var famRevoked int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM auth_refresh_families WHERE subject = 'alice,with-comma' AND revoked_at IS NOT NULL`).Scan(&famRevoked)
	if famRevoked != 2 {
		t.Fatalf("refresh families revoked: %d, want 2", famRevoked)
	}
	if err := run(ctx, []string{"sessions", "revoke", "--user", "no-comma"}, getenv, &out, &errOut); err == nil {
		t.Fatal("a malformed --user was accepted")
	}
}
