// Versions of a prompt or skill, newest first, and the diff between any two of them (older on the left).
import { useEffect, useState } from "preact/hooks";
import { Async, useAsync } from "./async";
import { Badge } from "./badge";
import { DiffView } from "./diff-view";
import { Time } from "./time";
import type { Version } from "../types";

export function VersionHistory({ title, versions, diff }: {
  title: string;
  /** Newest first, as the version routes list them. */
  versions: readonly Version[];
  diff: (olderId: string, newerId: string) => Promise<string>;
}) {
  const [older, setOlder] = useState(versions[1]?.version_id ?? "");
  const [newer, setNewer] = useState(versions[0]?.version_id ?? "");
  useEffect(() => {
    setOlder(versions[1]?.version_id ?? "");
    setNewer(versions[0]?.version_id ?? "");
  }, [versions]);
  const text = useAsync(() => (older && newer && older !== newer ? diff(older, newer) : Promise.resolve("")), [older, newer]);
  return (
    <div class="versions">
      <table class="table compact" aria-label={`${title} versions`}>
        <thead>
          <tr>
            <th>Version</th>
            <th>Status</th>
            <th>Source</th>
            <th class="num">Outcomes</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.version_id}>
              <td class="mono">v{v.version_number}</td>
              <td>
                <Badge text={v.status} />
              </td>
              <td>{v.source}</td>
              <td class="num">{v.outcome_count > 0 ? `${v.outcome_count} (avg ${v.avg_outcome_score.toFixed(2)})` : "–"}</td>
              <td>
                <Time iso={v.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {versions.length < 2 ? (
        <p class="muted small">One version only: nothing to compare yet.</p>
      ) : (
        <>
          <div class="toolbar">
            <VersionSelect caption="From" ariaLabel={`${title}: older version`} versions={versions} value={older} onChange={setOlder} />
            <VersionSelect caption="to" ariaLabel={`${title}: newer version`} versions={versions} value={newer} onChange={setNewer} />
          </div>
          {older === newer ? <p class="muted small">Pick two different versions.</p> : <Async state={text}>{(diffText) => <DiffView text={diffText} label={`${title} diff`} />}</Async>}
        </>
      )}
    </div>
  );
}

function VersionSelect({ caption, ariaLabel, versions, value, onChange }: {
  caption: string;
  ariaLabel: string;
  versions: readonly Version[];
  value: string;
  onChange: (versionId: string) => void;
}) {
  return (
    <label class="field inline">
      <span>{caption}</span>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)} aria-label={ariaLabel}>
        {versions.map((v) => (
          <option key={v.version_id} value={v.version_id}>
            {`v${v.version_number} · ${v.status}`}
          </option>
        ))}
      </select>
    </label>
  );
}
