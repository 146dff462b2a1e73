-- +goose Up
-- The audit of every erasure (gatehouse erase, POST /api/v1/erasures): who,
-- when, which selector, how many stored events lost their payload. The
-- dedupe keys are kept, so a redelivery of an erased event is still refused.
CREATE TABLE erasures (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    requested_by  text        NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    provider      text        NOT NULL,
    selector      text        NOT NULL,   -- event <id> | object <id> | path <dotted.path> = <value>
    reason        text        NOT NULL DEFAULT '',
    events        integer     NOT NULL,   -- stored events whose payload was erased
    outbox_rows   integer     NOT NULL,   -- unpublished or retained outbox copies erased
    objects       integer     NOT NULL    -- consumers' projections of the object removed
);
CREATE INDEX erasures_requested_at_idx ON erasures (requested_at);

-- consumers_erase_object removes the consumers' projection of one provider
-- object (provider_objects.data is the provider's copy of it, personal
-- data included) when an operator erases every event about it. The
-- consumers own provider_objects; ingest's erasure reaches it only through
-- this function. It returns how many rows it removed (0 or 1).
-- +goose StatementBegin
CREATE FUNCTION consumers_erase_object(p_provider text, p_object_id text) RETURNS integer
LANGUAGE sql AS $$
    WITH d AS (DELETE FROM provider_objects WHERE provider = p_provider AND object_id = p_object_id RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION consumers_erase_object(text, text);
DROP TABLE erasures;
