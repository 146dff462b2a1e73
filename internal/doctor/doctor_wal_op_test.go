package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestDoctorWalLevelReplica: on a server with wal_level=replica the relay
// cannot stream: "wal_level is logical" fails with the fix (a private
// cluster, restarted with the setting).
func TestDoctorWalLevelReplica(t *testing.T) {
	ctx := context.Background()
	pg, err := testenv.StartPG(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(false) })
	conn, err := pgx.Connect(ctx, pg.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `ALTER SYSTEM SET wal_level = replica`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(false); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dbURL, err := testenv.CreateDatabase(ctx, pg.AdminURL(), true)
	if err != nil {
		t.Fatal(err)
	}
	raw := fmt.Sprintf("database_url: %q\n", dbURL)
	checks := Run(ctx, Options{Raw: []byte(raw), Path: "g.yaml", Getenv: func(string) string { return "" }})
	var b bytes.Buffer
	Write(&b, checks)
	byName := map[string]Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	wantFail(t, byName, b.String(), "wal_level is logical", "ALTER SYSTEM SET wal_level = logical")
	wantOK(t, byName, b.String(), "database reachable", "migrations current")
	// poll mode does not need it.
	checks = Run(ctx, Options{Raw: []byte(raw + "relay: {mode: poll}\n"), Path: "g.yaml", Getenv: func(string) string { return "" }})
	for _, c := range checks {
		if c.Name == "wal_level is logical" && (!c.Skipped || !strings.Contains(c.Detail, "poll")) {
			t.Errorf("wal_level checked in poll mode, not skipped: %+v", c)
		}
	}
}

// TestDoctorAgainstTheOP: the login issuer's discovery document and JWKS
// as zitadel's example OP serves them pass; the issuer written without its
// trailing slash fails with the exact one to use.
func TestDoctorAgainstTheOP(t *testing.T) {
	provider := testenv.StartOP(t, []string{"http://localhost:8080/callback"})
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, issuer := range []string{provider.Issuer, strings.TrimSuffix(provider.Issuer, "/")} {
		raw := fmt.Sprintf("auth:\n  issuer: %q\n  client_id: web\n  redirect_url: http://localhost:8080/callback\n  encryption_keys: [{value: \"file:%s\"}]\n", issuer, keyFile)
		checks := Run(context.Background(), Options{Raw: []byte(raw), Path: "g.yaml", Getenv: func(string) string { return "" }})
		var b bytes.Buffer
		Write(&b, checks)
		byName := map[string]Check{}
		for _, c := range checks {
			byName[c.Name] = c
		}
		name := "OpenID Provider " + issuer + " (auth.issuer) discovery and JWKS reachable"
		if issuer == provider.Issuer {
			wantOK(t, byName, b.String(), name)
		} else {
			wantFail(t, byName, b.String(), name, provider.Issuer)
		}
	}
}
