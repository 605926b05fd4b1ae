/**
 * Where each refused field of a library call was, as the service's 400 says it: every detail of a
 * ValidationError carries `in` ("param", "query" or "json"), as functions/router.ts `refuse` labels
 * a failed route validation. The library refused the same input with the same code and paths but
 * without `in` (review 20), so code handling both the client's errors and the library's could not
 * tell a bad name from a bad option, nor match one detail list against the other.
 *
 * One table per handle: each public method's route, as the field names that are its path
 * parameters (the handle's name, a member or player argument) and where the rest of its input goes
 * (a read's options are its query; a write's input its JSON body). The handles' methods are wrapped
 * once, here, so no method can forget it; a method missing from its table is a type error.
 * A write's `idempotencyKey` (and its options object) is labelled `header` where it is refused
 * (./shared.ts `idempotencyOf`): the service takes it as the Idempotency-Key header.
 */
import { ValidationError, type FieldIssue, type FieldLocation } from "../errors.ts";

/**
 * One method's route: where its input goes, then the field names that are its path parameters; a
 * name written `?name` is a query parameter of a route whose other input is its body (`?` alone:
 * the options object itself, path "").
 */
export type Route = readonly [rest: "query" | "json", ...fields: string[]];

type Methods<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => Promise<unknown> ? K : never]: Route;
};

/** `issue` with `in`, from the first segment of its path. */
function locate(issue: FieldIssue, [rest, ...fields]: Route): FieldIssue {
  if (issue.in !== undefined) return issue;
  const head = issue.path.split(".")[0] ?? "";
  const where: FieldLocation = fields.includes(head) ? "param" : fields.includes(`?${head}`) ? "query" : rest;
  return { in: where, ...issue };
}

/** The same error with each detail located, or `error` itself when there is nothing to add. */
function located(error: unknown, route: Route): unknown {
  if (!(error instanceof ValidationError) || !error.details?.some((d) => d.in === undefined)) return error;
  const details = error.details.map((issue) => locate(issue, route));
  // a new error of the same class and code (`details` is read-only), keeping the original stack and cause
  const copy = new ValidationError(error.message, details, error.code);
  copy.stack = error.stack;
  if (error.cause !== undefined) copy.cause = error.cause;
  return copy;
}

/**
 * Wraps each method of `cls` named in `routes` so that a ValidationError it rejects with has its
 * details located. Runs once per class, when its module loads.
 */
export function locateMethods<T extends object>(cls: { prototype: T }, routes: Methods<T>): void {
  const proto = cls.prototype as Record<string, unknown>;
  for (const [name, route] of Object.entries(routes) as [string, Route][]) {
    const method = proto[name] as (...args: unknown[]) => Promise<unknown>;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      enumerable: false,
      value: {
        // a method definition keeps the method's own name (stack traces, `stats.top.name`)
        async [name](this: unknown, ...args: unknown[]) {
          try {
            return await method.apply(this, args);
          } catch (error) {
            throw located(error, route);
          }
        },
      }[name],
    });
  }
}
