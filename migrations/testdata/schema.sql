--
-- PostgreSQL database dump
--

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: consumers_apply(text, text, text, text, text, bigint, jsonb, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_apply(p_provider text, p_event_id text, p_event_type text, p_object_id text, p_object_type text, p_version bigint, p_data jsonb, p_received_at timestamp with time zone) RETURNS text
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_old   bigint;
    v_state text;
BEGIN
    INSERT INTO processed_events (provider, event_id, outcome, object_id, version)
    VALUES (p_provider, p_event_id, CASE WHEN p_object_id IS NULL AND p_object_type IS NULL THEN 'skipped' ELSE 'succeeded' END,
            p_object_id, p_version)
    ON CONFLICT (provider, event_id) DO NOTHING;
    IF NOT FOUND THEN
        SELECT outcome INTO v_state FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
        PERFORM consumers_set_final(p_provider, p_event_id, p_received_at, v_state, NULL);
        RETURN 'duplicate';
    END IF;
    IF p_object_id IS NULL AND p_object_type IS NULL THEN
        v_state := 'skipped';
    ELSIF p_object_id IS NULL THEN
        v_state := 'succeeded';   -- done elsewhere (forward): nothing projected
    ELSE
        SELECT version INTO v_old FROM provider_objects WHERE provider = p_provider AND object_id = p_object_id FOR UPDATE;
        INSERT INTO provider_objects AS o (provider, object_id, object_type, version, data, last_event_id)
        VALUES (p_provider, p_object_id, p_object_type, p_version, p_data, p_event_id)
        ON CONFLICT (provider, object_id) DO UPDATE SET object_type = EXCLUDED.object_type, version = EXCLUDED.version,
            data = EXCLUDED.data, last_event_id = EXCLUDED.last_event_id, updated_at = now()
        WHERE o.version < EXCLUDED.version;   -- the version guard
        IF FOUND THEN
            INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, old_version, new_version)
            VALUES (p_provider, p_object_id, p_event_id, p_event_type, v_old, p_version);
            v_state := 'succeeded';
        ELSE
            UPDATE processed_events SET outcome = 'ignored_stale' WHERE provider = p_provider AND event_id = p_event_id;
            v_state := 'ignored_stale';
        END IF;
    END IF;
    PERFORM consumers_set_final(p_provider, p_event_id, p_received_at, v_state, clock_timestamp());
    RETURN v_state;
END $$;

--
-- Name: consumers_claim_many(text[], text[], timestamp with time zone[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_claim_many(p_providers text[], p_event_ids text[], p_received_at timestamp with time zone[]) RETURNS TABLE(o_ord integer, o_prev text, o_attempts integer, o_received_at timestamp with time zone)
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    r record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    -- Each row is locked as it is found, in input order; each update is a
    -- statement of its own, so it is pruned to the row's partition (an
    -- UPDATE … FROM the found rows was planned as a join over every
    -- partition).
    FOR r IN
        WITH input AS (
            SELECT t.provider, t.event_id, t.received_at, t.ord::integer AS ord
            FROM unnest(p_providers, p_event_ids, p_received_at) WITH ORDINALITY AS t(provider, event_id, received_at, ord)
        ), hinted AS (
            SELECT i.ord, i.provider, i.event_id, x.processing_state, x.received_at
            FROM input i
            LEFT JOIN LATERAL (
                SELECT inbox.processing_state, inbox.received_at FROM inbox
                WHERE inbox.provider = i.provider AND inbox.event_id = i.event_id AND inbox.received_at = i.received_at AND verified
                FOR UPDATE
            ) x ON true
        )
        -- The unpruned lookup only for the events the hint did not find:
        -- gated on h.processing_state IS NULL, a one-time filter checked
        -- before any scan.
        SELECT h.ord, h.provider, h.event_id, coalesce(h.processing_state, y.processing_state) AS processing_state,
            coalesce(h.received_at, y.received_at) AS received_at
        FROM hinted h
        LEFT JOIN LATERAL (
            SELECT inbox.processing_state, inbox.received_at FROM inbox
            WHERE inbox.provider = h.provider AND inbox.event_id = h.event_id AND verified AND h.processing_state IS NULL
            FOR UPDATE
        ) y ON true
        ORDER BY h.ord
    LOOP
        o_ord := r.ord;
        o_prev := r.processing_state;
        o_received_at := r.received_at;
        o_attempts := 0;
        IF r.processing_state IS NOT NULL AND r.processing_state NOT IN ('succeeded', 'ignored_stale', 'skipped') THEN
            UPDATE inbox SET processing_state = 'processing', attempts = inbox.attempts + 1,
                processing_started_at = now(), next_attempt_at = NULL, updated_at = now()
            WHERE provider = r.provider AND event_id = r.event_id AND received_at = r.received_at
            RETURNING attempts INTO o_attempts;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

--
-- Name: consumers_erase_events(text, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_erase_events(p_provider text, p_event_ids text[]) RETURNS integer
    LANGUAGE sql
    AS $$
    UPDATE forward_deliveries SET body = NULL, headers = NULL
    WHERE provider = p_provider AND event_id = ANY (p_event_ids) AND (body IS NOT NULL OR headers IS NOT NULL);
    DELETE FROM parked_events WHERE provider = p_provider AND event_id = ANY (p_event_ids);
    UPDATE parked_keys SET state = 'ready', head_error = 'the head event was erased', next_at = now()
    WHERE provider = p_provider AND head_event_id = ANY (p_event_ids) AND state = 'waiting';
    WITH d AS (
        DELETE FROM provider_objects o
        WHERE o.provider = p_provider AND o.object_id IN (
            SELECT pe.object_id FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = ANY (p_event_ids) AND pe.object_id IS NOT NULL)
        RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;

--
-- Name: consumers_erase_object(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_erase_object(p_provider text, p_object_id text) RETURNS integer
    LANGUAGE sql
    AS $$
    WITH d AS (DELETE FROM provider_objects WHERE provider = p_provider AND object_id = p_object_id RETURNING 1)
    SELECT count(*)::integer FROM d;
$$;

--
-- Name: consumers_forget(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_forget(p_provider text, p_event_id text) RETURNS void
    LANGUAGE sql
    AS $$
    DELETE FROM processed_events WHERE provider = p_provider AND event_id = p_event_id;
    DELETE FROM forward_deliveries WHERE provider = p_provider AND event_id = p_event_id;
$$;

--
-- Name: consumers_set_final(text, text, timestamp with time zone, text, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.consumers_set_final(p_provider text, p_event_id text, p_received_at timestamp with time zone, p_state text, p_processed_at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF p_received_at IS NOT NULL THEN
        IF p_processed_at IS NOT NULL THEN
            UPDATE inbox SET processing_state = p_state, processed_at = p_processed_at, updated_at = now(),
                last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
            WHERE provider = p_provider AND event_id = p_event_id AND received_at = p_received_at;
        ELSE
            UPDATE inbox i SET processing_state = p_state, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
            FROM processed_events pe
            WHERE pe.provider = p_provider AND pe.event_id = p_event_id
              AND i.provider = p_provider AND i.event_id = p_event_id AND i.received_at = p_received_at;
        END IF;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    IF p_processed_at IS NOT NULL THEN
        UPDATE inbox SET processing_state = p_state, processed_at = p_processed_at, updated_at = now(),
            last_error = NULL, last_error_class = NULL, next_attempt_at = NULL
        WHERE provider = p_provider AND event_id = p_event_id;
    ELSE
        UPDATE inbox i SET processing_state = p_state, processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
        FROM processed_events pe
        WHERE pe.provider = p_provider AND pe.event_id = p_event_id AND i.provider = p_provider AND i.event_id = p_event_id;
    END IF;
END $$;

--
-- Name: storage_create_partition(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.storage_create_partition(p_parent text, p_starts timestamp with time zone, p_ends timestamp with time zone) RETURNS text
    LANGUAGE plpgsql
    AS $$
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

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: auth_login_tx; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_login_tx (
    state_hash bytea NOT NULL,
    binding_hash bytea NOT NULL,
    key_id text NOT NULL,
    secrets bytea NOT NULL,
    next_path text NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    correlation_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

--
-- Name: auth_logout_jti; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_logout_jti (
    issuer text NOT NULL,
    jti text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

--
-- Name: auth_refresh_families; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_refresh_families (
    id uuid NOT NULL,
    issuer text NOT NULL,
    subject text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    revoke_reason text,
    op_revoked_at timestamp with time zone,
    op_revoke_attempts integer DEFAULT 0 NOT NULL,
    op_revoke_next_at timestamp with time zone,
    op_revoke_error text
);

--
-- Name: auth_refresh_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_refresh_tokens (
    token_hash bytea NOT NULL,
    family_id uuid NOT NULL,
    generation integer NOT NULL,
    issued_at timestamp with time zone NOT NULL,
    rotated_at timestamp with time zone,
    key_id text,
    ciphertext bytea
);

--
-- Name: auth_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_sessions (
    id uuid NOT NULL,
    token_hash bytea NOT NULL,
    issuer text NOT NULL,
    subject text NOT NULL,
    email text DEFAULT ''::text NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    op_sid text DEFAULT ''::text NOT NULL,
    device text DEFAULT ''::text NOT NULL,
    family_id uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    absolute_expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    revoke_reason text
);

--
-- Name: auth_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_tokens (
    session_id uuid NOT NULL,
    family_id uuid NOT NULL,
    key_id text NOT NULL,
    ciphertext bytea NOT NULL,
    access_expires_at timestamp with time zone,
    generation integer DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

--
-- Name: dedupe_key_filters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedupe_key_filters (
    name text NOT NULL,
    keys bigint NOT NULL,
    fp_rate double precision NOT NULL,
    bits bytea NOT NULL,
    built_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: dedupe_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedupe_keys (
    provider text NOT NULL,
    event_id text NOT NULL,
    gen timestamp with time zone NOT NULL
)
PARTITION BY RANGE (gen);

--
-- Name: dedupe_keys_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedupe_keys_legacy (
    provider text NOT NULL,
    event_id text NOT NULL,
    gen timestamp with time zone NOT NULL
);

--
-- Name: dedupe_keys_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedupe_keys_p<time> (
    provider text NOT NULL,
    event_id text NOT NULL,
    gen timestamp with time zone NOT NULL
);

--
-- Name: dedupe_keys_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedupe_keys_p<time> (
    provider text NOT NULL,
    event_id text NOT NULL,
    gen timestamp with time zone NOT NULL
);

--
-- Name: erasures; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.erasures (
    id bigint NOT NULL,
    requested_by text NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    provider text NOT NULL,
    selector text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    events integer NOT NULL,
    outbox_rows integer NOT NULL,
    objects integer NOT NULL
);

--
-- Name: COLUMN erasures.selector; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.erasures.selector IS 'event <id> | object <digest> | path <dotted.path> = <digest>; digest: hmac-sha256:<key id>:<hex> (ingest.AuditKey) or <withheld…>; never the object id or the value';

--
-- Name: erasures_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.erasures ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.erasures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: failure_issue_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.failure_issue_events (
    issue_id bigint NOT NULL,
    provider text NOT NULL,
    event_id text NOT NULL,
    received_at timestamp with time zone NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: failure_issues; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.failure_issues (
    id bigint NOT NULL,
    provider text NOT NULL,
    stage text NOT NULL,
    fingerprint text NOT NULL,
    error_class text NOT NULL,
    message text NOT NULL,
    last_error text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    status_changed_at timestamp with time zone DEFAULT now() NOT NULL,
    event_count bigint DEFAULT 0 NOT NULL,
    failures bigint DEFAULT 0 NOT NULL,
    reopened integer DEFAULT 0 NOT NULL,
    event_types text[] DEFAULT '{}'::text[] NOT NULL,
    sample_event_ids text[] DEFAULT '{}'::text[] NOT NULL,
    replayed_events bigint DEFAULT 0 NOT NULL,
    last_replayed_at timestamp with time zone,
    last_replayed_by text,
    CONSTRAINT failure_issues_status_check CHECK ((status = ANY (ARRAY['open'::text, 'acknowledged'::text, 'resolved'::text, 'muted'::text])))
);

--
-- Name: COLUMN failure_issues.message; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.failure_issues.message IS 'the class of the failures (consumers.FailureSummary), normalised: never a payload''s, a response''s or a script''s text';

--
-- Name: COLUMN failure_issues.last_error; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.failure_issues.last_error IS 'the class of the latest failure (consumers.FailureSummary); the text is on the event''s inbox row only';

--
-- Name: failure_issues_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.failure_issues ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.failure_issues_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: forward_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.forward_deliveries (
    provider text NOT NULL,
    event_id text NOT NULL,
    destination text NOT NULL,
    delivered_at timestamp with time zone DEFAULT now() NOT NULL,
    body bytea,
    headers jsonb,
    dropped boolean DEFAULT false NOT NULL
);

--
-- Name: goose_db_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.goose_db_version (
    id integer NOT NULL,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone DEFAULT now() NOT NULL
);

--
-- Name: goose_db_version_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.goose_db_version ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.goose_db_version_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: inbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox (
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    event_created_at timestamp with time zone,
    verified boolean NOT NULL,
    secret_id text NOT NULL,
    processing_state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    processing_started_at timestamp with time zone,
    processed_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    last_error_class text,
    replays integer DEFAULT 0 NOT NULL,
    traceparent text,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT inbox_processing_state_check CHECK ((processing_state = ANY (ARRAY['pending'::text, 'processing'::text, 'succeeded'::text, 'ignored_stale'::text, 'skipped'::text, 'retrying'::text, 'dead'::text]))),
    CONSTRAINT inbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
)
PARTITION BY RANGE (received_at);

--
-- Name: inbox_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox_legacy (
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    event_created_at timestamp with time zone,
    verified boolean NOT NULL,
    secret_id text NOT NULL,
    processing_state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    processing_started_at timestamp with time zone,
    processed_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    last_error_class text,
    replays integer DEFAULT 0 NOT NULL,
    traceparent text,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT inbox_processing_state_check CHECK ((processing_state = ANY (ARRAY['pending'::text, 'processing'::text, 'succeeded'::text, 'ignored_stale'::text, 'skipped'::text, 'retrying'::text, 'dead'::text]))),
    CONSTRAINT inbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: inbox_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox_p<time> (
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    event_created_at timestamp with time zone,
    verified boolean NOT NULL,
    secret_id text NOT NULL,
    processing_state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    processing_started_at timestamp with time zone,
    processed_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    last_error_class text,
    replays integer DEFAULT 0 NOT NULL,
    traceparent text,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT inbox_processing_state_check CHECK ((processing_state = ANY (ARRAY['pending'::text, 'processing'::text, 'succeeded'::text, 'ignored_stale'::text, 'skipped'::text, 'retrying'::text, 'dead'::text]))),
    CONSTRAINT inbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: inbox_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox_p<time> (
    provider text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    event_created_at timestamp with time zone,
    verified boolean NOT NULL,
    secret_id text NOT NULL,
    processing_state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    processing_started_at timestamp with time zone,
    processed_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    last_error_class text,
    replays integer DEFAULT 0 NOT NULL,
    traceparent text,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT inbox_processing_state_check CHECK ((processing_state = ANY (ARRAY['pending'::text, 'processing'::text, 'succeeded'::text, 'ignored_stale'::text, 'skipped'::text, 'retrying'::text, 'dead'::text]))),
    CONSTRAINT inbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: ingest_replay_guard; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ingest_replay_guard (
    key bytea NOT NULL,
    event_id text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

--
-- Name: outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox (
    id uuid NOT NULL,
    aggregatetype text NOT NULL,
    aggregateid text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    event_id text NOT NULL,
    topic text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint NOT NULL,
    event_time text,
    traceparent text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT outbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
)
PARTITION BY RANGE (created_at);

--
-- Name: outbox_cursor; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_cursor (
    slot text NOT NULL,
    snap pg_snapshot NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: outbox_erasures; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_erasures (
    outbox_id uuid NOT NULL,
    provider text NOT NULL,
    event_id text NOT NULL,
    erasure_id bigint NOT NULL,
    erased_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: outbox_legacy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_legacy (
    id uuid NOT NULL,
    aggregatetype text NOT NULL,
    aggregateid text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    event_id text NOT NULL,
    topic text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint DEFAULT NULL NOT NULL,
    event_time text,
    traceparent text,
    txid xid8 DEFAULT NULL NOT NULL,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT outbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: outbox_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.outbox_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: outbox_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.outbox_seq OWNED BY public.outbox.seq;

--
-- Name: outbox_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_p<time> (
    id uuid NOT NULL,
    aggregatetype text NOT NULL,
    aggregateid text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    event_id text NOT NULL,
    topic text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint DEFAULT nextval('public.outbox_seq'::regclass) NOT NULL,
    event_time text,
    traceparent text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT outbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: outbox_p<time>; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox_p<time> (
    id uuid NOT NULL,
    aggregatetype text NOT NULL,
    aggregateid text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    event_id text NOT NULL,
    topic text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint DEFAULT nextval('public.outbox_seq'::regclass) NOT NULL,
    event_time text,
    traceparent text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    via text DEFAULT 'webhook'::text NOT NULL,
    CONSTRAINT outbox_via_check CHECK ((via = ANY (ARRAY['webhook'::text, 'reconcile'::text])))
);

--
-- Name: parked_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.parked_events (
    seq bigint NOT NULL,
    destination text NOT NULL,
    provider text NOT NULL,
    kafka_key text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    envelope bytea NOT NULL,
    object bytea,
    created_at timestamp with time zone,
    received_at timestamp with time zone,
    head boolean DEFAULT false NOT NULL,
    parked_at timestamp with time zone DEFAULT now() NOT NULL,
    origin_topic text,
    origin_partition integer,
    origin_offset bigint,
    origin_timestamp timestamp with time zone,
    outbox_id text,
    pending boolean DEFAULT false NOT NULL,
    replay boolean DEFAULT false NOT NULL
);

--
-- Name: parked_events_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.parked_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.parked_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: parked_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.parked_keys (
    destination text NOT NULL,
    provider text NOT NULL,
    kafka_key text NOT NULL,
    head_event_id text NOT NULL,
    head_error text DEFAULT ''::text NOT NULL,
    state text DEFAULT 'waiting'::text NOT NULL,
    on_dead text DEFAULT 'skip'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_at timestamp with time zone DEFAULT now() NOT NULL,
    parked_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT parked_keys_on_dead_check CHECK ((on_dead = ANY (ARRAY['skip'::text, 'hold'::text]))),
    CONSTRAINT parked_keys_state_check CHECK ((state = ANY (ARRAY['waiting'::text, 'ready'::text, 'held'::text])))
);

--
-- Name: pipeline_minutes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pipeline_minutes (
    provider text NOT NULL,
    minute timestamp with time zone NOT NULL,
    accepted integer DEFAULT 0 NOT NULL,
    duplicate integer DEFAULT 0 NOT NULL,
    rejected integer DEFAULT 0 NOT NULL,
    refused integer DEFAULT 0 NOT NULL,
    ack_buckets integer[] DEFAULT '{}'::integer[] NOT NULL,
    relay_age_s real,
    consume_age_s real
);

--
-- Name: processed_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.processed_events (
    provider text NOT NULL,
    event_id text NOT NULL,
    outcome text NOT NULL,
    object_id text,
    version bigint,
    processed_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: provider_object_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.provider_object_changes (
    id bigint NOT NULL,
    provider text NOT NULL,
    object_id text NOT NULL,
    event_id text NOT NULL,
    event_type text NOT NULL,
    old_version bigint,
    new_version bigint NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: provider_object_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.provider_object_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.provider_object_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: provider_objects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.provider_objects (
    provider text NOT NULL,
    object_id text NOT NULL,
    object_type text NOT NULL,
    version bigint NOT NULL,
    data jsonb NOT NULL,
    last_event_id text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: reconcile_passes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reconcile_passes (
    provider text NOT NULL,
    way text NOT NULL,
    covered_until timestamp with time zone,
    partial_from timestamp with time zone,
    partial_before timestamp with time zone,
    partial_to timestamp with time zone,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    result text NOT NULL,
    listed integer DEFAULT 0 NOT NULL,
    missing integer DEFAULT 0 NOT NULL,
    closed integer DEFAULT 0 NOT NULL,
    error text,
    last_success_at timestamp with time zone,
    CONSTRAINT reconcile_passes_result_check CHECK ((result = ANY (ARRAY['running'::text, 'ok'::text, 'failed'::text]))),
    CONSTRAINT reconcile_passes_way_check CHECK ((way = ANY (ARRAY['backfill'::text, 'redeliver'::text])))
);

--
-- Name: relay_slot; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.relay_slot (
    slot text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    snapshot_done_at timestamp with time zone,
    confirmed_lsn pg_lsn
);

--
-- Name: replays; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.replays (
    id bigint NOT NULL,
    provider text NOT NULL,
    event_id text NOT NULL,
    outbox_id uuid NOT NULL,
    previous_state text NOT NULL,
    previous_attempts integer NOT NULL,
    previous_error text,
    forced boolean DEFAULT false NOT NULL,
    requested_by text NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: replays_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.replays ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.replays_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: storage_partitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.storage_partitions (
    parent text NOT NULL,
    name text NOT NULL,
    starts timestamp with time zone NOT NULL,
    ends timestamp with time zone NOT NULL,
    CONSTRAINT storage_partitions_check CHECK ((starts < ends))
);

--
-- Name: storage_purges; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.storage_purges (
    name text NOT NULL,
    provider text NOT NULL,
    purged_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: storage_tables; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.storage_tables (
    parent text NOT NULL,
    indexes text[] NOT NULL
);

--
-- Name: dedupe_keys_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys ATTACH PARTITION public.dedupe_keys_legacy FOR VALUES FROM (MINVALUE) TO ('<migrated at>');

--
-- Name: dedupe_keys_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys ATTACH PARTITION public.dedupe_keys_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: dedupe_keys_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys ATTACH PARTITION public.dedupe_keys_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: inbox_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox ATTACH PARTITION public.inbox_legacy FOR VALUES FROM (MINVALUE) TO ('<migrated at>');

--
-- Name: inbox_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox ATTACH PARTITION public.inbox_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: inbox_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox ATTACH PARTITION public.inbox_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: outbox_legacy; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ATTACH PARTITION public.outbox_legacy FOR VALUES FROM (MINVALUE) TO ('<migrated at>');

--
-- Name: outbox_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ATTACH PARTITION public.outbox_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: outbox_p<time>; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ATTACH PARTITION public.outbox_p<time> FOR VALUES FROM ('<migrated at>') TO ('<migrated at>');

--
-- Name: outbox seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox ALTER COLUMN seq SET DEFAULT nextval('public.outbox_seq'::regclass);

--
-- Name: auth_login_tx auth_login_tx_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_login_tx
    ADD CONSTRAINT auth_login_tx_pkey PRIMARY KEY (state_hash);

--
-- Name: auth_logout_jti auth_logout_jti_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_logout_jti
    ADD CONSTRAINT auth_logout_jti_pkey PRIMARY KEY (issuer, jti);

--
-- Name: auth_refresh_families auth_refresh_families_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_refresh_families
    ADD CONSTRAINT auth_refresh_families_pkey PRIMARY KEY (id);

--
-- Name: auth_refresh_tokens auth_refresh_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_refresh_tokens
    ADD CONSTRAINT auth_refresh_tokens_pkey PRIMARY KEY (token_hash);

--
-- Name: auth_sessions auth_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_sessions
    ADD CONSTRAINT auth_sessions_pkey PRIMARY KEY (id);

--
-- Name: auth_sessions auth_sessions_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_sessions
    ADD CONSTRAINT auth_sessions_token_hash_key UNIQUE (token_hash);

--
-- Name: auth_tokens auth_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_pkey PRIMARY KEY (session_id);

--
-- Name: dedupe_key_filters dedupe_key_filters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_key_filters
    ADD CONSTRAINT dedupe_key_filters_pkey PRIMARY KEY (name);

--
-- Name: dedupe_keys dedupe_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys
    ADD CONSTRAINT dedupe_keys_pkey PRIMARY KEY (provider, event_id, gen);

--
-- Name: dedupe_keys_legacy dedupe_keys_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys_legacy
    ADD CONSTRAINT dedupe_keys_legacy_pkey PRIMARY KEY (provider, event_id, gen);

--
-- Name: dedupe_keys_p<time> dedupe_keys_p<time>_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys_p<time>
    ADD CONSTRAINT dedupe_keys_p<time>_pkey PRIMARY KEY (provider, event_id, gen);

--
-- Name: dedupe_keys_p<time> dedupe_keys_p<time>_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_keys_p<time>
    ADD CONSTRAINT dedupe_keys_p<time>_pkey PRIMARY KEY (provider, event_id, gen);

--
-- Name: erasures erasures_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (id);

--
-- Name: failure_issue_events failure_issue_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.failure_issue_events
    ADD CONSTRAINT failure_issue_events_pkey PRIMARY KEY (issue_id, provider, event_id);

--
-- Name: failure_issues failure_issues_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.failure_issues
    ADD CONSTRAINT failure_issues_pkey PRIMARY KEY (id);

--
-- Name: failure_issues failure_issues_provider_stage_fingerprint_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.failure_issues
    ADD CONSTRAINT failure_issues_provider_stage_fingerprint_key UNIQUE (provider, stage, fingerprint);

--
-- Name: forward_deliveries forward_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.forward_deliveries
    ADD CONSTRAINT forward_deliveries_pkey PRIMARY KEY (provider, event_id, destination);

--
-- Name: goose_db_version goose_db_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.goose_db_version
    ADD CONSTRAINT goose_db_version_pkey PRIMARY KEY (id);

--
-- Name: inbox_legacy inbox_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox_legacy
    ADD CONSTRAINT inbox_legacy_pkey PRIMARY KEY (provider, event_id);

--
-- Name: ingest_replay_guard ingest_replay_guard_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ingest_replay_guard
    ADD CONSTRAINT ingest_replay_guard_pkey PRIMARY KEY (key);

--
-- Name: outbox_cursor outbox_cursor_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_cursor
    ADD CONSTRAINT outbox_cursor_pkey PRIMARY KEY (slot);

--
-- Name: outbox_erasures outbox_erasures_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_erasures
    ADD CONSTRAINT outbox_erasures_pkey PRIMARY KEY (outbox_id);

--
-- Name: outbox_legacy outbox_legacy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox_legacy
    ADD CONSTRAINT outbox_legacy_pkey PRIMARY KEY (id);

--
-- Name: parked_events parked_events_destination_provider_kafka_key_event_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.parked_events
    ADD CONSTRAINT parked_events_destination_provider_kafka_key_event_id_key UNIQUE (destination, provider, kafka_key, event_id);

--
-- Name: parked_events parked_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.parked_events
    ADD CONSTRAINT parked_events_pkey PRIMARY KEY (seq);

--
-- Name: parked_keys parked_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.parked_keys
    ADD CONSTRAINT parked_keys_pkey PRIMARY KEY (destination, provider, kafka_key);

--
-- Name: pipeline_minutes pipeline_minutes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pipeline_minutes
    ADD CONSTRAINT pipeline_minutes_pkey PRIMARY KEY (provider, minute);

--
-- Name: processed_events processed_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.processed_events
    ADD CONSTRAINT processed_events_pkey PRIMARY KEY (provider, event_id);

--
-- Name: provider_object_changes provider_object_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.provider_object_changes
    ADD CONSTRAINT provider_object_changes_pkey PRIMARY KEY (id);

--
-- Name: provider_objects provider_objects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.provider_objects
    ADD CONSTRAINT provider_objects_pkey PRIMARY KEY (provider, object_id);

--
-- Name: reconcile_passes reconcile_passes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reconcile_passes
    ADD CONSTRAINT reconcile_passes_pkey PRIMARY KEY (provider);

--
-- Name: relay_slot relay_slot_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.relay_slot
    ADD CONSTRAINT relay_slot_pkey PRIMARY KEY (slot);

--
-- Name: replays replays_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.replays
    ADD CONSTRAINT replays_pkey PRIMARY KEY (id);

--
-- Name: storage_partitions storage_partitions_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.storage_partitions
    ADD CONSTRAINT storage_partitions_name_key UNIQUE (name);

--
-- Name: storage_partitions storage_partitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.storage_partitions
    ADD CONSTRAINT storage_partitions_pkey PRIMARY KEY (parent, starts);

--
-- Name: storage_purges storage_purges_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.storage_purges
    ADD CONSTRAINT storage_purges_pkey PRIMARY KEY (name, provider);

--
-- Name: storage_tables storage_tables_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.storage_tables
    ADD CONSTRAINT storage_tables_pkey PRIMARY KEY (parent);

--
-- Name: auth_login_tx_expires_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_login_tx_expires_idx ON public.auth_login_tx USING btree (expires_at);

--
-- Name: auth_refresh_families_done_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_refresh_families_done_idx ON public.auth_refresh_families USING btree (op_revoked_at) WHERE (op_revoked_at IS NOT NULL);

--
-- Name: auth_refresh_families_op_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_refresh_families_op_idx ON public.auth_refresh_families USING btree (COALESCE(op_revoke_next_at, revoked_at)) WHERE ((revoked_at IS NOT NULL) AND (op_revoked_at IS NULL));

--
-- Name: auth_refresh_families_user_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_refresh_families_user_idx ON public.auth_refresh_families USING btree (issuer, subject);

--
-- Name: auth_refresh_tokens_family_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_refresh_tokens_family_idx ON public.auth_refresh_tokens USING btree (family_id);

--
-- Name: auth_sessions_ended_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_sessions_ended_idx ON public.auth_sessions USING btree (revoked_at) WHERE (revoked_at IS NOT NULL);

--
-- Name: auth_sessions_family_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_sessions_family_idx ON public.auth_sessions USING btree (family_id);

--
-- Name: auth_sessions_sid_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_sessions_sid_idx ON public.auth_sessions USING btree (issuer, op_sid) WHERE (op_sid <> ''::text);

--
-- Name: auth_sessions_user_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_sessions_user_idx ON public.auth_sessions USING btree (issuer, subject);

--
-- Name: auth_tokens_family_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX auth_tokens_family_idx ON public.auth_tokens USING btree (family_id);

--
-- Name: erasures_requested_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX erasures_requested_at_idx ON public.erasures USING btree (requested_at);

--
-- Name: failure_issue_events_event; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX failure_issue_events_event ON public.failure_issue_events USING btree (provider, event_id);

--
-- Name: failure_issue_events_last_seen_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX failure_issue_events_last_seen_idx ON public.failure_issue_events USING btree (last_seen);

--
-- Name: failure_issues_last_seen_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX failure_issues_last_seen_idx ON public.failure_issues USING btree (last_seen);

--
-- Name: forward_deliveries_delivered_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX forward_deliveries_delivered_at ON public.forward_deliveries USING btree (delivered_at);

--
-- Name: inbox_legacy_state_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_legacy_state_idx ON public.inbox_legacy USING btree (processing_state, received_at);

--
-- Name: inbox_p<time>_processing_state_received_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_processing_state_received_at_idx ON public.inbox_p<time> USING btree (processing_state, received_at);

--
-- Name: inbox_p<time>_provider_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_provider_event_id_idx ON public.inbox_p<time> USING btree (provider, event_id);

--
-- Name: inbox_p<time>_received_at_provider_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_received_at_provider_event_id_idx ON public.inbox_p<time> USING btree (received_at, provider, event_id);

--
-- Name: inbox_p<time>_processing_state_received_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_processing_state_received_at_idx ON public.inbox_p<time> USING btree (processing_state, received_at);

--
-- Name: inbox_p<time>_provider_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_provider_event_id_idx ON public.inbox_p<time> USING btree (provider, event_id);

--
-- Name: inbox_p<time>_received_at_provider_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_p<time>_received_at_provider_event_id_idx ON public.inbox_p<time> USING btree (received_at, provider, event_id);

--
-- Name: ingest_replay_guard_expires_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ingest_replay_guard_expires_idx ON public.ingest_replay_guard USING btree (expires_at);

--
-- Name: outbox_erasures_erased_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_erasures_erased_at_idx ON public.outbox_erasures USING btree (erased_at);

--
-- Name: outbox_legacy_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_legacy_event_id_idx ON public.outbox_legacy USING btree (event_id);

--
-- Name: outbox_legacy_txid_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_legacy_txid_idx ON public.outbox_legacy USING btree (txid, seq);

--
-- Name: outbox_p<time>_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_p<time>_event_id_idx ON public.outbox_p<time> USING btree (event_id);

--
-- Name: outbox_p<time>_txid_seq_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_p<time>_txid_seq_idx ON public.outbox_p<time> USING btree (txid, seq);

--
-- Name: outbox_p<time>_event_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_p<time>_event_id_idx ON public.outbox_p<time> USING btree (event_id);

--
-- Name: outbox_p<time>_txid_seq_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_p<time>_txid_seq_idx ON public.outbox_p<time> USING btree (txid, seq);

--
-- Name: parked_events_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX parked_events_key ON public.parked_events USING btree (destination, provider, kafka_key, seq);

--
-- Name: parked_keys_head; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX parked_keys_head ON public.parked_keys USING btree (provider, head_event_id);

--
-- Name: parked_keys_ready; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX parked_keys_ready ON public.parked_keys USING btree (next_at) WHERE (state = 'ready'::text);

--
-- Name: pipeline_minutes_minute_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX pipeline_minutes_minute_idx ON public.pipeline_minutes USING btree (minute);

--
-- Name: processed_events_processed_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX processed_events_processed_at_idx ON public.processed_events USING btree (processed_at);

--
-- Name: provider_object_changes_object_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX provider_object_changes_object_idx ON public.provider_object_changes USING btree (provider, object_id, id);

--
-- Name: provider_object_changes_provider_applied_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX provider_object_changes_provider_applied_at_idx ON public.provider_object_changes USING btree (provider, applied_at);

--
-- Name: provider_objects_provider_updated_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX provider_objects_provider_updated_at_idx ON public.provider_objects USING btree (provider, updated_at);

--
-- Name: replays_event_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX replays_event_idx ON public.replays USING btree (provider, event_id);

--
-- Name: replays_requested_at_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX replays_requested_at_idx ON public.replays USING btree (requested_at);

--
-- Name: dedupe_keys_legacy_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.dedupe_keys_pkey ATTACH PARTITION public.dedupe_keys_legacy_pkey;

--
-- Name: dedupe_keys_p<time>_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.dedupe_keys_pkey ATTACH PARTITION public.dedupe_keys_p<time>_pkey;

--
-- Name: dedupe_keys_p<time>_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.dedupe_keys_pkey ATTACH PARTITION public.dedupe_keys_p<time>_pkey;

--
-- Name: auth_refresh_tokens auth_refresh_tokens_family_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_refresh_tokens
    ADD CONSTRAINT auth_refresh_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES public.auth_refresh_families(id) ON DELETE CASCADE;

--
-- Name: auth_sessions auth_sessions_family_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_sessions
    ADD CONSTRAINT auth_sessions_family_id_fkey FOREIGN KEY (family_id) REFERENCES public.auth_refresh_families(id);

--
-- Name: auth_tokens auth_tokens_family_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_family_id_fkey FOREIGN KEY (family_id) REFERENCES public.auth_refresh_families(id);

--
-- Name: auth_tokens auth_tokens_session_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_session_id_fkey FOREIGN KEY (session_id) REFERENCES public.auth_sessions(id) ON DELETE CASCADE;

--
-- Name: dedupe_key_filters dedupe_key_filters_name_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedupe_key_filters
    ADD CONSTRAINT dedupe_key_filters_name_fkey FOREIGN KEY (name) REFERENCES public.storage_partitions(name) ON DELETE CASCADE;

--
-- Name: failure_issue_events failure_issue_events_issue_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.failure_issue_events
    ADD CONSTRAINT failure_issue_events_issue_id_fkey FOREIGN KEY (issue_id) REFERENCES public.failure_issues(id) ON DELETE CASCADE;

--
-- Name: parked_events parked_events_destination_provider_kafka_key_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.parked_events
    ADD CONSTRAINT parked_events_destination_provider_kafka_key_fkey FOREIGN KEY (destination, provider, kafka_key) REFERENCES public.parked_keys(destination, provider, kafka_key) ON DELETE CASCADE;

--
-- Name: storage_purges storage_purges_name_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.storage_purges
    ADD CONSTRAINT storage_purges_name_fkey FOREIGN KEY (name) REFERENCES public.storage_partitions(name) ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--

