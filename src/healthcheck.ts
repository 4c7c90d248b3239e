// The container's HEALTHCHECK (Dockerfile): GET /healthz on the address the service listens on.
// HOST 0.0.0.0 or :: (all addresses, the image's default) is reached on loopback; any other
// HOST only on itself, so the check goes there. Exit 0 when the answer is 200, else 1.
const host = process.env.HOST || '127.0.0.1';
const target = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
const url = `http://${target}:${process.env.PORT || 8080}/healthz`;
fetch(url, { signal: AbortSignal.timeout(2_500) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
