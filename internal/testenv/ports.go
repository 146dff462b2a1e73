package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed to servers are chosen below the kernel's ephemeral range.
// A port the kernel picked for "127.0.0.1:0" is free only until the server
// binds it; in between, any outgoing connection on the machine (and the test
// binaries make thousands) may take it as its local port, and the server then
// fails with "Address already in use". Ports below the ephemeral range are
// never assigned that way, so the only contenders are other listeners, which
// the bind check below sees.
var portState struct {
	sync.Mutex
	given map[int]bool
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on, outside
// the ephemeral range and not handed out before by this process.
func freePort() (int, error) {
	lo, hi := 15000, ephemeralLow()-1
	if hi-lo < 1000 {
		lo, hi = 0, 0 // unusual range: fall back to the kernel's choice
	}
	portState.Lock()
	defer portState.Unlock()
	if portState.given == nil {
		portState.given = map[int]bool{}
	}
	for i := 0; i < 200 && hi > lo; i++ {
		port := lo + rand.IntN(hi-lo+1)
		if portState.given[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		portState.given[port] = true
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow reads the first port of the kernel's ephemeral range
// (32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
