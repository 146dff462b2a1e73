-- +goose Up
-- The provider's creation time of the event (the record's ce_time header),
-- written by the receiver from the envelope it already parsed, so the relay
-- need not parse every payload again to find it. NULL for rows written
-- before this column or by other writers: the relay then reads the time
-- from the payload (created_at, created or timestamp) as before.
ALTER TABLE outbox ADD COLUMN event_time timestamptz;

-- +goose Down
ALTER TABLE outbox DROP COLUMN event_time;
