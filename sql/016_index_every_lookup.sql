-- Statements that scanned a whole table, found by test/storage/scans.test.ts (every path,
-- worker and sweep run with table scans priced out; PostgreSQL's scan counts must not move).
-- Each cost more the longer the service ran, whatever it was asked:
--
-- The minutely sweep of registration and reset requests that no worker resolved. The tables
-- are queues the resolver keeps near empty, but a backlog (a flood of requests, or the
-- resolvers stopped) is exactly when the sweep has rows to find.
CREATE INDEX registration_requests_expiry ON registration_requests (expires_at);
CREATE INDEX reset_requests_requested ON reset_requests (requested_at);
-- The delivery of account.deleted, which deletes the account's delivered events with it; it
-- scanned every event kept for the retention week.
CREATE INDEX webhook_events_delivered_account ON webhook_events (account) WHERE state = 'delivered';
-- The metrics count what is waiting and what failed, no longer what was sent (a count of every
-- message kept for the retention week, at each scrape, and for webhooks after each round of
-- the worker). Failed rows are few; these find them without reading the rest.
CREATE INDEX outbox_failed ON outbox (id) WHERE state = 'failed';
CREATE INDEX webhook_events_failed ON webhook_events (id) WHERE state = 'failed';
--
-- The tables are small when the migration runs on a service that sweeps them (the outbox and
-- the webhook events keep a week); each index is built in the migration's transaction, while
-- writes to its table wait.

-- A webhook claim (webhooks/delivery.ts) takes the first due event whose account has no
-- earlier event pending, in the order of next_attempt_at. An event queued behind one that is
-- being retried was due at once, and stayed due, unclaimable, for as long as the retries of the
-- one before it lasted (up to 26 hours): every claim read past all of them. With the receiver
-- down, that is every event of every account but the first, so each claim, one after each
-- commit that queued an event, read more the longer the outage lasted (100 ms for 20,000).
-- An event is now never due before the earlier events of its account: queued no earlier than
-- their next attempt (this trigger), and moved on with the first one when it is deferred
-- (the worker's deferral does that, in the same statement).
CREATE FUNCTION webhook_event_behind_its_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.next_attempt_at := greatest(NEW.next_attempt_at, (
    SELECT max(p.next_attempt_at) FROM webhook_events p WHERE p.account = NEW.account AND p.state = 'pending'));
  RETURN NEW;
END $$;
CREATE TRIGGER webhook_events_behind_their_account BEFORE INSERT ON webhook_events
  FOR EACH ROW EXECUTE FUNCTION webhook_event_behind_its_account();
