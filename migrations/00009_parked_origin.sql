-- Ordered delivery per object (issue 49): a parked event keeps where its
-- record was first delivered (its main topic, partition, offset and
-- timestamp) and its outbox id, so a parked event that is dead-lettered
-- (by the drain, or by the bound) is written to the dead-letter topic as
-- the retry ladder writes one: the same key, value and event headers, and
-- gatehouse_original_* naming its first delivery. NULL: parked before this
-- migration (the position is unknown).
-- pending marks the place of an event whose record reached an ordered
-- destination's batch before its inbox row was visible (still missing 150
-- ms after the claim): the record goes down the retry ladder, and the
-- event keeps its place among its key's parked events, delivered only
-- once its retry has parked it for real (pending false) and applied.
-- replay marks a parked event whose record was a replay: the drain
-- delivers it with the Gatehouse-Replay header, as a delivery at once
-- would have been.
-- failure_issue_events gets an index by event: the failure issue of a
-- parked key's head (the API's and console's parked keys by cause).
-- +goose Up
ALTER TABLE parked_events
    ADD COLUMN origin_topic     text,
    ADD COLUMN origin_partition integer,
    ADD COLUMN origin_offset    bigint,
    ADD COLUMN origin_timestamp timestamptz,
    ADD COLUMN outbox_id        text,
    ADD COLUMN pending          boolean NOT NULL DEFAULT false,
    ADD COLUMN replay           boolean NOT NULL DEFAULT false;

-- The failure issue of a parked key's head (the API's parked keys by
-- cause) is found by the head's event.
CREATE INDEX failure_issue_events_event ON failure_issue_events (provider, event_id);

-- +goose Down
DROP INDEX failure_issue_events_event;
ALTER TABLE parked_events
    DROP COLUMN origin_topic,
    DROP COLUMN origin_partition,
    DROP COLUMN origin_offset,
    DROP COLUMN origin_timestamp,
    DROP COLUMN outbox_id,
    DROP COLUMN pending,
    DROP COLUMN replay;
