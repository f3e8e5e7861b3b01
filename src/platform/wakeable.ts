// A background pass run on demand (a reader following a stream, woken by hints and polls), one pass at a time.

/**
 * Returns `wake`, which runs `pass` unless a pass is running; a wake-up while one runs makes it run once more when it
 * ends (what the wake-up announced may have come after the running pass read), however many wake-ups came meanwhile.
 * A pass that throws ends the round; `onError` hears why, and the next wake-up starts again.
 */
export function wakeable(pass: () => Promise<void>, onError: (error: unknown) => void): () => Promise<void> {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await pass();
      } while (again);
    } catch (e: unknown) {
      onError(e);
    } finally {
      running = false;
    }
  };
}
