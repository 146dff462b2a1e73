package local_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pgScript copies pg.sh into a fresh tree (it works on <tree>/.data) that
// the user PostgreSQL runs as when the caller is root (nobody) can
// traverse, and returns the tree.
func pgScript(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	script, err := os.ReadFile("pg.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "deploy/local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "deploy/local/pg.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir := root; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func pgsh(t *testing.T, root, port string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "deploy/local/pg.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "GATEHOUSE_PG_PORT="+port)
	cmd.Env = slicesDelete(cmd.Env, "GATEHOUSE_DATA=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func slicesDelete(env []string, prefix string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// postmaster returns the pid in the cluster's postmaster.pid and whether
// that process is alive.
func postmaster(t *testing.T, root string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".data/pg/pgdata/postmaster.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %q", b)
	}
	return pid, alive(pid)
}

// alive says whether process pid runs: exists and is not a zombie (a
// postmaster started through pg_ctl is reparented, and its parent may
// never reap it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// TestStopAndResetStopTheLiveServer is a first-hour defect of issue 36:
// run as root, `make stop` said "local PostgreSQL is not running" and left
// it running (run.sh makes .data 0700, so pg_ctl as nobody saw nothing),
// and `make reset` then deleted .data under the live server. With the real
// PostgreSQL binaries, .data as run.sh leaves it: stop must stop the
// server, and reset must stop it before deleting .data.
func TestStopAndResetStopTheLiveServer(t *testing.T) {
	root, port := pgScript(t), freePort(t)
	start := func() int {
		t.Helper()
		if out, err := pgsh(t, root, port, "start"); err != nil {
			t.Fatalf("pg.sh start: %v\n%s", err, out)
		}
		if err := os.Chmod(filepath.Join(root, ".data"), 0o700); err != nil { // as run.sh does
			t.Fatal(err)
		}
		pid, alive := postmaster(t, root)
		if !alive {
			t.Fatal("no live postmaster after pg.sh start")
		}
		return pid
	}
	t.Cleanup(func() { pgsh(t, root, port, "stop") })

	pid := start()
	out, err := pgsh(t, root, port, "stop")
	if err != nil || strings.Contains(out, "not running") {
		t.Fatalf("pg.sh stop on a live server: %v\n%s", err, out)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d still alive after pg.sh stop:\n%s", pid, out)
	}
	if fi, err := os.Stat(filepath.Join(root, ".data")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf(".data after stop: %v %v, want mode 700", fi.Mode(), err)
	}
	if out, err := pgsh(t, root, port, "stop"); err != nil || !strings.Contains(out, "not running") {
		t.Errorf("pg.sh stop on a stopped server: %v\n%s", err, out)
	}

	pid = start()
	if out, err := pgsh(t, root, port, "reset"); err != nil {
		t.Fatalf("pg.sh reset: %v\n%s", err, out)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d still alive after pg.sh reset", pid)
	}
	if _, err := os.Stat(filepath.Join(root, ".data")); !os.IsNotExist(err) {
		t.Errorf(".data after reset: %v, want it deleted", err)
	}
}

// TestResetRefusesWhileAServerRuns: when stopping fails (here a process
// named postgres that ignores pg_ctl's signals and that pg_ctl, run as
// another user, cannot even see), reset exits non-zero and deletes
// nothing.
func TestResetRefusesWhileAServerRuns(t *testing.T) {
	root, port := pgScript(t), freePort(t)
	pgdata := filepath.Join(root, ".data/pg/pgdata")
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		t.Fatal(err)
	}
	fake := exec.Command("bash", "-c", `trap "" INT TERM QUIT; exec -a postgres sleep 600`)
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Process.Kill(); fake.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(fake.Process.Pid) + "/cmdline"); strings.HasPrefix(string(b), "postgres\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake postmaster did not start")
		}
	}
	for name, text := range map[string]string{"PG_VERSION": "15\n", "postmaster.pid": strconv.Itoa(fake.Process.Pid) + "\n" + pgdata + "\n"} {
		if err := os.WriteFile(filepath.Join(pgdata, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := pgsh(t, root, port, "reset")
	if err == nil {
		t.Fatalf("pg.sh reset succeeded while a server runs:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		t.Fatalf("pg.sh reset deleted files under a live server: %v\n%s", err, out)
	}
	if !strings.Contains(out, "still running") {
		t.Errorf("pg.sh reset does not say why:\n%s", out)
	}
}
