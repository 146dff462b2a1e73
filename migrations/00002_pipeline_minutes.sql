-- Per-minute aggregates of the pipeline, the console's charts' only source
-- (never a GROUP BY over the inbox): each gatehouse serve adds what its
-- receiver answered per provider and minute (ingest.Rollup), and samples
-- each stage's queue age into the row of provider '' (the stage-wide row).
-- Kept storage.chart_retention (48 h), deleted by ingest's maintenance.
-- +goose Up
CREATE TABLE pipeline_minutes (
    provider      text        NOT NULL,               -- '' : the stage-wide row (queue ages)
    minute        timestamptz NOT NULL,
    accepted      integer     NOT NULL DEFAULT 0,     -- new events stored (2xx)
    duplicate     integer     NOT NULL DEFAULT 0,     -- redeliveries (2xx, nothing stored)
    rejected      integer     NOT NULL DEFAULT 0,     -- 4xx: signature, malformed, too large, slow
    refused       integer     NOT NULL DEFAULT 0,     -- 5xx and 429: overload, database unavailable
    ack_buckets   integer[]   NOT NULL DEFAULT '{}',  -- answers per ack latency bucket (ingest.AckBuckets, then +Inf)
    relay_age_s   real,                               -- the oldest outbox row no relay has published, max of the minute
    consume_age_s real,                               -- the oldest inbox row not yet finished by the consumers, max of the minute
    PRIMARY KEY (provider, minute)
);
CREATE INDEX pipeline_minutes_minute_idx ON pipeline_minutes (minute);

-- +goose Down
DROP TABLE pipeline_minutes;
