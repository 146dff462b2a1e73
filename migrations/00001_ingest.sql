-- +goose Up
-- The inbox: one row per (provider, event_id), written by the receiver.
CREATE TABLE inbox (
    provider          text        NOT NULL,
    event_id          text        NOT NULL,
    event_type        text        NOT NULL,
    payload           jsonb       NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    event_created_at  timestamptz,
    verified          boolean     NOT NULL,
    secret_id         text        NOT NULL,
    processing_state  text        NOT NULL DEFAULT 'pending',
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, event_id)
);
CREATE INDEX inbox_state_idx ON inbox (processing_state, received_at);

-- The outbox follows Debezium's outbox conventions (id, aggregatetype,
-- aggregateid, type, payload) so Debezium's Outbox Event Router can read it.
CREATE TABLE outbox (
    id             uuid        PRIMARY KEY,
    aggregatetype  text        NOT NULL,
    aggregateid    text        NOT NULL,
    type           text        NOT NULL,
    payload        jsonb       NOT NULL,
    event_id       text        NOT NULL,
    topic          text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    seq            bigint      GENERATED ALWAYS AS IDENTITY,
    published_at   timestamptz
);
CREATE INDEX outbox_unsent_idx ON outbox (seq) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE outbox;
DROP TABLE inbox;
