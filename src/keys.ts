/**
 * Every Redis key is `<prefix>:<area>:...`. Names are validated against
 * NAME_PATTERN (no ':'), so one name can never spell another key.
 * Each feature builds its keys with `keyOf` in its own module; the README's
 * key schema table lists them all.
 */
export function keyOf(prefix: string, ...parts: (string | number)[]): string {
  return [prefix, ...parts].join(":");
}
