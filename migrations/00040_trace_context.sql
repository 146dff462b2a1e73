-- +goose Up
-- The W3C traceparent of the delivery that recorded the event (tracing on,
-- README "Tracing"): the receiver writes it with the inbox row and its
-- outbox job; the relay publishes the outbox's as the traceparent and
-- ce_traceparent Kafka headers (the Debezium Outbox Event Router can place
-- the column as a header too: table.fields.additional.placement=
-- traceparent:header:traceparent), and a replay links its new trace to the
-- inbox's. NULL when tracing was off.
ALTER TABLE inbox ADD COLUMN traceparent text;
ALTER TABLE outbox ADD COLUMN traceparent text;

-- +goose Down
ALTER TABLE outbox DROP COLUMN traceparent;
ALTER TABLE inbox DROP COLUMN traceparent;
