import type { IncomingMessage } from 'node:http';
import { HttpError, invalidFields, problems } from './errors.ts';
import { isPlainObject, validateFields, type Schema, type Valid } from './validate.ts';

export const maxBodyBytes = 8 * 1024;

export type MediaType = 'application/json' | 'application/x-www-form-urlencoded';

/** `fatal` makes invalid UTF-8 an error instead of silently becoming U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The JSON object body checked against `schema`; every failing field at once in one 400 (invalid-fields). */
export async function readValidBody<S extends Schema>(req: IncomingMessage, schema: S): Promise<Valid<S>> {
  const { value, invalid } = validateFields(await readJsonObject(req), schema);
  if (invalid.length > 0) throw invalidFields(invalid);
  return value;
}

/**
 * Reads a JSON object body. Unknown media types, other charsets, oversize bodies,
 * invalid UTF-8 and anything but a JSON object are refused before a handler sees them.
 */
export function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  return readBody(req, ['application/json'], (_mediaType, text) => parseJsonObject(text));
}

export function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(problems.malformedBody, { detail: 'The body is not valid JSON.' });
  }
  if (!isPlainObject(value)) throw new HttpError(problems.malformedBody, { detail: 'The body must be a JSON object.' });
  return value;
}

/**
 * Reads the body as UTF-8 text of one of the `accepted` media types and returns what `parse`
 * makes of it. The media type and the declared length are refused before a byte is read.
 */
export function readBody<T>(
  req: IncomingMessage, accepted: MediaType[], parse: (mediaType: MediaType, text: string) => T,
): Promise<T> {
  const mediaType = acceptedMediaType(req.headers['content-type'], accepted);
  if (mediaType === null) {
    const detail = `Send the body as ${accepted.join(' or ')} in UTF-8.`;
    return Promise.reject(new HttpError(problems.unsupportedMediaType, { detail }));
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) return Promise.reject(tooLarge());
  return readLimited(req, maxBodyBytes, (bytes) => {
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new HttpError(problems.malformedBody, { detail: 'The body is not valid UTF-8.' });
    }
    return parse(mediaType, text);
  });
}

/** The media type if it is one of `accepted` with no charset or a UTF-8 one, else null. */
export function acceptedMediaType(header: string | undefined, accepted: MediaType[]): MediaType | null {
  if (header === undefined) return null;
  const [type = '', ...parameters] = header.split(';').map((part) => part.trim().toLowerCase());
  const match = accepted.find((candidate) => candidate === type);
  if (match === undefined) return null;
  for (const parameter of parameters) {
    const [key, value = ''] = parameter.split('=').map((part) => part.trim().replace(/^"|"$/g, ''));
    if (key === 'charset' && value !== 'utf-8' && value !== 'utf8') return null;
  }
  return match;
}

/**
 * Collects at most `limit` bytes and returns what `use` makes of them (or its throw, as the
 * rejection). Past the limit the stream is paused, not drained, so a huge body never reaches
 * memory; the server then closes the connection after answering 413.
 */
function readLimited<T>(req: IncomingMessage, limit: number, use: (bytes: Buffer) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // The promise settles once; whatever the stream emits after that is ignored. The listeners
    // stay on the request, which lives no longer than they do.
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        req.pause();
        settle(() => reject(tooLarge()));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () =>
      settle(() => {
        try {
          resolve(use(Buffer.concat(chunks, size)));
        } catch (error) {
          reject(error);
        }
      }),
    );
    // A close before the end means the client went away mid-body. No answer can reach it; this
    // only ends the handler, so that nothing waits for a body that will never come and nothing
    // is logged as a fault of the service. Only 'close' is listened to: a request stream that
    // fails always closes, and node:http emits its 'error' only to listeners (there are none).
    const cutOff = () => new HttpError(problems.malformedBody, { detail: 'The request body was cut off.' });
    req.on('close', () => settle(() => reject(cutOff())));
  });
}

function tooLarge(): HttpError {
  return new HttpError(problems.bodyTooLarge, { detail: `The body must not exceed ${maxBodyBytes} bytes.` });
}
