-- An account's deletion erases the mail still queued for its address (delete-account.ts):
-- without an index that was a scan of the whole outbox, sent messages included, for every
-- deletion, so deleting an account cost more the more mail the service had sent (12.8 ms of
-- PostgreSQL time a deletion in the bench, npm run bench -- --only=database-cost). Sent
-- messages keep no recipient (010_bounds.sql), so the index holds only the few unsent ones.
-- Built in the migration's transaction: writes to the outbox wait while it scans the table once.
CREATE INDEX outbox_recipient ON outbox (lower(recipient)) WHERE recipient IS NOT NULL;
