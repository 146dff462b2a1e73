-- +goose Up
-- consumers_apply learns the effect of a forward (consumers/forward.go): an
-- object type without an object id is an action done elsewhere, recorded
-- succeeded with no projection write. p_object_id and p_object_type both
-- NULL still record a skipped event.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION consumers_apply(p_provider text, p_event_id text, p_event_type text,
    p_object_id text, p_object_type text, p_version bigint, p_data jsonb) RETURNS text
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
        UPDATE inbox i SET processing_state = pe.outcome, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
        FROM processed_events pe
        WHERE pe.provider = p_provider AND pe.event_id = p_event_id AND i.provider = p_provider AND i.event_id = p_event_id;
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
    UPDATE inbox SET processing_state = v_state, processed_at = clock_timestamp(), updated_at = now(),
        last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
    WHERE provider = p_provider AND event_id = p_event_id;
    RETURN v_state;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION consumers_apply(p_provider text, p_event_id text, p_event_type text,
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
