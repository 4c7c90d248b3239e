-- Client networks that signed in with an identifier: the owner's way past a budget that
-- strangers spent (login_budgets, level 2 of the sign-in throttle). A network that proved the
-- password for this identifier in the last 30 days may still check it when the budget is
-- empty; level 1 (login_delays, per identifier and network) still bounds it. Keyed like the
-- throttle: no name, address or client address is stored as it came.
CREATE TABLE login_known_clients (
  identifier_key  bytea NOT NULL CHECK (octet_length(identifier_key) = 32),
  client_key      bytea NOT NULL CHECK (octet_length(client_key) = 32),
  last_success_at timestamptz NOT NULL,
  PRIMARY KEY (identifier_key, client_key)
);

CREATE INDEX login_known_clients_last_success ON login_known_clients (last_success_at);
