-- +goose Up
-- The outbox becomes an append-only log partitioned by created_at (README
-- "Retention", "The outbox is a log"). The relay no longer deletes or marks
-- each published row: it records how far it got as one snapshot per slot
-- (outbox_cursor), and whole partitions are dropped once they are older
-- than storage.outbox_retention and every relay's cursor is past all of
-- their rows. Each row carries the id of the transaction that wrote it
-- (txid): a row is published when its transaction is visible in the
-- cursor's snapshot (the PgQ design: committed-transaction sets, so a
-- transaction that commits late is never skipped the way a seq cursor
-- would skip it).
--
-- Migration from the delete/mark outbox (00001–00040): rows already marked
-- published are deleted; the rest (unsent) are kept as the partition
-- outbox_legacy, with this migration's transaction id, and the initial
-- cursor ('X:X:', X this transaction) counts every earlier transaction as
-- published and this one and every later one as not: so exactly the
-- unsent legacy rows and every new row are still to publish. Publications
-- that carried the old table are moved to the new one, publishing through
-- the root (publish_via_partition_root), so logical decoding (the relay,
-- Debezium) sees inserts into "outbox" whatever partition holds them.
-- The migration holds an exclusive lock on the outbox for one rewrite of
-- its unsent rows (a bounded outbox: normally seconds of traffic).

CREATE TABLE outbox_cursor (
    slot        text        PRIMARY KEY,   -- relay.slot; '*' is the default for a slot without a row
    snap        pg_snapshot NOT NULL,      -- every outbox row whose txid is visible in it is published
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
DO $$
DECLARE
    v_cut  timestamptz;
    v_next timestamptz;
    v_seq  bigint;
    v_xid  xid8 := pg_current_xact_id();
    v_pub  name;
BEGIN
    LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE;
    v_cut := clock_timestamp();
    v_next := date_bin('1 hour', v_cut, timestamptz '2000-01-01 00:00:00+00') + interval '1 hour';

    DELETE FROM outbox WHERE published_at IS NOT NULL;
    SELECT coalesce(max(seq), 0) + 1 INTO v_seq FROM outbox;

    ALTER TABLE outbox RENAME TO outbox_legacy;
    ALTER INDEX outbox_pkey RENAME TO outbox_legacy_pkey;
    ALTER TABLE outbox_legacy ALTER COLUMN seq DROP IDENTITY;
    ALTER TABLE outbox_legacy DROP COLUMN published_at;   -- and its partial indexes
    ALTER TABLE outbox_legacy ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();
    ALTER TABLE outbox_legacy ALTER COLUMN txid DROP DEFAULT;
    CREATE INDEX outbox_legacy_txid_idx ON outbox_legacy (txid, seq);

    EXECUTE format('CREATE SEQUENCE outbox_seq START WITH %s', v_seq);
    CREATE TABLE outbox (
        id             uuid        NOT NULL,
        aggregatetype  text        NOT NULL,
        aggregateid    text        NOT NULL,
        type           text        NOT NULL,
        payload        jsonb       NOT NULL,
        event_id       text        NOT NULL,
        topic          text        NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        seq            bigint      NOT NULL DEFAULT nextval('outbox_seq'),
        event_time     text,
        traceparent    text,
        txid           xid8        NOT NULL DEFAULT pg_current_xact_id()
    ) PARTITION BY RANGE (created_at);
    ALTER SEQUENCE outbox_seq OWNED BY outbox.seq;
    EXECUTE format('ALTER TABLE outbox ATTACH PARTITION outbox_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_cut);
    INSERT INTO storage_partitions VALUES ('outbox', 'outbox_legacy', '-infinity', v_cut);
    -- (txid, seq): the relay's windows, its queue age and the partition
    -- hold; (event_id): erasure finds an event's outbox copy without
    -- reading the retained log.
    CREATE INDEX outbox_legacy_event_id_idx ON outbox_legacy (event_id);
    INSERT INTO storage_tables VALUES ('outbox', ARRAY['(txid, seq)', '(event_id)']);
    PERFORM storage_create_partition('outbox', v_cut, v_next);
    PERFORM storage_create_partition('outbox', v_next, v_next + interval '1 hour');

    INSERT INTO outbox_cursor (slot, snap) VALUES ('*', format('%s:%s:', v_xid, v_xid)::pg_snapshot);

    FOR v_pub IN SELECT p.pubname FROM pg_publication p JOIN pg_publication_rel r ON r.prpubid = p.oid
                 WHERE r.prrelid = 'outbox_legacy'::regclass LOOP
        EXECUTE format('ALTER PUBLICATION %I DROP TABLE outbox_legacy', v_pub);
        EXECUTE format('ALTER PUBLICATION %I ADD TABLE outbox', v_pub);
        EXECUTE format('ALTER PUBLICATION %I SET (publish_via_partition_root = true)', v_pub);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- Back to one unpartitioned outbox: rows the default cursor has not passed
-- are kept as unsent; published ones are not copied.
-- +goose StatementBegin
DO $$
DECLARE
    v_pub name;
BEGIN
    CREATE TABLE outbox_unpartitioned (
        id             uuid        PRIMARY KEY,
        aggregatetype  text        NOT NULL,
        aggregateid    text        NOT NULL,
        type           text        NOT NULL,
        payload        jsonb       NOT NULL,
        event_id       text        NOT NULL,
        topic          text        NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        seq            bigint      GENERATED BY DEFAULT AS IDENTITY,
        published_at   timestamptz,
        event_time     text,
        traceparent    text
    );
    INSERT INTO outbox_unpartitioned (id, aggregatetype, aggregateid, type, payload, event_id, topic, created_at, seq, event_time, traceparent)
    SELECT o.id, o.aggregatetype, o.aggregateid, o.type, o.payload, o.event_id, o.topic, o.created_at, o.seq, o.event_time, o.traceparent
    FROM outbox o, (SELECT snap FROM outbox_cursor ORDER BY slot = '*' LIMIT 1) c
    WHERE NOT pg_visible_in_snapshot(o.txid, c.snap);
    PERFORM setval(pg_get_serial_sequence('outbox_unpartitioned', 'seq'), (SELECT coalesce(max(seq), 0) + 1 FROM outbox_unpartitioned), false);
    FOR v_pub IN SELECT p.pubname FROM pg_publication p JOIN pg_publication_rel r ON r.prpubid = p.oid
                 WHERE r.prrelid = 'outbox'::regclass LOOP
        EXECUTE format('ALTER PUBLICATION %I DROP TABLE outbox', v_pub);
        EXECUTE format('ALTER PUBLICATION %I ADD TABLE outbox_unpartitioned', v_pub);
    END LOOP;
    DROP TABLE outbox;
    DELETE FROM storage_partitions WHERE parent = 'outbox';
    DELETE FROM storage_tables WHERE parent = 'outbox';
    ALTER TABLE outbox_unpartitioned RENAME TO outbox;
    ALTER INDEX outbox_unpartitioned_pkey RENAME TO outbox_pkey;
    CREATE INDEX outbox_unsent_idx ON outbox (seq) WHERE published_at IS NULL;
    CREATE INDEX outbox_unsent_key_idx ON outbox (topic, aggregateid, seq) WHERE published_at IS NULL;
    CREATE INDEX outbox_published_idx ON outbox (created_at) WHERE published_at IS NOT NULL;
END $$;
-- +goose StatementEnd
DROP TABLE outbox_cursor;
