-- Issue 48: sign-in notices (features/sign-in-notices/), the export (features/export/) and
-- sign-in by e-mailed code (features/email-code/).
--
-- An account's sign-in notices are on until its owner turns them off; a reset turns them on again.
ALTER TABLE accounts ADD COLUMN sign_in_notices boolean NOT NULL DEFAULT true;

-- The networks and clients an account signed in from: a keyed hash of the network (an IPv4 /24,
-- an IPv6 /64) and the client's family (a browser's name, or the first word of its user agent).
-- A sign-in from a pair not seen in 30 days is announced to the owner.
CREATE TABLE sign_in_clients (
  account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  network_hash  bytea NOT NULL CHECK (octet_length(network_hash) = 32),
  client        text NOT NULL CHECK (length(client) BETWEEN 1 AND 40),
  last_seen_at  timestamptz NOT NULL,
  PRIMARY KEY (account_id, network_hash, client)
);
CREATE INDEX sign_in_clients_last_seen ON sign_in_clients (last_seen_at);

ALTER TABLE one_time_codes DROP CONSTRAINT one_time_codes_purpose_check;
ALTER TABLE one_time_codes ADD CONSTRAINT one_time_codes_purpose_check
  CHECK (purpose = ANY ('{deletion,email-change,email-change-current,identity,passkey,registration,reset,sign-in,totp}'::text[]));
ALTER TABLE address_quotas DROP CONSTRAINT address_quotas_purpose_check;
ALTER TABLE address_quotas ADD CONSTRAINT address_quotas_purpose_check
  CHECK (purpose = ANY ('{account-email-change,deletion,email-change,identity,identity-notice,passkey,registration,reset,export,reset-known,sign-in,sign-in-notice,totp}'::text[]));
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type = ANY ('{account-disabled,account-enabled,account-exported,activated,email-change-requested,email-changed,identity-linked,identity-removed,notices-off,notices-on,passkey-added,passkey-counter-regressed,passkey-removed,passkey-renamed,password-changed,password-reset,recovery-code-used,refresh-retried,refresh-token-reused,reset-forced,reset-requested,session-evicted,session-revoked,sessions-ended,sign-in-failed,signed-in,signed-out-everywhere,throttle-cleared,totp-disabled,totp-enabled}'::text[]));

-- A request for a sign-in code (POST /auth/code), recorded alike for every address and resolved
-- by the worker moments later, as reset requests are (sql/010).
CREATE TABLE sign_in_code_requests (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  address        text NOT NULL CHECK (length(address) <= 254),
  client_address text NOT NULL CHECK (length(client_address) <= 64),
  requested_at   timestamptz NOT NULL
);
CREATE INDEX sign_in_code_requests_requested ON sign_in_code_requests (requested_at);

-- Every kind that someone other than the owner can cause as often as they like (core/security-events.ts
-- strangerKinds) is swept after a week, as docs/operations.md says: the sweep took only the first two.
DROP INDEX security_events_strangers;
CREATE INDEX security_events_strangers ON security_events (occurred_at)
  WHERE type IN ('sign-in-failed', 'reset-requested', 'passkey-renamed', 'refresh-retried', 'session-evicted');
COMMENT ON TABLE security_events IS 'Each account''s security activity (GET /acc/me/events); kept EVENT_RETENTION_DAYS, the kinds strangers can cause (failed sign-ins, reset requests, passkey renames, refresh retries, evicted sessions) 7 days.';
