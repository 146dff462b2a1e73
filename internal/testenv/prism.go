package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PrismVersion is the pinned Stoplight Prism (npm @stoplight/prism-cli)
// that deploy/local/deps.sh installs into bin/prism, beside GitHub's
// OpenAPI description (npm @octokit/openapi, GitHubOpenAPIVersion) and
// Twilio's (twilio-oai, as npm @twilio-alpha/mcp ships it, TwilioOpenAPIVersion).
const (
	PrismVersion         = "5.14.2"
	GitHubOpenAPIVersion = "23.0.2"
	TwilioOpenAPIVersion = "0.7.0"
)

// Prism is a running Prism mock server answering from an OpenAPI
// description: each operation's documented example, its documented error
// answers when a request carries "Prefer: code=<status>".
type Prism struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
	log bytes.Buffer
}

// prismDir is bin/prism of the repository, checked for the pinned version.
func prismDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "prism")
	for pkg, want := range map[string]string{"@stoplight/prism-cli": PrismVersion, "@octokit/openapi": GitHubOpenAPIVersion,
		"@twilio-alpha/mcp": TwilioOpenAPIVersion} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		var p struct{ Version string }
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil || p.Version != want {
			return "", fmt.Errorf("%s %s is not installed in bin/prism (found %q, %v): run deploy/local/deps.sh (make test runs it)", pkg, want, p.Version, err)
		}
	}
	return dir, nil
}

// GitHubSpec writes the part of GitHub's published REST description
// (@octokit/openapi's api.github.com.json) that serves the given paths
// (e.g. "/repos/{owner}/{repo}/issues/{issue_number}") into dir and returns
// its file: the paths' operations verbatim with every component, so Prism
// loads in seconds instead of resolving all of api.github.com. One defect
// of the description is repaired: an example whose value is itself a $ref
// to a components example ({"value": {"$ref": …}}, as the issue examples
// are) would be served as {"value": {…}}; it becomes that example.
func GitHubSpec(dir string, paths ...string) (string, error) {
	return specSubset(dir, "github-openapi.json", filepath.Join("@octokit", "openapi", "generated", "api.github.com.json"), paths)
}

// TwilioSpec writes the part of Twilio's published description of its
// 2010-04-01 API (twilio-oai's twilio_api_v2010.json) that serves the
// given paths into dir and returns its file, as GitHubSpec does.
func TwilioSpec(dir string, paths ...string) (string, error) {
	return specSubset(dir, "twilio-openapi.json", filepath.Join("@twilio-alpha", "mcp", "twilio-oai", "spec", "json", "twilio_api_v2010.json"), paths)
}

func specSubset(dir, name, src string, paths []string) (string, error) {
	pd, err := prismDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(pd, "node_modules", src))
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	all, _ := doc["paths"].(map[string]any)
	keep := map[string]any{}
	for _, p := range paths {
		op, ok := all[p]
		if !ok {
			return "", fmt.Errorf("%s: no path %s", src, p)
		}
		keep[p] = op
	}
	doc["paths"] = keep
	delete(doc, "webhooks")
	unwrapExampleRefs(keep)
	out, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, name)
	return file, os.WriteFile(file, out, 0o644)
}

// unwrapExampleRefs replaces {"value": {"$ref": "#/components/examples/x"}}
// by {"$ref": "#/components/examples/x"} anywhere below v.
func unwrapExampleRefs(v any) {
	switch t := v.(type) {
	case map[string]any:
		if exs, ok := t["examples"].(map[string]any); ok {
			for k, ex := range exs {
				m, _ := ex.(map[string]any)
				val, _ := m["value"].(map[string]any)
				if ref, ok := val["$ref"].(string); ok && len(val) == 1 && strings.HasPrefix(ref, "#/components/examples/") {
					exs[k] = map[string]any{"$ref": ref}
				}
			}
		}
		for _, c := range t {
			unwrapExampleRefs(c)
		}
	case []any:
		for _, c := range t {
			unwrapExampleRefs(c)
		}
	}
}

// StartPrism runs Prism's mock server (static examples) for the OpenAPI
// document spec on a free loopback port and returns once it answers.
func StartPrism(ctx context.Context, spec string) (*Prism, error) {
	return startPrism(ctx, "mock", spec)
}

// startPrism runs Prism's command (mock or proxy) with args after the
// host and port flags.
func startPrism(ctx context.Context, command string, args ...string) (*Prism, error) {
	dir, err := prismDir()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Prism{URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	argv := append([]string{filepath.Join(dir, "node_modules", "@stoplight", "prism-cli", "dist", "index.js"),
		command, "-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
	p.cmd = exec.Command("node", argv...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start prism: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(120 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("prism exited before listening: %s", lastLines(p.log.Bytes(), 20))
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			_ = c.Close()
			resp, err := http.Get(p.URL + "/")
			if err == nil {
				resp.Body.Close()
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, errors.New("prism did not listen within 120s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop ends the process group.
func (p *Prism) Stop() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}
