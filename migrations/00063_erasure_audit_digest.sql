-- +goose Up
-- The erasure audit no longer keeps what it erased (issue 35): from now on
-- erasures.selector holds "event <id>", "object <digest>" or
-- "path <dotted.path> = <digest>", the digest being
-- hmac-sha256:<key id>:<hex> of the object id or the value under a key
-- derived from the newest auth.encryption_keys entry (ingest.NewAuditKey),
-- or "<withheld: no audit key>". The key lives outside the database, so
-- these rows cannot be digested here: the object ids and values that rows
-- written before this migration hold are withheld instead.
UPDATE erasures SET selector = 'object <withheld: recorded before digests>'
WHERE selector LIKE 'object %' AND selector NOT LIKE 'object hmac-sha256:%' AND selector NOT LIKE 'object <withheld%';
UPDATE erasures SET selector = substring(selector FROM '^path .*? = ') || '<withheld: recorded before digests>'
WHERE selector LIKE 'path % = %' AND selector !~ ' = (hmac-sha256:|<withheld)';
COMMENT ON COLUMN erasures.selector IS
    'event <id> | object <digest> | path <dotted.path> = <digest>; digest: hmac-sha256:<key id>:<hex> (ingest.AuditKey) or <withheld…>; never the object id or the value';

-- +goose Down
COMMENT ON COLUMN erasures.selector IS NULL;
