-- A registration request holds its name for its address for the code lifetime, whatever the
-- address holds: no account (the hold comes with the pending registration), a pending
-- registration (the name is not used, but held all the same), or an account (nothing else is
-- stored). Why: if only a new address reserved the name, a second request with the same name
-- and another address (409 or 204) would tell whether the first address has an account.
CREATE TABLE name_holds (
  name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9-]{2,32}$'),
  -- The holding address, lower-cased (the same address a pending registration stores).
  address    text NOT NULL CHECK (length(address) <= 254),
  expires_at timestamptz NOT NULL
);

CREATE INDEX name_holds_address ON name_holds (address);
CREATE INDEX name_holds_expiry ON name_holds (expires_at);

-- Pending registrations from before hold their names from now on.
INSERT INTO name_holds (name, address, expires_at)
SELECT name, lower(email), expires_at FROM accounts WHERE activated_at IS NULL AND expires_at > now();
