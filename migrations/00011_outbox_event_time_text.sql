-- +goose Up
-- outbox.event_time becomes the provider's creation time exactly as the
-- record's ce_time header carries it: the provider's RFC 3339 text (every
-- fraction digit, its offset), or its Unix time written as RFC 3339 at the
-- precision given. timestamptz kept microseconds only, so a created_at of
-- ...41.314187999Z left the relay as ...41.314187Z, and a wrapped
-- envelope's own created_at disagreed with its ce_time. The receiver writes
-- the same text it put in the envelope; the relay publishes it unchanged
-- (so does Debezium's Outbox Event Router: a text column is a string
-- header). Rows already waiting keep the microseconds they were stored with.
-- inbox.event_created_at stays a timestamptz, for queries.
ALTER TABLE outbox ALTER COLUMN event_time TYPE text
    USING to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- +goose Down
ALTER TABLE outbox ALTER COLUMN event_time TYPE timestamptz USING event_time::timestamptz;
