// A plain data table: columns say how to render a cell; an empty list shows a sentence instead of an empty grid.
import type { ComponentChildren } from "preact";

export interface Column<T> {
  readonly header: string;
  readonly cell: (row: T) => ComponentChildren;
  readonly numeric?: boolean;
}

export function Table<T>({ rows, columns, rowKey, empty, label }: {
  rows: readonly T[];
  columns: readonly Column<T>[];
  rowKey: (row: T) => string;
  empty: string;
  label: string;
}) {
  if (rows.length === 0) return <p class="muted empty">{empty}</p>;
  return (
    <table class="table" aria-label={label}>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.header} class={column.numeric ? "num" : ""}>
              {column.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {columns.map((column) => (
              <td key={column.header} class={column.numeric ? "num" : ""}>
                {column.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
