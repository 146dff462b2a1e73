-- +goose Up
-- The consumers find an event's inbox row by (provider, event_id), which
-- the partitioned inbox (00020) can only answer by probing every partition.
-- The relay writes the row's received_at on each record
-- (gatehouse_received_at, schemas.HeaderReceivedAt); these versions of
-- consumers_claim_many and consumers_apply take it as a hint and read one
-- partition (received_at is the partition key), falling back to the
-- unpruned lookup when the hint finds no row (a record of a replay or of
-- another relay, or none given: NULL). consumers_claim_many returns the
-- row's received_at, so the apply and the failure update that follow are
-- pruned even when the record carried no hint. The versions without the
-- hint stay for binaries of the previous release during an upgrade.

-- +goose StatementBegin
CREATE FUNCTION consumers_claim_many(p_providers text[], p_event_ids text[], p_received_at timestamptz[])
RETURNS TABLE (o_ord integer, o_prev text, o_attempts integer, o_received_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    -- Each row is locked as it is found, in input order; each update is a
    -- statement of its own, so it is pruned to the row's partition (an
    -- UPDATE … FROM the found rows was planned as a join over every
    -- partition).
    FOR r IN
        WITH input AS (
            SELECT t.provider, t.event_id, t.received_at, t.ord::integer AS ord
            FROM unnest(p_providers, p_event_ids, p_received_at) WITH ORDINALITY AS t(provider, event_id, received_at, ord)
        ), hinted AS (
            SELECT i.ord, i.provider, i.event_id, x.processing_state, x.received_at
            FROM input i
            LEFT JOIN LATERAL (
                SELECT inbox.processing_state, inbox.received_at FROM inbox
                WHERE inbox.provider = i.provider AND inbox.event_id = i.event_id AND inbox.received_at = i.received_at AND verified
                FOR UPDATE
            ) x ON true
        )
        -- The unpruned lookup only for the events the hint did not find:
        -- gated on h.processing_state IS NULL, a one-time filter checked
        -- before any scan.
        SELECT h.ord, h.provider, h.event_id, coalesce(h.processing_state, y.processing_state) AS processing_state,
            coalesce(h.received_at, y.received_at) AS received_at
        FROM hinted h
        LEFT JOIN LATERAL (
            SELECT inbox.processing_state, inbox.received_at FROM inbox
            WHERE inbox.provider = h.provider AND inbox.event_id = h.event_id AND verified AND h.processing_state IS NULL
            FOR UPDATE
        ) y ON true
        ORDER BY h.ord
    LOOP
        o_ord := r.ord;
        o_prev := r.processing_state;
        o_received_at := r.received_at;
        o_attempts := 0;
        IF r.processing_state IS NOT NULL AND r.processing_state NOT IN ('succeeded', 'ignored_stale', 'skipped') THEN
            UPDATE inbox SET processing_state = 'processing', attempts = inbox.attempts + 1,
                processing_started_at = now(), next_attempt_at = NULL, updated_at = now()
            WHERE provider = r.provider AND event_id = r.event_id AND received_at = r.received_at
            RETURNING attempts INTO o_attempts;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
-- +goose StatementEnd

-- consumers_apply with the event's received_at (NULL: unknown): the same
-- effect as the version without it (00030), its inbox updates pruned to
-- the partition of p_received_at, or unpruned when that finds no row.
-- +goose StatementBegin
CREATE FUNCTION consumers_apply(p_provider text, p_event_id text, p_event_type text,
    p_object_id text, p_object_type text, p_version bigint, p_data jsonb, p_received_at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_old   bigint;
    v_state text;
BEGIN
    INSERT INTO processed_events (provider, event_id, outcome, object_id, version)
    VALUES (p_provider, p_event_id, CASE WHEN p_object_id IS NULL AND p_object_type IS NULL THEN 'skipped' ELSE 'succeeded' END,
            p_object_id, p_version)
    ON CONFLICT (provider, event_id) DO NOTHING;
    IF NOT FOUND THEN
        SELECT outcome INTO v_state FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
        PERFORM consumers_set_final(p_provider, p_event_id, p_received_at, v_state, NULL);
        RETURN 'duplicate';
    END IF;
    IF p_object_id IS NULL AND p_object_type IS NULL THEN
        v_state := 'skipped';
    ELSIF p_object_id IS NULL THEN
        v_state := 'succeeded';   -- done elsewhere (forward): nothing projected
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
    PERFORM consumers_set_final(p_provider, p_event_id, p_received_at, v_state, clock_timestamp());
    RETURN v_state;
END $$;
-- +goose StatementEnd

-- consumers_set_final writes a final state on the event's inbox row(s):
-- with p_processed_at (a fresh effect) the error fields are cleared and
-- processed_at set; without (a duplicate) processed_at is kept, else the
-- dedupe row's. Pruned to p_received_at's partition when that finds the
-- row; otherwise every partition is probed.
-- +goose StatementBegin
CREATE FUNCTION consumers_set_final(p_provider text, p_event_id text, p_received_at timestamptz, p_state text,
    p_processed_at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_received_at IS NOT NULL THEN
        IF p_processed_at IS NOT NULL THEN
            UPDATE inbox SET processing_state = p_state, processed_at = p_processed_at, updated_at = now(),
                last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
            WHERE provider = p_provider AND event_id = p_event_id AND received_at = p_received_at;
        ELSE
            UPDATE inbox i SET processing_state = p_state, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
            FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = p_event_id
              AND i.provider = p_provider AND i.event_id = p_event_id AND i.received_at = p_received_at;
        END IF;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    IF p_processed_at IS NOT NULL THEN
        UPDATE inbox SET processing_state = p_state, processed_at = p_processed_at, updated_at = now(),
            last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
        WHERE provider = p_provider AND event_id = p_event_id;
    ELSE
        UPDATE inbox i SET processing_state = p_state, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
        FROM processed_events pe
        WHERE pe.provider = p_provider AND pe.event_id = p_event_id AND i.provider = p_provider AND i.event_id = p_event_id;
    END IF;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION consumers_apply(text, text, text, text, text, bigint, jsonb, timestamptz);
DROP FUNCTION consumers_set_final(text, text, timestamptz, text, timestamptz);
DROP FUNCTION consumers_claim_many(text[], text[], timestamptz[]);
