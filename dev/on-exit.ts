/**
 * Cleanups (killing the processes the tooling started) that run however this
 * process ends. Node's `exit` event does not fire when SIGINT, SIGTERM or
 * SIGHUP ends the process (Ctrl-C, a CI timeout), and a redis-server or a
 * detached `wrangler dev` would then outlive the run and keep its port.
 */
const cleanups = new Set<() => void>();
let installed = false;

function runAll(): void {
  for (const cleanup of [...cleanups]) {
    try {
      cleanup();
    } catch {
      // the process is already gone
    }
  }
  cleanups.clear();
}

/** Runs `cleanup` (synchronously) when this process exits or is signalled; returns the way to cancel it. */
export function onExit(cleanup: () => void): () => void {
  cleanups.add(cleanup);
  if (!installed) {
    installed = true;
    process.once("exit", runAll);
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.once(signal, () => {
        runAll();
        // Then end as the signal would have, unless the program handles it itself (npm run dev does).
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    }
  }
  return () => void cleanups.delete(cleanup);
}
