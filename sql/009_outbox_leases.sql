-- A message is claimed for sending, not locked while it is sent: the worker writes a lease
-- (a random id, and next_attempt_at moved past the longest send), commits, and talks to SMTP
-- with no connection and no lock held. Only the holder of the lease may mark the message; a
-- worker that died mid-send leaves a lease that runs out, and the message is due again.
ALTER TABLE outbox ADD COLUMN lease uuid;
