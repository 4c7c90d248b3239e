import type { IncomingMessage } from 'node:http';
import { HttpError, problems } from './errors.ts';
import { isPlainObject } from '../validation.ts';

export const maxBodyBytes = 8 * 1024;

export type MediaType = 'application/json' | 'application/x-www-form-urlencoded';

/** `fatal` makes invalid UTF-8 an error instead of silently becoming U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a JSON object body. Unknown media types, other charsets, oversize bodies,
 * invalid UTF-8 and anything but a JSON object are refused before a handler sees them.
 */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const { text } = await readText(req, ['application/json']);
  return parseJsonObject(text);
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

export async function readText(req: IncomingMessage, accepted: MediaType[]): Promise<{ mediaType: MediaType; text: string }> {
  const mediaType = acceptedMediaType(req.headers['content-type'], accepted);
  if (mediaType === null) {
    throw new HttpError(problems.unsupportedMediaType, { detail: `Send the body as ${accepted.join(' or ')} in UTF-8.` });
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) throw tooLarge();
  const bytes = await readLimited(req, maxBodyBytes);
  try {
    return { mediaType, text: utf8.decode(bytes) };
  } catch {
    throw new HttpError(problems.malformedBody, { detail: 'The body is not valid UTF-8.' });
  }
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
 * Collects at most `limit` bytes. Past it the stream is paused, not drained, so a huge body
 * never reaches memory; the server then closes the connection after answering 413.
 */
function readLimited(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    // An error on the request stream, or a close before its end, means the client went away
    // mid-body. No answer can reach it; this only ends the handler, so that nothing waits
    // for a body that will never come and nothing is logged as a fault of the service.
    const onError = () => {
      cleanup();
      reject(new HttpError(problems.malformedBody, { detail: 'The request body was cut off.' }));
    };
    const onClose = onError;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

function tooLarge(): HttpError {
  return new HttpError(problems.bodyTooLarge, { detail: `The body must not exceed ${maxBodyBytes} bytes.` });
}
