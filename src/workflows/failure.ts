/**
 * Temporal wraps a failure once per hop (an update, a child workflow, an
 * activity, the engine's reply): the wrappers say where it failed, the
 * innermost cause says why. Workflows, the CLI and the bench report that one.
 */

/** The innermost error of a cause chain. */
export function innermostCause(err: unknown): unknown {
  let e = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e;
}

/** The innermost error's message (or the thrown value, as text). */
export function causeMessage(err: unknown): string {
  const e = innermostCause(err);
  return e instanceof Error ? e.message : String(e);
}
