/** One line of the input: its number (from 1) and its text, or undefined when it was too long. */
export interface Line {
  number: number;
  text: string | undefined;
}

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into lines without ever holding more than `maxBytes` of one line.
 * node:readline cannot bound a line (one endless line would fill memory), and split2 drops an
 * overflowing line without a trace, which would shift every later line number; so: a few lines here.
 * Splitting on the byte 0x0A is safe in UTF-8, where it never occurs inside a multi-byte character.
 * Pulling chunks with for-await gives backpressure: while the caller awaits, no more is read.
 */
export async function* readLines(
  source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  maxBytes: number,
): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let number = 0;

  const take = (last: Buffer): Line => {
    number++;
    let text: string | undefined;
    if (!overflow && size + last.length <= maxBytes) {
      text = (parts.length === 0 ? last : Buffer.concat([...parts, last])).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
    }
    parts = [];
    size = 0;
    overflow = false;
    return { number, text };
  };

  for await (const input of source) {
    const chunk = typeof input === 'string' ? Buffer.from(input) : input;
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE, start); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      yield take(chunk.subarray(start, end));
      start = end + 1;
    }
    if (start < chunk.length && !overflow) {
      const rest = chunk.subarray(start);
      size += rest.length;
      if (size > maxBytes) {
        overflow = true; // the line's bytes are dropped until its end; it is reported as too long
        parts = [];
      } else {
        parts.push(rest);
      }
    }
  }
  if (size > 0 || overflow) yield take(Buffer.alloc(0));
}
