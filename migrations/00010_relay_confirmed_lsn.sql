-- +goose Up
-- The relay's own durable record of the LSN it confirmed for its slot.
-- PostgreSQL before 17 does not persist a logical slot's confirmed position
-- at shutdown when nothing else about the slot changed, so after a restart
-- the slot resumes from an older position and would stream again everything
-- the relay had already published. The relay starts replication at the
-- later of the two positions instead.
ALTER TABLE relay_slot ADD COLUMN confirmed_lsn pg_lsn;

-- +goose Down
ALTER TABLE relay_slot DROP COLUMN confirmed_lsn;
