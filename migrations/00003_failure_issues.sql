-- Failure issues (issue 38): every failed attempt the consumers record
-- (an event left retrying or dead) is counted into one issue per provider,
-- stage ('fetch', 'forward:<destination>' or 'apply') and fingerprint of
-- the error text with ids, numbers, UUIDs, hex strings and timestamps
-- normalised away (consumers.Fingerprint). Written by the consumers in the
-- transaction that records the failure on the inbox row; read and changed
-- by the API and console; deleted by ingest's maintenance once last_seen is
-- older than the longest retention.
-- +goose Up
CREATE TABLE failure_issues (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider          text        NOT NULL,
    stage             text        NOT NULL,                  -- fetch, forward:<destination>, apply
    fingerprint       text        NOT NULL,                  -- hex of the hash of the normalised error
    error_class       text        NOT NULL,                  -- of the latest failure: transient, permanent
    message           text        NOT NULL,                  -- the normalised error text
    last_error        text        NOT NULL,                  -- the latest error text as recorded
    status            text        NOT NULL DEFAULT 'open'
                      CHECK (status IN ('open', 'acknowledged', 'resolved', 'muted')),
    first_seen        timestamptz NOT NULL DEFAULT now(),
    last_seen         timestamptz NOT NULL DEFAULT now(),
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    event_count       bigint      NOT NULL DEFAULT 0,        -- distinct events
    failures          bigint      NOT NULL DEFAULT 0,        -- failed attempts
    reopened          integer     NOT NULL DEFAULT 0,        -- times a recurrence reopened it after resolved
    event_types       text[]      NOT NULL DEFAULT '{}',     -- at most 20
    sample_event_ids  text[]      NOT NULL DEFAULT '{}',     -- the last 10, newest last
    replayed_events   bigint      NOT NULL DEFAULT 0,        -- events re-enqueued by replays of the issue
    last_replayed_at  timestamptz,                           -- the latest replay of the issue (each event's own row is in replays)
    last_replayed_by  text,
    UNIQUE (provider, stage, fingerprint)
);
CREATE INDEX failure_issues_last_seen_idx ON failure_issues (last_seen);

-- The events of an issue (what its replay re-enqueues, and what makes
-- event_count count distinct events); deleted with their issue.
CREATE TABLE failure_issue_events (
    issue_id    bigint      NOT NULL REFERENCES failure_issues (id) ON DELETE CASCADE,
    provider    text        NOT NULL,
    event_id    text        NOT NULL,
    received_at timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issue_id, provider, event_id)
);
CREATE INDEX failure_issue_events_last_seen_idx ON failure_issue_events (last_seen);

-- +goose Down
DROP TABLE failure_issue_events;
DROP TABLE failure_issues;
