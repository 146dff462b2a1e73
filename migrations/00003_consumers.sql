-- +goose Up
-- Consumers: processing state on the inbox row, the projection of provider
-- objects, event-id dedupe of business effects, the effect log, and replays.
--
-- inbox.processing_state (documented in consumers/state.go):
--   pending → processing → succeeded | ignored_stale | skipped
--                        → retrying → processing → …
--                        → dead
--   dead | retrying | pending | processing → pending   (replay)
ALTER TABLE inbox
    ADD COLUMN processing_started_at timestamptz,
    ADD COLUMN processed_at          timestamptz,
    ADD COLUMN next_attempt_at       timestamptz,
    ADD COLUMN last_error_class      text,
    ADD COLUMN replays               integer NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD CONSTRAINT inbox_processing_state_check CHECK (processing_state IN
    ('pending', 'processing', 'succeeded', 'ignored_stale', 'skipped', 'retrying', 'dead'));

-- One row per provider object: the latest authoritative state fetched from
-- the provider's API. version only grows (the version guard).
CREATE TABLE provider_objects (
    provider       text        NOT NULL,
    object_id      text        NOT NULL,
    object_type    text        NOT NULL,
    version        bigint      NOT NULL,
    data           jsonb       NOT NULL,
    last_event_id  text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, object_id)
);

-- Dedupe of business effects by event id, written in the transaction of the effect.
CREATE TABLE processed_events (
    provider      text        NOT NULL,
    event_id      text        NOT NULL,
    outcome       text        NOT NULL,   -- succeeded, ignored_stale or skipped
    object_id     text,
    version       bigint,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, event_id)
);

-- The business effect log: one row per applied object change. Exactly one
-- row per applied event is the "effect happens once" invariant.
CREATE TABLE provider_object_changes (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider      text        NOT NULL,
    object_id     text        NOT NULL,
    event_id      text        NOT NULL,
    event_type    text        NOT NULL,
    old_version   bigint,
    new_version   bigint      NOT NULL,
    applied_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_object_changes_object_idx ON provider_object_changes (provider, object_id, id);

-- Every replay of a stored, verified event (gatehouse replay).
CREATE TABLE replays (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text        NOT NULL,
    event_id           text        NOT NULL,
    outbox_id          uuid        NOT NULL,
    previous_state     text        NOT NULL,
    previous_attempts  integer     NOT NULL,
    previous_error     text,
    forced             boolean     NOT NULL DEFAULT false,
    requested_by       text        NOT NULL,
    requested_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replays_event_idx ON replays (provider, event_id);

-- consumers_claim moves an inbox row to processing and counts the attempt.
-- It returns the state found (NULL: no verified row); a final state is left
-- unchanged (o_attempts 0). The claim only makes "processing" visible and
-- counts attempts, so it commits without waiting for the WAL flush; the
-- effect's own commit (consumers_apply) is durable and flushes it too.
-- +goose StatementBegin
CREATE FUNCTION consumers_claim(p_provider text, p_event_id text, OUT o_prev text, OUT o_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT processing_state INTO o_prev FROM inbox
    WHERE provider = p_provider AND event_id = p_event_id AND verified FOR UPDATE;
    IF NOT FOUND OR o_prev IN ('succeeded', 'ignored_stale', 'skipped') THEN
        o_attempts := 0;
        RETURN;
    END IF;
    UPDATE inbox SET processing_state = 'processing', attempts = inbox.attempts + 1,
        processing_started_at = now(), next_attempt_at = NULL, updated_at = now()
    WHERE provider = p_provider AND event_id = p_event_id
    RETURNING inbox.attempts INTO o_attempts;
END $$;
-- +goose StatementEnd

-- consumers_apply performs the business effect of one event exactly once,
-- in the caller's (single-statement) transaction: the event-id dedupe row,
-- the projection upsert under the version guard, the effect log row and the
-- inbox state. p_object_id NULL records an event without an effect. It
-- returns succeeded, ignored_stale, skipped, or duplicate (the event id was
-- processed before: nothing changes but the inbox row's final state).
-- +goose StatementBegin
CREATE FUNCTION consumers_apply(p_provider text, p_event_id text, p_event_type text,
    p_object_id text, p_object_type text, p_version bigint, p_data jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_old   bigint;
    v_state text;
BEGIN
    INSERT INTO processed_events (provider, event_id, outcome, object_id, version)
    VALUES (p_provider, p_event_id, CASE WHEN p_object_id IS NULL THEN 'skipped' ELSE 'succeeded' END, p_object_id, p_version)
    ON CONFLICT (provider, event_id) DO NOTHING;
    IF NOT FOUND THEN
        UPDATE inbox i SET processing_state = pe.outcome, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
        FROM processed_events pe
        WHERE pe.provider = p_provider AND pe.event_id = p_event_id AND i.provider = p_provider AND i.event_id = p_event_id;
        RETURN 'duplicate';
    END IF;
    IF p_object_id IS NULL THEN
        v_state := 'skipped';
    ELSE
        SELECT version INTO v_old FROM provider_objects WHERE provider = p_provider AND object_id = p_object_id FOR UPDATE;
        INSERT INTO provider_objects AS o (provider, object_id, object_type, version, data, last_event_id)
        VALUES (p_provider, p_object_id, p_object_type, p_version, p_data, p_event_id)
        ON CONFLICT (provider, object_id) DO UPDATE SET object_type = EXCLUDED.object_type, version = EXCLUDED.version,
            data = EXCLUDED.data, last_event_id = EXCLUDED.last_event_id, updated_at = now()
        WHERE o.version < EXCLUDED.version;   -- the version guard
        IF FOUND THEN
            INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, old_version, new_version)
            VALUES (p_provider, p_object_id, p_event_id, p_event_type, v_old, p_version);
            v_state := 'succeeded';
        ELSE
            UPDATE processed_events SET outcome = 'ignored_stale' WHERE provider = p_provider AND event_id = p_event_id;
            v_state := 'ignored_stale';
        END IF;
    END IF;
    UPDATE inbox SET processing_state = v_state, processed_at = clock_timestamp(), updated_at = now(),
        last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
    WHERE provider = p_provider AND event_id = p_event_id;
    RETURN v_state;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION consumers_apply(text, text, text, text, text, bigint, jsonb);
DROP FUNCTION consumers_claim(text, text);
DROP TABLE replays;
DROP TABLE provider_object_changes;
DROP TABLE processed_events;
DROP TABLE provider_objects;
ALTER TABLE inbox DROP CONSTRAINT inbox_processing_state_check;
ALTER TABLE inbox
    DROP COLUMN processing_started_at,
    DROP COLUMN processed_at,
    DROP COLUMN next_attempt_at,
    DROP COLUMN last_error_class,
    DROP COLUMN replays;
