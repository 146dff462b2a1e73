-- +goose Up
-- Browser login (auth/): login transactions, sessions, encrypted tokens and
-- refresh-token families. Secrets are never stored in clear: session IDs,
-- states and refresh tokens are looked up by SHA-256; tokens, PKCE verifiers
-- and nonces are AES-256-GCM ciphertexts tagged with the key id.

-- One row per pending login (between /login and /callback).
CREATE TABLE auth_login_tx (
    state_hash      bytea       PRIMARY KEY,
    binding_hash    bytea       NOT NULL,          -- SHA-256 of the pre-login cookie value
    key_id          text        NOT NULL,
    secrets         bytea       NOT NULL,          -- AES-GCM(verifier, nonce)
    next_path       text        NOT NULL,
    attempt         integer     NOT NULL DEFAULT 0, -- 1 after an automatic restart
    correlation_id  text        NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX auth_login_tx_expires_idx ON auth_login_tx (expires_at);

-- A refresh-token family: every token descending from one login.
CREATE TABLE auth_refresh_families (
    id              uuid        PRIMARY KEY,
    issuer          text        NOT NULL,
    subject         text        NOT NULL,
    created_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    revoke_reason   text,
    op_revoked_at   timestamptz                    -- RFC 7009 call done (or not applicable)
);
CREATE INDEX auth_refresh_families_user_idx ON auth_refresh_families (issuer, subject);
CREATE INDEX auth_refresh_families_op_idx ON auth_refresh_families (revoked_at)
    WHERE revoked_at IS NOT NULL AND op_revoked_at IS NULL;

CREATE TABLE auth_sessions (
    id                   uuid        PRIMARY KEY,  -- public handle, not a credential
    token_hash           bytea       NOT NULL UNIQUE, -- SHA-256 of the cookie value
    issuer               text        NOT NULL,
    subject              text        NOT NULL,
    email                text        NOT NULL DEFAULT '',
    name                 text        NOT NULL DEFAULT '',
    op_sid               text        NOT NULL DEFAULT '',
    device               text        NOT NULL DEFAULT '',
    family_id            uuid        NOT NULL REFERENCES auth_refresh_families (id),
    created_at           timestamptz NOT NULL,
    last_seen_at         timestamptz NOT NULL,
    absolute_expires_at  timestamptz NOT NULL,
    revoked_at           timestamptz,
    revoke_reason        text
);
CREATE INDEX auth_sessions_user_idx ON auth_sessions (issuer, subject);
CREATE INDEX auth_sessions_sid_idx ON auth_sessions (issuer, op_sid) WHERE op_sid <> '';

-- The OP's tokens of one session, encrypted; the row is also the per-session
-- refresh lock (SELECT … FOR UPDATE).
CREATE TABLE auth_tokens (
    session_id         uuid        PRIMARY KEY REFERENCES auth_sessions (id) ON DELETE CASCADE,
    family_id          uuid        NOT NULL REFERENCES auth_refresh_families (id),
    key_id             text        NOT NULL,
    ciphertext         bytea       NOT NULL,
    access_expires_at  timestamptz,
    generation         integer     NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL
);

-- Every refresh token ever issued in a family, by hash: presenting one that
-- was already rotated is reuse and revokes the family.
CREATE TABLE auth_refresh_tokens (
    token_hash   bytea       PRIMARY KEY,
    family_id    uuid        NOT NULL REFERENCES auth_refresh_families (id) ON DELETE CASCADE,
    generation   integer     NOT NULL,
    issued_at    timestamptz NOT NULL,
    rotated_at   timestamptz,
    key_id       text,
    ciphertext   bytea                   -- the token while it is current (for RFC 7009), NULL once rotated
);
CREATE INDEX auth_refresh_tokens_family_idx ON auth_refresh_tokens (family_id);

-- Back-channel logout token IDs already accepted (replay protection).
CREATE TABLE auth_logout_jti (
    issuer      text        NOT NULL,
    jti         text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (issuer, jti)
);

-- +goose Down
DROP TABLE auth_logout_jti;
DROP TABLE auth_refresh_tokens;
DROP TABLE auth_tokens;
DROP TABLE auth_sessions;
DROP TABLE auth_refresh_families;
DROP TABLE auth_login_tx;
