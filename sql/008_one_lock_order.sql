-- Refresh in one round trip, retries within the window, and keyed-hash keys of their own.

-- Each refresh token names the token it was issued for (null for a sign-in's first). A spent
-- token presented again within the retry window is a retry only while the session's live token
-- is its own successor; anything else presented after it was spent is reuse.
ALTER TABLE refresh_tokens ADD COLUMN parent_hash bytea CHECK (octet_length(parent_hash) = 32);

ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
  'activated', 'signed-in', 'sign-in-failed', 'password-changed', 'reset-requested',
  'password-reset', 'session-revoked', 'signed-out-everywhere', 'refresh-retried', 'refresh-token-reused'));

-- The keys of the keyed hashes (throttle, quotas), so that they outlive a TOKEN_SECRET rotation.
-- Only sealed (AES-256-GCM under a key derived from TOKEN_SECRET, see keyed-hashes.ts): a dump
-- of the database alone cannot recompute a keyed hash. The service fills the table at its first
-- start with the keys it used until now, so that today's counters keep counting.
CREATE TABLE keyed_hash_keys (
  purpose    text PRIMARY KEY,
  sealed_key bytea NOT NULL
);

-- Rotates a refresh token in one round trip (docs/design.md, "Refresh in one statement").
-- Locks in the one order of src/use-cases/transaction.ts: the account row, then the session,
-- then its refresh tokens, then events. Each statement of a PL/pgSQL function takes a fresh
-- snapshot, so what is read after a lock sees every commit made before the lock was granted.
-- Outcomes: 'rotated' (the token was live), 'retried' (a spent token within the window whose
-- successor is still live: that successor stops working, a new one is issued), 'reused' (spent
-- otherwise: the caller ends the session), 'refused' (unknown, expired, or its session is gone).
CREATE FUNCTION refresh_session(presented bytea, successor bytea, now_at timestamptz, retry_window interval, address text, agent text)
RETURNS TABLE (outcome text, account_id bigint, public_id uuid, session_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
  owner bigint;
  session uuid;
  spent timestamptz;
BEGIN
  SELECT s.account_id INTO owner FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id WHERE r.token_hash = presented;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'refused', NULL::bigint, NULL::uuid, NULL::uuid;
    RETURN;
  END IF;
  PERFORM 1 FROM accounts a WHERE a.id = owner FOR NO KEY UPDATE;
  SELECT s.id, r.spent_at INTO session, spent
  FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
  WHERE r.token_hash = presented AND s.account_id = owner AND s.expires_at > now_at
  FOR NO KEY UPDATE OF s;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'refused', NULL::bigint, NULL::uuid, NULL::uuid;
    RETURN;
  END IF;
  IF spent IS NULL THEN
    UPDATE refresh_tokens SET spent_at = now_at WHERE token_hash = presented;
    outcome := 'rotated';
  ELSIF spent >= now_at - retry_window
    AND EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.session_id = session AND r.spent_at IS NULL AND r.parent_hash = presented) THEN
    -- The successor issued before stops working; presenting it later is reuse.
    UPDATE refresh_tokens r SET spent_at = now_at WHERE r.session_id = session AND r.spent_at IS NULL;
    INSERT INTO security_events (account_id, type, occurred_at, client_address, session_id)
    VALUES (owner, 'refresh-retried', now_at, address, session);
    outcome := 'retried';
  ELSE
    RETURN QUERY SELECT 'reused', owner, NULL::uuid, session;
    RETURN;
  END IF;
  INSERT INTO refresh_tokens (token_hash, session_id, created_at, parent_hash) VALUES (successor, session, now_at, presented);
  UPDATE sessions s SET last_used_at = now_at, client_address = address, user_agent = agent WHERE s.id = session;
  RETURN QUERY SELECT outcome, owner, a.public_id, session FROM accounts a WHERE a.id = owner;
END;
$$;
