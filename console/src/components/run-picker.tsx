// A select of the person's runs, most recently active first, for the pages that work on one run.
import { useEffect } from "preact/hooks";
import { getV2 } from "../api";
import type { ListRunsResponse } from "../types";
import { useAsync } from "./async";

export function RunPicker({ value, onChange }: { value: string; onChange: (runId: string) => void }) {
  const runs = useAsync(() => getV2<ListRunsResponse>("control/runs", { limit: 200 }), []);
  const ids = runs.data?.runs.map((run) => run.run_id) ?? [];
  const newest = ids[0] ?? "";
  // Until the person picks one, the most recent run is the one they most likely mean.
  useEffect(() => {
    if (!value && newest) onChange(newest);
  }, [value, newest]);
  return (
    <label class="field">
      <span>Run</span>
      <select aria-label="Run" value={value} onChange={(e) => onChange(e.currentTarget.value)} disabled={ids.length === 0}>
        {ids.length === 0 && <option value="">{runs.loading ? "Loading runs…" : "No runs yet"}</option>}
        {ids.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
    </label>
  );
}
