-- Erasure leaves no copies (issue 45). A failure issue keeps the class of
-- its failures, never their text: message and last_error become what
-- consumers.FailureSummary writes ("forward to <destination>: status 503",
-- "provider api GET: status 404", "<stage>: timeout"…), the fingerprint
-- stays the digest of the normalised text, and the text itself stays on
-- the event's inbox row only (last_error), which an erasure clears. The
-- rows written before keep no text either: their message is reduced to
-- the stage and the HTTP status it named, if any. A replay's row no longer
-- keeps the error of an erased event (previous_error), and a body a
-- forward transform sent for an event already erased is cleared (the
-- consumers refuse it at write time from now on: consumers/store_ledger.go).
-- +goose Up
UPDATE failure_issues
SET message = stage || ': ' || coalesce(substring(message FROM 'status [0-9]{3}'), error_class || ' failure'),
    last_error = stage || ': ' || coalesce(substring(message FROM 'status [0-9]{3}'), error_class || ' failure');

UPDATE replays r SET previous_error = NULL
FROM inbox i
WHERE i.provider = r.provider AND i.event_id = r.event_id AND i.payload @> '{"erased": true}' AND r.previous_error IS NOT NULL;

UPDATE forward_deliveries f SET body = NULL, headers = NULL
FROM inbox i
WHERE i.provider = f.provider AND i.event_id = f.event_id AND i.payload @> '{"erased": true}'
  AND (f.body IS NOT NULL OR f.headers IS NOT NULL);

COMMENT ON COLUMN failure_issues.message IS 'the class of the failures (consumers.FailureSummary), normalised: never a payload''s, a response''s or a script''s text';
COMMENT ON COLUMN failure_issues.last_error IS 'the class of the latest failure (consumers.FailureSummary); the text is on the event''s inbox row only';

-- +goose Down
COMMENT ON COLUMN failure_issues.message IS NULL;
COMMENT ON COLUMN failure_issues.last_error IS NULL;
