-- +goose Up
-- forward_deliveries records, for an event forwarded to several
-- destinations, each destination that answered 2xx, so a retry of the event
-- goes only to the destinations that failed (consumers/forward_ledger.go).
-- destination is the destination's key: scheme://host:port/path. An event
-- matching one destination writes no row. Rows live as long as
-- processed_events (consumers/retention.go).
CREATE TABLE forward_deliveries (
    provider     text        NOT NULL,
    event_id     text        NOT NULL,
    destination  text        NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, event_id, destination)
);
CREATE INDEX forward_deliveries_delivered_at ON forward_deliveries (delivered_at);

-- A forced replay forgets the deliveries too: every destination gets the
-- event again.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION consumers_forget(p_provider text, p_event_id text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
    DELETE FROM forward_deliveries WHERE provider = p_provider AND event_id = p_event_id;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION consumers_forget(p_provider text, p_event_id text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
$$;
-- +goose StatementEnd
DROP TABLE forward_deliveries;
