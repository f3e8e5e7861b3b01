// A time shown relative ("5 minutes ago") with the exact time on hover.
import { ago, dateTime } from "../format";

export function Time({ iso }: { iso: string }) {
  if (!iso) return <span class="muted">–</span>;
  return (
    <time dateTime={iso} title={dateTime(iso)}>
      {ago(iso)}
    </time>
  );
}
