/**
 * The body of an answer `fetch` gave, read as it comes: null once it passes `maxBytes`, the rest
 * then left unread (leaving the loop cancels the stream), so that no answer fills the memory.
 */
export async function readAtMost(response: Response, maxBytes: number): Promise<Buffer | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    if (size > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
