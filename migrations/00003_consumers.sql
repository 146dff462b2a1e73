-- +goose Up
-- Consumers: processing state on the inbox row, the projection of provider
-- objects, event-id dedupe of business effects, the effect log, and replays.
--
-- inbox.processing_state (documented in consumers/state.go):
--   pending → processing → succeeded | ignored_stale | skipped
--                        → retrying → processing → …
--                        → dead
--   dead | retrying | pending | processing → pending   (replay)
ALTER TABLE inbox
    ADD COLUMN processing_started_at timestamptz,
    ADD COLUMN processed_at          timestamptz,
    ADD COLUMN next_attempt_at       timestamptz,
    ADD COLUMN last_error_class      text,
    ADD COLUMN replays               integer NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD CONSTRAINT inbox_processing_state_check CHECK (processing_state IN
    ('pending', 'processing', 'succeeded', 'ignored_stale', 'skipped', 'retrying', 'dead'));

-- One row per provider object: the latest authoritative state fetched from
-- the provider's API. version only grows (the version guard).
CREATE TABLE provider_objects (
    provider       text        NOT NULL,
    object_id      text        NOT NULL,
    object_type    text        NOT NULL,
    version        bigint      NOT NULL,
    data           jsonb       NOT NULL,
    last_event_id  text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, object_id)
);

-- Dedupe of business effects by event id, written in the transaction of the effect.
CREATE TABLE processed_events (
    provider      text        NOT NULL,
    event_id      text        NOT NULL,
    outcome       text        NOT NULL,   -- succeeded, ignored_stale or skipped
    object_id     text,
    version       bigint,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, event_id)
);

-- The business effect log: one row per applied object change. Exactly one
-- row per applied event is the "effect happens once" invariant.
CREATE TABLE provider_object_changes (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider      text        NOT NULL,
    object_id     text        NOT NULL,
    event_id      text        NOT NULL,
    event_type    text        NOT NULL,
    old_version   bigint,
    new_version   bigint      NOT NULL,
    applied_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_object_changes_object_idx ON provider_object_changes (provider, object_id, id);

-- Every replay of a stored, verified event (gatehouse replay).
CREATE TABLE replays (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text        NOT NULL,
    event_id           text        NOT NULL,
    outbox_id          uuid        NOT NULL,
    previous_state     text        NOT NULL,
    previous_attempts  integer     NOT NULL,
    previous_error     text,
    forced             boolean     NOT NULL DEFAULT false,
    requested_by       text        NOT NULL,
    requested_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replays_event_idx ON replays (provider, event_id);

-- +goose Down
DROP TABLE replays;
DROP TABLE provider_object_changes;
DROP TABLE processed_events;
DROP TABLE provider_objects;
ALTER TABLE inbox DROP CONSTRAINT inbox_processing_state_check;
ALTER TABLE inbox
    DROP COLUMN processing_started_at,
    DROP COLUMN processed_at,
    DROP COLUMN next_attempt_at,
    DROP COLUMN last_error_class,
    DROP COLUMN replays;
