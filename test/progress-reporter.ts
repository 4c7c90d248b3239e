// A node:test reporter that prints one line as each test file ends: `file 12 of 64 done:
// test/e2e/sessions.test.ts (ok)`. test/run.ts passes it beside the spec reporter, with the
// number of files in TEST_FILE_COUNT; the run's own output is unchanged.
import { relative } from 'node:path';

type Event = { type: string; data: { nesting?: number; file?: string; name?: string; details?: { passed?: boolean } } };

export default async function* progress(source: AsyncIterable<Event>): AsyncGenerator<string> {
  const total = process.env.TEST_FILE_COUNT ?? '?';
  let done = 0;
  for await (const { type, data } of source) {
    // A file's own test: nesting 0, named after its file as the run was given it.
    if (type !== 'test:complete' || data.nesting !== 0 || data.file === undefined || data.name === undefined || !data.file.endsWith(data.name)) continue;
    done += 1;
    yield `file ${done} of ${total} done: ${relative(process.cwd(), data.file)} (${data.details?.passed === false ? 'FAILED' : 'ok'})\n`;
  }
}
