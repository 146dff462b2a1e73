-- What a forward destination was sent (issue 38): a delivery shaped by a
-- transform is recorded with the body and the extra headers as sent, or
-- as dropped when the transform cancelled it, so the console can show an
-- operator what the team's service received. A delivery sent as built
-- (no transform) keeps NULL: its body is the event's envelope. Erasing an
-- event clears what was recorded of it here too (consumers_erase_events).
-- +goose Up
ALTER TABLE forward_deliveries
    ADD COLUMN body bytea,
    ADD COLUMN headers jsonb,
    ADD COLUMN dropped boolean NOT NULL DEFAULT false;

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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.consumers_erase_events(p_provider text, p_event_ids text[]) RETURNS integer
    LANGUAGE sql
    AS $$
    WITH d AS (
        DELETE FROM provider_objects o
        WHERE o.provider = p_provider AND o.object_id IN (
            SELECT pe.object_id FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = ANY (p_event_ids) AND pe.object_id IS NOT NULL)
        RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;
-- +goose StatementEnd
ALTER TABLE forward_deliveries DROP COLUMN dropped, DROP COLUMN headers, DROP COLUMN body;
