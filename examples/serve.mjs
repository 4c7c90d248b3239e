// Serves this folder's pages at http://localhost:5173 for trying the examples against npm start
// (`npm run examples`). Plain node:http: the files of this folder only, nothing else.
import { readFile, readdir } from 'node:fs/promises';
import { createServer } from 'node:http';

const port = Number(process.env.EXAMPLES_PORT ?? 5173);
const folder = new URL('.', import.meta.url);
const pages = (await readdir(folder)).filter((name) => name.endsWith('.html'));

createServer(async (req, res) => {
  const name = new URL(req.url ?? '/', 'http://x').pathname.slice(1) || 'account.html';
  if (!pages.includes(name)) {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`No such page; there are ${pages.join(', ')}\n`);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(await readFile(new URL(name, folder)));
}).listen(port, 'localhost', () => {
  const others = pages.filter((name) => name !== 'account.html').map((name) => `http://localhost:${port}/${name}`);
  process.stdout.write(`The example pages: http://localhost:${port}/account.html, and ${others.join(', ')}\n`);
});
