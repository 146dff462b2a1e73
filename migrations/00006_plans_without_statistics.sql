-- The consumers' per-event functions price sequential scans out (issue
-- 44): PL/pgSQL caches a generic plan of each of their statements after
-- five executions, and one cached while the inbox partitions were empty
-- (a fresh database, an analyze of empty tables, a partition that just
-- became current) read a whole partition for every event once it filled,
-- until autovacuum's next analyze. With enable_seqscan off for the
-- duration of each call, every lookup is an index probe whatever the
-- statistics (TestClaimAndApplyPlansDoNotDependOnStatistics). The setting
-- is the function's own; the caller's session keeps its settings.
-- +goose Up
ALTER FUNCTION consumers_claim_many(text[], text[], timestamptz[]) SET enable_seqscan = off;
ALTER FUNCTION consumers_apply(text, text, text, text, text, bigint, jsonb, timestamptz) SET enable_seqscan = off;
ALTER FUNCTION consumers_set_final(text, text, timestamptz, text, timestamptz) SET enable_seqscan = off;

-- +goose Down
ALTER FUNCTION consumers_claim_many(text[], text[], timestamptz[]) RESET enable_seqscan;
ALTER FUNCTION consumers_apply(text, text, text, text, text, bigint, jsonb, timestamptz) RESET enable_seqscan;
ALTER FUNCTION consumers_set_final(text, text, timestamptz, text, timestamptz) RESET enable_seqscan;
