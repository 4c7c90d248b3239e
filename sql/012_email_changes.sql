-- Changing an account's e-mail address. A pending change is a one-time code of its own purpose,
-- 'email-change', whose row also carries what the code confirms: the new address as typed (an
-- address is not a secret; the code is, and only its hash is stored) and the session that asked.
-- The session's foreign key cascades: a pending change ends with the session that asked for it,
-- so signing out everywhere, a password change or a reset cancels it.
ALTER TABLE one_time_codes ADD COLUMN new_email text CHECK (length(new_email) <= 254);
ALTER TABLE one_time_codes ADD COLUMN session_id uuid REFERENCES sessions (id) ON DELETE CASCADE;
ALTER TABLE one_time_codes ADD CONSTRAINT email_change_codes_carry_the_change
  CHECK ((purpose = 'email-change') = (new_email IS NOT NULL AND session_id IS NOT NULL));
CREATE INDEX one_time_codes_session ON one_time_codes (session_id) WHERE session_id IS NOT NULL;

-- The new purpose and the two new event types are added to whatever the checks list now,
-- rather than restating the lists: another migration may have added values of its own, in
-- either form PostgreSQL prints (ARRAY['a'::text, ...] or '{a,...}'::text[]).
DO $$
DECLARE
  additions constant text[][] := ARRAY[
    ['one_time_codes', 'one_time_codes_purpose_check', 'purpose', 'email-change', 'email-change'],
    ['address_quotas', 'address_quotas_purpose_check', 'purpose', 'email-change', 'email-change'],
    ['security_events', 'security_events_type_check', 'type', 'email-change-requested', 'email-changed']
  ];
  allowed text[];
BEGIN
  FOR i IN 1 .. array_length(additions, 1) LOOP
    SELECT array_agg(DISTINCT m[1] ORDER BY m[1]) INTO STRICT allowed
    FROM pg_constraint AS c,
      regexp_matches(substring(pg_get_constraintdef(c.oid) FROM 'ANY \((.*)\)'), '([a-z][a-z-]*)', 'g') AS m
    WHERE c.conrelid = additions[i][1]::regclass AND c.conname = additions[i][2] AND m[1] <> 'text';
    allowed := allowed || ARRAY[additions[i][4], additions[i][5]];
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', additions[i][1], additions[i][2]);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I = ANY (%L::text[]))', additions[i][1], additions[i][2], additions[i][3],
      (SELECT array_agg(DISTINCT value) FROM unnest(allowed) AS value));
  END LOOP;
END $$;
