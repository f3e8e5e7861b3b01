// Renders a unified diff (as the prompt and skill diff routes return it) with line numbers and colours.

export type DiffLineKind = "file" | "hunk" | "add" | "del" | "context" | "note";

export interface DiffLine {
  readonly kind: DiffLineKind;
  readonly text: string;
  readonly oldNumber?: number;
  readonly newNumber?: number;
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** Splits a unified diff into typed lines, numbering each side from its hunk headers. */
export function parseUnifiedDiff(text: string): DiffLine[] {
  const lines: DiffLine[] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const raw of text.split("\n")) {
    if (raw === "") continue;
    if (raw.startsWith("---") || raw.startsWith("+++") || raw.startsWith("Index:") || raw.startsWith("====")) {
      lines.push({ kind: "file", text: raw });
      continue;
    }
    const hunk = HUNK.exec(raw);
    if (hunk) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      lines.push({ kind: "hunk", text: raw });
    } else if (raw.startsWith("+")) lines.push({ kind: "add", text: raw.slice(1), newNumber: newLine++ });
    else if (raw.startsWith("-")) lines.push({ kind: "del", text: raw.slice(1), oldNumber: oldLine++ });
    else if (raw.startsWith("\\")) lines.push({ kind: "note", text: raw });
    else lines.push({ kind: "context", text: raw.slice(1), oldNumber: oldLine++, newNumber: newLine++ });
  }
  return lines;
}

const MARK: Record<DiffLineKind, string> = { file: "", hunk: "", add: "+", del: "−", context: " ", note: "" };

export function DiffView({ text, label }: { text: string; label: string }) {
  if (text.trim() === "") return <p class="muted empty">The two versions are identical.</p>;
  const lines = parseUnifiedDiff(text);
  const added = lines.filter((line) => line.kind === "add").length;
  const removed = lines.filter((line) => line.kind === "del").length;
  return (
    <figure class="diff" aria-label={label}>
      <figcaption>
        <span class="diff-added">+{added}</span> <span class="diff-removed">−{removed}</span> {label}
      </figcaption>
      <div class="diff-lines" role="table" aria-label={label}>
        {lines.map((line, index) => (
          <div class={`diff-line diff-${line.kind}`} role="row" key={index}>
            <span class="diff-num" role="cell">{line.oldNumber ?? ""}</span>
            <span class="diff-num" role="cell">{line.newNumber ?? ""}</span>
            <span class="diff-mark" role="cell">{MARK[line.kind]}</span>
            <span class="diff-text" role="cell">{line.text}</span>
          </div>
        ))}
      </div>
    </figure>
  );
}
