-- Ordered delivery per object (issue 49): a forward destination with
-- order: per_object parks a key's later events behind the one that failed,
-- here beside the consumers' other state, so the order holds through
-- restarts and rebalances. parked_keys is one row per (destination,
-- provider, Kafka key) that waits: its head event (the one that failed,
-- travelling the retry ladder) with its error, and its state: waiting (the
-- head is not finished), ready (the head succeeded, or was dead-lettered
-- under on_dead: skip: the parked events go out in order), held (the head
-- was dead-lettered under on_dead: hold: an operator releases it).
-- parked_events are the key's later events in topic order (seq), each
-- with what its delivery needs. Both are the consumers' (ARCHITECTURE.md).
-- Erasing an event (consumers_erase_events) removes it from
-- parked_events (an erased event is never delivered: the handlers skip
-- it), and a key waiting behind an erased head is made ready, since that
-- head will not be delivered either.
-- There is no 00007 on the branch that adds this file: another branch adds
-- it, and this one is numbered after it.
-- +goose Up
CREATE TABLE parked_keys (
    destination   text        NOT NULL,
    provider      text        NOT NULL,
    kafka_key     text        NOT NULL,
    head_event_id text        NOT NULL,
    head_error    text        NOT NULL DEFAULT '',
    state         text        NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'ready', 'held')),
    on_dead       text        NOT NULL DEFAULT 'skip' CHECK (on_dead IN ('skip', 'hold')),
    attempts      integer     NOT NULL DEFAULT 0,
    next_at       timestamptz NOT NULL DEFAULT now(),
    parked_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (destination, provider, kafka_key)
);
CREATE INDEX parked_keys_head ON parked_keys (provider, head_event_id);
CREATE INDEX parked_keys_ready ON parked_keys (next_at) WHERE state = 'ready';

CREATE TABLE parked_events (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    destination text        NOT NULL,
    provider    text        NOT NULL,
    kafka_key   text        NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    envelope    bytea       NOT NULL,
    object      bytea,
    created_at  timestamptz,
    received_at timestamptz,
    head        boolean     NOT NULL DEFAULT false, -- the key's head, parked while the circuit is open: delivered first
    parked_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (destination, provider, kafka_key, event_id),
    FOREIGN KEY (destination, provider, kafka_key) REFERENCES parked_keys ON DELETE CASCADE
);
CREATE INDEX parked_events_key ON parked_events (destination, provider, kafka_key, seq);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.consumers_erase_events(p_provider text, p_event_ids text[]) RETURNS integer
    LANGUAGE sql
    AS $$
    UPDATE forward_deliveries SET body = NULL, headers = NULL
    WHERE provider = p_provider AND event_id = ANY (p_event_ids) AND (body IS NOT NULL OR headers IS NOT NULL);
    DELETE FROM parked_events WHERE provider = p_provider AND event_id = ANY (p_event_ids);
    UPDATE parked_keys SET state = 'ready', head_error = 'the head event was erased', next_at = now()
    WHERE provider = p_provider AND head_event_id = ANY (p_event_ids) AND state = 'waiting';
    WITH d AS (
        DELETE FROM provider_objects o
        WHERE o.provider = p_provider AND o.object_id IN (
            SELECT pe.object_id FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = ANY (p_event_ids) AND pe.object_id IS NOT NULL)
        RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.consumers_erase_events(p_provider text, p_event_ids text[]) RETURNS integer
    LANGUAGE sql
    AS $$
    UPDATE forward_deliveries SET body = NULL, headers = NULL
    WHERE provider = p_provider AND event_id = ANY (p_event_ids) AND (body IS NOT NULL OR headers IS NOT NULL);
    WITH d AS (
        DELETE FROM provider_objects o
        WHERE o.provider = p_provider AND o.object_id IN (
            SELECT pe.object_id FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = ANY (p_event_ids) AND pe.object_id IS NOT NULL)
        RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;
-- +goose StatementEnd
DROP TABLE parked_events;
DROP TABLE parked_keys;
