// Package live runs the shipped alert rules and the Grafana dashboard
// against a real Prometheus (Debian's `prometheus` server) scraping real
// `gatehouse serve`, `relay` and `consume` processes on real PostgreSQL and
// Kafka. Its tests: the relay-backlog alert fires when the relay stops and
// clears when it comes back; every rule's expression evaluates without
// error on the scraped data; every dashboard query parses with
// Prometheus's own parser and names only metrics the binaries export.
package live
