package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/migrations"
)

// PG is a PostgreSQL cluster started from the machine's server binaries.
type PG struct {
	Dir  string // data directory
	Port int
	bin  string
	cred *syscall.Credential
	log  string
}

// AdminURL is a superuser connection string to the postgres database.
func (p *PG) AdminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// PGBinDir finds the PostgreSQL server binaries (pg_config --bindir, then
// /usr/lib/postgresql/<newest>/bin).
func PGBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[j]))))
		return vi > vj
	})
	if len(matches) == 0 {
		return "", errors.New("no PostgreSQL server binaries found (initdb); install postgresql")
	}
	return filepath.Dir(matches[0]), nil
}

// StartPG creates a cluster in dir (initdb, wal_level=logical, trust auth on
// loopback, a free port) and starts it. When the caller is root the cluster
// runs as the unprivileged user nobody. fast disables fsync (tests only).
func StartPG(ctx context.Context, dir string, fast bool) (*PG, error) {
	bin, err := PGBinDir()
	if err != nil {
		return nil, err
	}
	p := &PG{Dir: dir, bin: bin, log: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("lookup nobody: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("chown data dir: %w", err)
		}
		// nobody must be able to traverse to dir.
		for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
			if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
				_ = os.Chmod(d, st.Mode().Perm()|0o011)
			}
		}
	}
	pgdata := filepath.Join(dir, "pgdata")
	if out, err := p.cmd(ctx, "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p.Port = port
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = logical
max_wal_senders = 20
max_replication_slots = 20
max_connections = 200
shared_buffers = 128MB
`, port, dir)
	if fast {
		conf += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	}
	f, err := os.OpenFile(filepath.Join(pgdata, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	f.Close()
	if err != nil {
		return nil, err
	}
	return p, p.Start(ctx)
}

func (p *PG) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	c.Dir = p.Dir
	if p.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return c
}

// Start starts (or restarts) the server and waits until it accepts connections.
func (p *PG) Start(ctx context.Context) error {
	out, err := p.cmd(ctx, "pg_ctl", "-D", filepath.Join(p.Dir, "pgdata"), "-l", p.log, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		logTail, _ := os.ReadFile(p.log)
		return fmt.Errorf("pg_ctl start: %w: %s %s", err, out, lastLines(logTail, 40))
	}
	return nil
}

// Stop stops the server; immediate mode simulates a crash.
func (p *PG) Stop(immediate bool) error {
	mode := "fast"
	if immediate {
		mode = "immediate"
	}
	out, err := p.cmd(context.Background(), "pg_ctl", "-D", filepath.Join(p.Dir, "pgdata"), "-m", mode, "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

var (
	sharedOnce sync.Once
	sharedURL  string
	sharedErr  error
)

// serverURL returns the admin URL of the shared server: GATEHOUSE_TEST_DATABASE_URL
// when set, otherwise a private cluster started once per test binary.
func serverURL() (string, error) {
	sharedOnce.Do(func() {
		if u := os.Getenv("GATEHOUSE_TEST_DATABASE_URL"); u != "" {
			sharedURL = u
			return
		}
		dir, err := os.MkdirTemp("", "gatehouse-pg-")
		if err != nil {
			sharedErr = err
			return
		}
		p, err := StartPG(context.Background(), dir, true)
		if err != nil {
			sharedErr = err
			os.RemoveAll(dir)
			return
		}
		sharedURL = p.AdminURL()
		atExit(func() { _ = p.Stop(false); os.RemoveAll(dir) })
	})
	return sharedURL, sharedErr
}

// Postgres returns the URL of a fresh, empty-but-migrated database for this
// test. The database is dropped when the test ends. It fails the test (never
// skips) when no server can be started.
func Postgres(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// PostgresUnmigrated is Postgres without applying migrations.
func PostgresUnmigrated(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func newDatabase(t testing.TB, migrate bool) string {
	t.Helper()
	admin, err := serverURL()
	if err != nil {
		t.Fatalf("testenv: start postgres: %v", err)
	}
	dbURL, err := CreateDatabase(context.Background(), admin, migrate)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { dropDatabase(admin, dbURL) })
	return dbURL
}

// CreateDatabase creates a randomly named database on the server at adminURL,
// optionally applies the migrations, and returns its URL.
func CreateDatabase(ctx context.Context, adminURL string, migrate bool) (string, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect admin: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return "", err
	}
	u := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if migrate {
		if err := migrations.Up(ctx, u); err != nil {
			return "", fmt.Errorf("migrate: %w", err)
		}
	}
	return u, nil
}

func dropDatabase(adminURL, dbURL string) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	// Replication slots pin a database; drop them first.
	_, _ = conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active`, cfg.Database)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+cfg.Database+" WITH (FORCE)")
}
