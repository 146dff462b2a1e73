-- Reconciliation (issue 48): how each event was obtained, and each
-- provider's durable reconciliation cursor. inbox.via and outbox.via are
-- 'webhook' (a delivery the receiver verified) or 'reconcile' (read from
-- the provider's event list by ingest/reconcile); the relay publishes
-- outbox.via as the CloudEvents extension attribute gatehousevia. Adding a
-- column with a constant default rewrites no partition.
-- reconcile_passes holds one row per provider: covered_until, the end of
-- the window the last complete pass covered (the next pass starts an
-- overlap before it); a pass stopped by its bound (max_events) leaves the
-- part it did not reach, [partial_from, partial_before), to the next pass,
-- which then sets covered_until to partial_to; and what the last pass
-- did, for the console and the metrics.
-- +goose Up
ALTER TABLE inbox ADD COLUMN via text NOT NULL DEFAULT 'webhook'
    CONSTRAINT inbox_via_check CHECK (via IN ('webhook', 'reconcile'));
ALTER TABLE outbox ADD COLUMN via text NOT NULL DEFAULT 'webhook'
    CONSTRAINT outbox_via_check CHECK (via IN ('webhook', 'reconcile'));

CREATE TABLE reconcile_passes (
    provider        text PRIMARY KEY,
    way             text NOT NULL CHECK (way IN ('backfill', 'redeliver')),
    covered_until   timestamptz,
    partial_from    timestamptz,
    partial_before  timestamptz,
    partial_to      timestamptz,
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    result          text NOT NULL CHECK (result IN ('running', 'ok', 'failed')),
    listed          integer NOT NULL DEFAULT 0,
    missing         integer NOT NULL DEFAULT 0,
    closed          integer NOT NULL DEFAULT 0,
    error           text,
    last_success_at timestamptz
);

-- +goose Down
DROP TABLE reconcile_passes;
ALTER TABLE outbox DROP COLUMN via;
ALTER TABLE inbox DROP COLUMN via;
