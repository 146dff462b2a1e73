-- +goose Up
-- Storage bounded by time (README "Retention"): the inbox becomes a table
-- partitioned by received_at, and the uniqueness of (provider, event_id)
-- moves to dedupe_keys, a slim table partitioned by generation (gen, the
-- start of the key partition the key was written in). Partitions are
-- created ahead and dropped whole by the running processes (ingest's
-- storage maintenance); no row of either table is deleted one by one.
--
-- Migration from the unpartitioned inbox (00001–00010): the old table is
-- kept as it is, renamed inbox_legacy and attached as the partition of
-- everything received before the migration (bounds MINVALUE to the cut);
-- its keys are copied into dedupe_keys_legacy so the receiver keeps
-- refusing those ids. The migration holds an exclusive lock on inbox for
-- the whole transaction: one scan of the old inbox for the attach check,
-- one for the key copy and the key index build (see README "Retention",
-- "Upgrading an installation" for the measured downtime per million rows).

-- Every time partition gatehouse created, by parent table. The receiver
-- reads the dedupe_keys rows of this table to find the key partition(s)
-- covering now(); the maintenance reads it to create ahead and drop.
CREATE TABLE storage_partitions (
    parent  text        NOT NULL,
    name    text        NOT NULL UNIQUE,
    starts  timestamptz NOT NULL,
    ends    timestamptz NOT NULL,
    PRIMARY KEY (parent, starts),
    CHECK (starts < ends)
);

-- Partitions whose rows of one provider were deleted because that
-- provider's retention is shorter than the partition's (ingest's sweep),
-- so each partition is purged once per provider.
CREATE TABLE storage_purges (
    name      text NOT NULL REFERENCES storage_partitions (name) ON DELETE CASCADE,
    provider  text NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, provider)
);

-- The per-partition indexes of each partitioned table (the parents carry
-- none, so the legacy partition keeps its own indexes unchanged). The
-- inbox's (received_at, provider, event_id) serves the API's and the
-- console's newest-first keyset pages: with partitions in time order,
-- PostgreSQL reads the newest partitions' index and stops at the page.
CREATE TABLE storage_tables (
    parent   text   PRIMARY KEY,
    indexes  text[] NOT NULL
);
INSERT INTO storage_tables VALUES
    ('inbox', ARRAY['(provider, event_id)', '(processing_state, received_at)', '(received_at, provider, event_id)']),
    ('dedupe_keys', ARRAY[]::text[]);

-- storage_create_partition creates the partition [p_starts, p_ends) of
-- p_parent: a plain table LIKE the parent with the listed indexes, then
-- attached (SHARE UPDATE EXCLUSIVE on the parent: writers are not blocked),
-- then recorded in storage_partitions. It returns the partition's name.
-- +goose StatementBegin
CREATE FUNCTION storage_create_partition(p_parent text, p_starts timestamptz, p_ends timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_name text := p_parent || '_p' || to_char(p_starts AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
    v_idx  text;
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name, p_parent);
    FOR v_idx IN SELECT unnest(indexes) FROM storage_tables WHERE parent = p_parent LOOP
        EXECUTE format('CREATE INDEX ON %I %s', v_name, v_idx);
    END LOOP;
    IF p_parent = 'dedupe_keys' THEN
        EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (provider, event_id, gen)', v_name);
    END IF;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_parent, v_name, p_starts, p_ends);
    INSERT INTO storage_partitions (parent, name, starts, ends) VALUES (p_parent, v_name, p_starts, p_ends);
    RETURN v_name;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    v_cut  timestamptz;
    v_next timestamptz;
BEGIN
    LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE;
    -- After the lock: every row already committed was received before now.
    v_cut := clock_timestamp();
    v_next := date_bin('1 day', v_cut, timestamptz '2000-01-01 00:00:00+00') + interval '1 day';

    ALTER TABLE inbox RENAME TO inbox_legacy;
    ALTER INDEX inbox_pkey RENAME TO inbox_legacy_pkey;
    ALTER INDEX inbox_state_idx RENAME TO inbox_legacy_state_idx;
    CREATE TABLE inbox (LIKE inbox_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (received_at);
    EXECUTE format('ALTER TABLE inbox ATTACH PARTITION inbox_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cut);
    INSERT INTO storage_partitions VALUES ('inbox', 'inbox_legacy', '-infinity', v_cut);

    CREATE TABLE dedupe_keys (
        provider  text        NOT NULL,
        event_id  text        NOT NULL,
        gen       timestamptz NOT NULL,
        PRIMARY KEY (provider, event_id, gen)
    ) PARTITION BY RANGE (gen);
    CREATE TABLE dedupe_keys_legacy AS SELECT provider, event_id, received_at AS gen FROM inbox_legacy;
    ALTER TABLE dedupe_keys_legacy ALTER COLUMN provider SET NOT NULL, ALTER COLUMN event_id SET NOT NULL,
        ALTER COLUMN gen SET NOT NULL, ADD PRIMARY KEY (provider, event_id, gen);
    EXECUTE format('ALTER TABLE dedupe_keys ATTACH PARTITION dedupe_keys_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cut);
    INSERT INTO storage_partitions VALUES ('dedupe_keys', 'dedupe_keys_legacy', '-infinity', v_cut);

    -- The first partitions, up to the end of tomorrow (UTC); the running
    -- maintenance keeps creating ahead from there.
    PERFORM storage_create_partition('inbox', v_cut, v_next);
    PERFORM storage_create_partition('dedupe_keys', v_cut, v_next);
    PERFORM storage_create_partition('inbox', v_next, v_next + interval '1 day');
    PERFORM storage_create_partition('dedupe_keys', v_next, v_next + interval '1 day');
END $$;
-- +goose StatementEnd

-- +goose Down
-- Back to one unpartitioned inbox (every stored row, whatever partition it
-- is in), keyed by (provider, event_id); dedupe keys without a stored
-- payload are lost.
-- +goose StatementBegin
DO $$
BEGIN
    CREATE TABLE inbox_unpartitioned (LIKE inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    INSERT INTO inbox_unpartitioned SELECT DISTINCT ON (provider, event_id) * FROM inbox ORDER BY provider, event_id, received_at;
    DROP TABLE inbox;
    DROP TABLE dedupe_keys;
    ALTER TABLE inbox_unpartitioned RENAME TO inbox;
    ALTER TABLE inbox ADD PRIMARY KEY (provider, event_id);
    CREATE INDEX inbox_state_idx ON inbox (processing_state, received_at);
END $$;
-- +goose StatementEnd
DROP FUNCTION storage_create_partition(text, timestamptz, timestamptz);
DROP TABLE storage_tables;
DROP TABLE storage_purges;
DROP TABLE storage_partitions;
