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
-- rather than restating the lists: another migration may have added values of its own.
DO $$
DECLARE
  additions constant text[][] := ARRAY[
    ['one_time_codes', 'one_time_codes_purpose_check', '''email-change''::text'],
    ['address_quotas', 'address_quotas_purpose_check', '''email-change''::text'],
    ['security_events', 'security_events_type_check', '''email-change-requested''::text, ''email-changed''::text']
  ];
  definition text;
BEGIN
  FOR i IN 1 .. array_length(additions, 1) LOOP
    -- Such as CHECK ((type = ANY (ARRAY['activated'::text, ...]))): its one ']' ends the list.
    SELECT pg_get_constraintdef(oid) INTO STRICT definition FROM pg_constraint
    WHERE conrelid = additions[i][1]::regclass AND conname = additions[i][2];
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', additions[i][1], additions[i][2]);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', additions[i][1], additions[i][2],
      replace(definition, ']', ', ' || additions[i][3] || ']'));
  END LOOP;
END $$;
