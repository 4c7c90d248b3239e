// Lints an OpenAPI document with two tools integrators use, both offline: swagger-parser's
// validation against the OpenAPI 3.1 schema, and Spectral's `spectral:oas` ruleset. Exported for
// test/openapi.test.ts; run as a script on a file in .ci/run.
import { readFile } from 'node:fs/promises';
import SwaggerParser from '@apidevtools/swagger-parser';
import spectralCore from '@stoplight/spectral-core';
import { oas } from '@stoplight/spectral-rulesets';

const { Spectral, Document } = spectralCore;
const Parsers = await import('@stoplight/spectral-parsers');

/** Every complaint of either tool, one line each; empty when the document is clean. */
export async function lintApiDocument(document: object): Promise<string[]> {
  const problems: string[] = [];
  try {
    // validate() dereferences in place: it gets a copy.
    await SwaggerParser.validate(structuredClone(document) as never);
  } catch (error) {
    problems.push(`swagger-parser: ${(error as Error).message}`);
  }
  const spectral = new Spectral();
  spectral.setRuleset(oas as never);
  const results = await spectral.run(new Document(JSON.stringify(document, null, 2), Parsers.Json));
  for (const result of results) problems.push(`spectral ${result.code}: ${result.message} at ${result.path.join('.')}`);
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [path] = process.argv.slice(2);
  if (path === undefined) {
    process.stderr.write('usage: node --import tsx test/tools/lint-openapi.ts FILE\n');
    process.exit(2);
  }
  const problems = await lintApiDocument(JSON.parse(await readFile(path, 'utf8')));
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  process.stdout.write(`${path}: ${problems.length === 0 ? 'clean under swagger-parser and spectral:oas' : `${problems.length} problems`}\n`);
  process.exit(problems.length === 0 ? 0 : 1);
}
