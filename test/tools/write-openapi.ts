// Writes the OpenAPI document that GET /openapi.json serves to the file given, for tools that
// read a file, such as `redocly lint` in .ci/run.
import { writeFile } from 'node:fs/promises';
import { buildOpenApiDocument } from '../../src/http/openapi.ts';
import { routes } from '../../src/routes.ts';
import { version } from '../../src/support/version.ts';

const [path] = process.argv.slice(2);
if (path === undefined) {
  process.stderr.write('usage: node --import tsx test/tools/write-openapi.ts FILE\n');
  process.exit(2);
}
await writeFile(path, `${JSON.stringify(buildOpenApiDocument(routes, version), null, 2)}\n`);
