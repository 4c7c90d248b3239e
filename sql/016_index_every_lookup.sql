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
