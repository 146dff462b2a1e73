-- +goose Up
-- A Bloom filter of every key of a sealed dedupe key partition (one no
-- write can reach any more), built once by ingest's maintenance (README
-- "Retention"). The receiver loads them and probes a sealed partition for
-- a new event id only when its filter says the id may be there: without
-- them, every new id costs a random index read in each key partition
-- within the key lifetime, whose indexes outgrow memory as history
-- accumulates. A filter goes with its partition.
CREATE TABLE dedupe_key_filters (
    name      text        PRIMARY KEY REFERENCES storage_partitions (name) ON DELETE CASCADE,
    keys      bigint      NOT NULL,
    fp_rate   float8      NOT NULL,
    bits      bytea       NOT NULL,
    built_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE dedupe_key_filters;
