-- +goose Up
-- consumers_erase_events removes the consumers' projections that the given
-- events were applied under, when an operator erases those events (by
-- event, by object or by path: ingest.Erase). The consumers store a
-- projection under the fetch rule's key (HubSpot contact/123 for the
-- aggregate id 123, GitHub's node_id, Shopify's admin_graphql_api_id...),
-- not under the event's aggregate id, so consumers_erase_object alone
-- missed them. consumers_apply records the key every event was applied
-- under in processed_events.object_id, in the transaction of the effect,
-- and keeps it as long as the event's dedupe key: that is where the key is
-- found. It returns how many provider_objects rows it removed.
-- +goose StatementBegin
CREATE FUNCTION consumers_erase_events(p_provider text, p_event_ids text[]) RETURNS integer
LANGUAGE sql AS $$
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
DROP FUNCTION consumers_erase_events(text, text[]);
