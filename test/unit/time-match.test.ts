// Which periods a question names, resolved against the scope's newest entry: a day, a month or a year by the
// precision the expression gives; nothing for a question without a time or with one that fixes no calendar field.
import { describe, expect, it } from "vitest";
import { namedPeriods } from "../../src/retrieval/ranking/time-match.js";

const at = (iso: string): number => Date.parse(iso) / 1000;
const REFERENCE = at("2023-10-20T12:00:00Z");

describe("time match", () => {
  it("resolves a date, a month and a relative year against the reference", () => {
    expect(namedPeriods("What did Melanie paint on October 13, 2023?", REFERENCE)).toEqual([{ start: at("2023-10-13T00:00:00Z"), end: at("2023-10-14T00:00:00Z") }]);
    expect(namedPeriods("When did Melanie go camping in June?", REFERENCE)).toEqual([{ start: at("2023-06-01T00:00:00Z"), end: at("2023-07-01T00:00:00Z") }]);
    expect(namedPeriods("What did they see during the trip last year?", REFERENCE)).toEqual([{ start: at("2022-01-01T00:00:00Z"), end: at("2023-01-01T00:00:00Z") }]);
  });

  it("names no period without a time, or for one that fixes no calendar field", () => {
    expect(namedPeriods("What activities does Melanie partake in?", REFERENCE)).toEqual([]);
    expect(namedPeriods("How does Jon feel about the opening night of his studio?", REFERENCE)).toEqual([]);
  });
});
