/** A fenced code block of a Markdown document, with its language and the `## ` heading it is under. */
export type CodeBlock = { language: string; section: string; code: string; line: number };

/**
 * Every fenced code block (```lang … ```), in order. The indentation of the opening fence (a
 * block inside a list item) is taken off every line, as a reader copying the block would.
 */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let section = '';
  let open: { language: string; indent: number; line: number; lines: string[] } | null = null;
  markdown.split('\n').forEach((text, index) => {
    const fence = /^(\s*)```(\S*)\s*$/.exec(text);
    if (open !== null) {
      if (fence !== null) {
        blocks.push({ language: open.language, section, code: `${open.lines.join('\n')}\n`, line: open.line });
        open = null;
      } else {
        open.lines.push(text.slice(Math.min(open.indent, text.length - text.trimStart().length)));
      }
      return;
    }
    if (fence !== null) open = { language: fence[2]!, indent: fence[1]!.length, line: index + 2, lines: [] };
    else if (text.startsWith('## ')) section = text.slice(3).trim();
  });
  return blocks;
}
