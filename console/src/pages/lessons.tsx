// Lessons: what the runs taught, how sure Engram is of each, and the scope promotions waiting for a person's decision.
import { useState } from "preact/hooks";
import { postV2 } from "../api";
import { Async, messageOf, useAsync } from "../components/async";
import { Badge } from "../components/badge";
import { ProvenanceChips } from "../components/provenance";
import { Bar } from "../components/bar";
import { Time } from "../components/time";
import { percent } from "../format";
import { href } from "../router";
import type { LessonEntry, ListLessonsResponse, ResolvePromotionResponse } from "../types";

const STATES = ["proposed", "auditioning", "quarantined"];

export function LessonsPage() {
  const [state, setState] = useState("");
  const [pendingOnly, setPendingOnly] = useState(false);
  const lessons = useAsync(
    () =>
      postV2<ListLessonsResponse>("control/lessons", {
        limit: 200,
        promotion_state: state,
        pending_promotion: pendingOnly,
      }),
    [state, pendingOnly],
  );
  return (
    <section class="page" aria-labelledby="lessons-title">
      <header class="page-head">
        <h1 id="lessons-title">Lessons</h1>
        <p class="muted">Confidence grows with positive outcomes; a lesson confirmed in several runs is proposed for a wider scope.</p>
      </header>
      <div class="toolbar">
        <label class="field inline">
          <span>Promotion state</span>
          <select value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">any</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label class="check">
          <input type="checkbox" checked={pendingOnly} onChange={(e) => setPendingOnly(e.currentTarget.checked)} /> awaiting a decision only
        </label>
      </div>
      <Async state={lessons}>
        {(data) =>
          data.lessons.length === 0 ? (
            <p class="muted empty">No lesson matches.</p>
          ) : (
            <ul class="lesson-list">
              {data.lessons.map((lesson) => (
                <LessonCard key={lesson.id} initial={lesson} />
              ))}
            </ul>
          )
        }
      </Async>
    </section>
  );
}

function LessonCard({ initial }: { initial: LessonEntry }) {
  const [lesson, setLesson] = useState(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");

  async function resolve(resolution: "accept" | "refuse") {
    setBusy(true);
    setError("");
    try {
      const answer = await postV2<ResolvePromotionResponse>("control/lessons/resolve_promotion", {
        lesson_id: lesson.id,
        resolution,
        reason: "decided in the console",
      });
      setLesson(answer.lesson);
    } catch (e: unknown) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  const confidenceTone = lesson.confidence >= 0.7 ? "good" : lesson.confidence >= 0.4 ? "warn" : "bad";
  return (
    <li class={`card lesson${lesson.promotion_state ? " pending" : ""}`} aria-label={`Lesson ${lesson.id}`} data-lesson-id={lesson.id}>
      <div class="lesson-head">
        <Badge text={lesson.lesson_type} tone="muted" />
        <Badge text={`scope ${lesson.scope}`} tone="muted" />
        <Badge text={lesson.importance} tone="muted" />
        <Badge text={lesson.validation_status} />
        {lesson.stale && <Badge text="stale" tone="warn" />}
        {lesson.promotion_refused && <Badge text="promotion refused" tone="muted" />}
        <ProvenanceChips provenance={lesson.provenance} />
        <span class="muted small">
          from <a href={href("runs", lesson.source_run_id)} class="mono">{lesson.source_run_id}</a>, updated <Time iso={lesson.updated_at} />
        </span>
      </div>
      <p class="lesson-content">{lesson.content}</p>
      {lesson.conditions.length > 0 && <p class="muted small">when {lesson.conditions.join("; ")}</p>}
      <div class="lesson-metrics">
        <span class="metric">
          confidence <Bar value={lesson.confidence} max={1} tone={confidenceTone} label={`confidence ${percent(lesson.confidence)}`} /> {percent(lesson.confidence)}
        </span>
        <span class="metric">
          reinforced <strong>{lesson.reinforcement_count}</strong>×
        </span>
        {lesson.verified_in_production && <Badge text="verified in production" tone="good" />}
      </div>
      <div class="promotion" aria-label="Promotion">
        {lesson.promotion_state ? (
          <>
            <span class="promotion-state">
              <Badge text={lesson.promotion_state} /> promotion to <strong>{lesson.promotion_target_scope}</strong>
            </span>
            <button type="button" class="primary" disabled={busy} onClick={() => void resolve("accept")}>
              Accept
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => void resolve("refuse")}>
              Refuse
            </button>
          </>
        ) : (
          <span class="muted small promotion-state">no promotion pending</span>
        )}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <details class="audit">
        <summary>Audit trail ({lesson.audit_trail.length})</summary>
        {lesson.audit_trail.length === 0 ? (
          <p class="muted small">No change recorded.</p>
        ) : (
          <ol class="audit-list">
            {[...lesson.audit_trail].reverse().map((event, index) => (
              <li key={`${event.at}-${index}`}>
                <Time iso={event.at} /> <strong>{event.field}</strong> <span class="mono">{event.old_value || "∅"}</span> →{" "}
                <span class="mono">{event.new_value || "∅"}</span>
                {event.reason && <span class="muted"> — {event.reason}</span>}
                {event.agent_id && <span class="muted"> ({event.agent_id})</span>}
              </li>
            ))}
          </ol>
        )}
      </details>
    </li>
  );
}
