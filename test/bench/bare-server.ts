// The fast-path limit: node:http answering 204 to every request after reading its body, as
// the service does before any work of its own.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.statusCode = 204;
    res.end();
  });
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address !== null ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
