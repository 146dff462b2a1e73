-- +goose Up
-- consumers_forget removes the consumers' dedupe row of one event, so a
-- forced replay (ingest.Replay with Force) runs its handler again. The
-- consumers own processed_events; every other stage reaches it only through
-- this function, as through consumers_claim and consumers_apply. The effect
-- log and the projection are left alone: the version guard still decides
-- whether the replayed event changes the object.
-- +goose StatementBegin
CREATE FUNCTION consumers_forget(p_provider text, p_event_id text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION consumers_forget(text, text);
