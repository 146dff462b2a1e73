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
    outbox_rows   integer     NOT NULL    -- unpublished or retained outbox copies erased
);
CREATE INDEX erasures_requested_at_idx ON erasures (requested_at);

-- +goose Down
DROP TABLE erasures;
