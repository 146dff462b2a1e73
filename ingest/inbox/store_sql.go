package inbox

// OutboxColumns is the column list of every outbox insert: the Writer's
// and Replay's (ingest is the outbox's one writer). OutboxColumnsVia adds
// outbox.via (how the event was obtained; default webhook), which the
// Writer and Replay write and an erasure notice leaves to its default.
const (
	OutboxColumns    = `(id, aggregatetype, aggregateid, type, payload, event_id, topic, event_time, traceparent)`
	OutboxColumnsVia = `(id, aggregatetype, aggregateid, type, payload, event_id, topic, event_time, traceparent, via)`
)

// keyOverlap is the distance to a key partition boundary within which a key
// is written into both partitions; writerStatementTimeout, the Writer's
// statement_timeout, must stay well below it.
const (
	keyOverlap             = "2 minutes"
	writerStatementTimeout = "30s"
)

// insertSQL is the whole atomic write as one statement (one implicit
// transaction). Uniqueness of (provider, event_id) lives in dedupe_keys, a
// table partitioned by generation (docs/STORAGE.md, "How storage stays bounded"):
//
//   - gen: the key partition(s) to write into: the one covering now(), and
//     also its neighbour when now() is within keyOverlap of their boundary;
//     a row with gen now() when no partition covers now() makes the insert
//     fail (no partition for the row), so a missing partition is an error,
//     never a silent duplicate;
//   - seen: the rows whose key was committed before the statement within
//     its lifetime (lifetime_s, see won): duplicates by id. Each row is a
//     LATERAL probe with LIMIT 1, which PostgreSQL cannot flatten into a
//     join, so the plan is an index lookup per row whatever the tables'
//     statistics say. A semi-join here was planned, on tables without
//     statistics (a fresh database, a new partition, after a TRUNCATE), as
//     a hash of the whole current key partition, kept in the cached
//     generic plan while the partition filled: 80–120 ms a statement at
//     200 000 keys against 0.4 ms (docs/BENCHMARKS.md, "Cold start");
//   - claimed: the rows whose guard key (guard.go) has a live record of
//     another event id, read from the statement's snapshot: replays, which
//     write nothing;
//   - keys: the key of each other row inserted into each gen partition ON
//     CONFLICT DO NOTHING, in key order (concurrent batches lock in the
//     same order). A concurrent delivery of the same key waits on the
//     unique index and then sees the conflict;
//   - won: the rows all of whose key rows were inserted (no key committed
//     before the statement is within its lifetime: lifetime_s, widened by
//     the widest key partition's width since gen is the start of the
//     partition the key was seen in, and partitions keep their width when
//     storage.key_partition_interval changes; the legacy partition's keys
//     carry their received_at). The bound on gen prunes the key partitions
//     that cannot hold a live key: a new key is probed in about lifetime /
//     width + 1 of them, less those whose key filter excludes it: the row
//     reads the partitions from probe_from on and those of its windows w1,
//     w2, sealed partitions whose filter may hold it (keyfilter.go);
//   - guard: the replay guard's record of each won row that has a guard
//     key, in key order: inserted, taken over from an expired record, or,
//     when a live record committed after the snapshot is there, locked and
//     read as it is (DO UPDATE waits for one being written), so RETURNING
//     gives the event id the content was first stored under. Only a row
//     that won its key writes a record, so the guard never holds an event
//     id whose event was not stored by its statement (a delivery racing
//     another content under the same id loses on the key and leaves no
//     record);
//   - fresh: the won rows the guard lets through: no guard key, or a
//     record of their own event id. A won row whose content a concurrent
//     statement stored under another id writes no event (its key stays,
//     spent by a replay);
//   - ins, ob: the inbox row and the outbox row of each new event, with
//     how it was obtained (via: webhook or reconcile).
//
// Two concurrent deliveries of one key whose now() fall on either side of
// a boundary are both within keyOverlap of it unless one transaction lasted
// longer than keyOverlap, which the Writer's statement_timeout forbids: so
// they meet on the same partition's unique index, or the later one's
// snapshot sees the earlier one committed.
//
// It answers each input row's ord, whether it was new and the event id its
// guard record holds (NULL: no guard consulted); the stored state
// of the duplicates is read afterwards by duplicateStateSQL, so this
// statement, the hot path, reads no inbox partition: a lookup of the
// stored state inside it cost every execution the planning, locking and
// executor start-up of an index scan per inbox partition (one per day
// kept) even when the batch held no duplicate. Measured with 33 inbox
// partitions: 2.4 ms against 5.8 ms a custom-planned batch, 1.1 ms
// against 1.9 ms a generic one; the replanning after a partition is
// created or dropped shrank by as much.
const insertSQL = `
WITH input AS (
  SELECT p AS provider, e AS event_id, t AS event_type, d AS payload, c AS created_at, s AS secret_id, o AS outbox_id,
      a AS aggregate_id, k AS topic, n AS ord, m AS event_time, l AS lifetime_s, r AS traceparent,
      f AS probe_from, u1 AS w1_starts, v1 AS w1_ends, u2 AS w2_starts, v2 AS w2_ends, g AS guard_key, x AS guard_ttl_s, y AS via
  FROM jsonb_to_recordset($1::jsonb) AS j(` + inputColumns + `)
), gen AS (
  SELECT starts FROM storage_partitions
  WHERE parent = 'dedupe_keys' AND starts <= now() + interval '` + keyOverlap + `' AND ends > now() - interval '` + keyOverlap + `'
  UNION ALL
  SELECT now() WHERE NOT EXISTS (SELECT 1 FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now())
), width AS (
  SELECT coalesce(max(ends - starts), interval '0') AS w FROM storage_partitions
  WHERE parent = 'dedupe_keys' AND starts > '-infinity' AND starts <= now() + interval '` + keyOverlap + `'
), seen AS (
  SELECT i.ord FROM input i
  CROSS JOIN LATERAL (
      SELECT 1 FROM dedupe_keys o
      WHERE o.provider = i.provider AND o.event_id = i.event_id
        AND o.gen > now() - make_interval(secs => i.lifetime_s) - (SELECT w FROM width)
        -- the same bound for the whole batch: PostgreSQL prunes the
        -- partitions outside it instead of probing each
        AND o.gen > now() - make_interval(secs => $2::float8) - (SELECT w FROM width) AND o.gen < now() + interval '` + keyOverlap + `'
        -- the sealed partitions whose key filters exclude the id are
        -- pruned for this row (keyfilter.go)
        AND (o.gen >= i.probe_from OR (o.gen >= i.w1_starts AND o.gen < i.w1_ends) OR (o.gen >= i.w2_starts AND o.gen < i.w2_ends))
      LIMIT 1) x
), claimed AS (
  SELECT i.ord, c.event_id FROM input i
  CROSS JOIN LATERAL (
      SELECT g.event_id FROM ingest_replay_guard g
      WHERE g.key = i.guard_key AND g.expires_at > now() AND g.event_id <> i.event_id
      LIMIT 1) c
  WHERE i.guard_key IS NOT NULL
), cand AS (
  SELECT i.* FROM input i
  WHERE i.ord NOT IN (SELECT ord FROM seen) AND i.ord NOT IN (SELECT ord FROM claimed)
), keys AS (
  INSERT INTO dedupe_keys (provider, event_id, gen)
  SELECT c.provider, c.event_id, g.starts FROM cand c CROSS JOIN gen g ORDER BY 1, 2, 3
  ON CONFLICT (provider, event_id, gen) DO NOTHING
  RETURNING provider, event_id
), won AS (
  SELECT c.* FROM cand c
  WHERE (SELECT count(*) FROM keys k WHERE k.provider = c.provider AND k.event_id = c.event_id) = (SELECT count(*) FROM gen)
), guard AS (
  INSERT INTO ingest_replay_guard AS g (key, event_id, expires_at)
  SELECT w.guard_key, w.event_id, now() + make_interval(secs => w.guard_ttl_s) FROM won w
  WHERE w.guard_key IS NOT NULL
  ORDER BY 1
  ON CONFLICT (key) DO UPDATE SET
    event_id = CASE WHEN g.expires_at <= now() THEN excluded.event_id ELSE g.event_id END,
    expires_at = CASE WHEN g.expires_at <= now() THEN excluded.expires_at ELSE g.expires_at END
  RETURNING key, event_id
), fresh AS (
  SELECT w.* FROM won w
  WHERE w.guard_key IS NULL OR EXISTS (SELECT 1 FROM guard g WHERE g.key = w.guard_key AND g.event_id = w.event_id)
), ins AS (
  INSERT INTO inbox (provider, event_id, event_type, payload, event_created_at, verified, secret_id, traceparent, via)
  SELECT provider, event_id, event_type, payload, created_at, true, secret_id, traceparent, via FROM fresh ORDER BY ord
  RETURNING provider, event_id
), ob AS (
  INSERT INTO outbox ` + OutboxColumnsVia + `
  SELECT i.outbox_id, i.provider, i.aggregate_id, i.event_type, i.payload, i.event_id, i.topic, i.event_time, i.traceparent, i.via
  FROM input i JOIN ins ON ins.provider = i.provider AND ins.event_id = i.event_id ORDER BY i.ord
  RETURNING id
)
SELECT i.ord, ob.id IS NOT NULL, coalesce(g.event_id, c.event_id) FROM input i
LEFT JOIN ob ON ob.id = i.outbox_id LEFT JOIN guard g ON g.key = i.guard_key LEFT JOIN claimed c ON c.ord = i.ord`

// duplicateStateSQL reads the stored state of the duplicates of a batch,
// after its insert committed, so a duplicate of a delivery that committed
// while the insert waited on the key sees that event's state. The lookup
// is kept from being flattened into a join by LIMIT 1, so it is an index
// probe per inbox partition whatever the statistics say (a plain LEFT
// JOIN was planned as a hash join over a sequential scan of inbox whenever
// its statistics were empty or stale, docs/BENCHMARKS.md). A duplicate
// whose stored event expired (its key outlives its payload) has no row.
const duplicateStateSQL = `
SELECT d.ord, x.processing_state, x.attempts
FROM unnest($1::text[], $2::text[], $3::int[]) AS d(provider, event_id, ord)
JOIN LATERAL (
  SELECT processing_state, attempts FROM inbox
  WHERE provider = d.provider AND event_id = d.event_id
  ORDER BY received_at DESC LIMIT 1
) x ON true`
