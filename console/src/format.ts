// Display formats shared by the pages: times, sizes, numbers.

const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 30],
  ["month", 12],
  ["year", Infinity],
];

/** "3 minutes ago" for an RFC 3339 time; empty input stays empty. */
export function ago(iso: string, now = Date.now()): string {
  if (!iso) return "";
  let amount = (Date.parse(iso) - now) / 1000;
  if (Number.isNaN(amount)) return iso;
  for (const [unit, size] of STEPS) {
    if (Math.abs(amount) < size) return relative.format(Math.round(amount), unit);
    amount /= size;
  }
  return iso;
}

export function dateTime(iso: string): string {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "medium" });
}

/** Bytes in binary units; int64 values arrive from the gateway as strings. */
export function bytes(value: string | number): string {
  let size = Number(value);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit++;
  }
  return `${size.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function percent(fraction: number): string {
  return `${Math.round(fraction * 100)} %`;
}

export function fixed(value: number, digits = 3): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "–";
}

export function count(value: string | number): string {
  return Number(value).toLocaleString("en");
}
