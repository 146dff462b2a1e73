package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/demoapi"
)

// provider is the run's one provider (SPEC.md's reference scheme, which
// documents no redelivery window, so the dedupe window may be as short as
// one partition).
const provider = "bench"

// writeConfig writes the gatehouse.yaml every process of the run reads:
// the bench provider with the demo API as its api_url (the consumers fetch
// every payment from it and write its projection), and the short storage
// lifetimes of the options.
func writeConfig(dir string, o *options, st *benchenv.Stack, secret []byte, apiURL string) (string, error) {
	return benchenv.WriteConfig(dir, "gatehouse.yaml", st.DBURL, fmt.Sprintf(`kafka:
  brokers: [%[1]s]
storage:
  partition_interval: %[2]s
  key_partition_interval: %[3]s
  outbox_partition_interval: %[2]s
  retention: %[4]s
  outbox_retention: %[4]s
  dedupe_window: %[2]s
  check_interval: %[5]s
`, st.Brokers(), o.interval, o.keyInterval, o.retention, o.check),
		benchenv.ProviderYAML(provider, secret, "    api_url: "+apiURL+"\n"))
}

// startAPI serves the demo provider's API (internal/demoapi, what `gatehouse
// dev --demo-api` serves) on a loopback port.
func startAPI() (url string, stop func(), err error) { return benchenv.Serve(demoapi.Handler(nil)) }

// warnings counts the WARN and ERROR lines of the process's JSON log and
// returns the message of the last one.
func warnings(p *benchenv.Proc) (n int, last string) {
	f, err := os.Open(p.Log)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			n++
			last = line
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return n, last
}
