-- +goose Up
-- consumers_claim_many is consumers_claim for many events in one statement:
-- it moves each verified, unfinished inbox row to processing and counts the
-- attempt. It returns one row per input position (o_ord, 1-based): the
-- state found (NULL: no verified row) and the attempts after the claim (0
-- when nothing was claimed: missing or final). Rows are locked in input
-- order: callers pass them sorted, so concurrent batches never wait on each
-- other in a cycle. Like consumers_claim it commits without waiting for the
-- WAL flush; the batch's apply transaction is durable and flushes it too.
-- +goose StatementBegin
CREATE FUNCTION consumers_claim_many(p_providers text[], p_event_ids text[])
RETURNS TABLE (o_ord integer, o_prev text, o_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
    WITH input AS (
        SELECT t.provider, t.event_id, t.ord::integer AS ord
        FROM unnest(p_providers, p_event_ids) WITH ORDINALITY AS t(provider, event_id, ord)
    ), cur AS (
        SELECT i.ord, i.provider, i.event_id, x.processing_state
        FROM input i
        LEFT JOIN LATERAL (
            SELECT processing_state FROM inbox
            WHERE inbox.provider = i.provider AND inbox.event_id = i.event_id AND verified
            FOR UPDATE
        ) x ON true
    ), upd AS (
        UPDATE inbox SET processing_state = 'processing', attempts = inbox.attempts + 1,
            processing_started_at = now(), next_attempt_at = NULL, updated_at = now()
        FROM cur
        WHERE inbox.provider = cur.provider AND inbox.event_id = cur.event_id
          AND cur.processing_state IS NOT NULL
          AND cur.processing_state NOT IN ('succeeded', 'ignored_stale', 'skipped')
        RETURNING cur.ord, inbox.attempts
    )
    SELECT cur.ord, cur.processing_state, coalesce(upd.attempts, 0)
    FROM cur LEFT JOIN upd ON upd.ord = cur.ord
    ORDER BY cur.ord;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION consumers_claim_many(text[], text[]);
