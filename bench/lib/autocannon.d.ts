// autocannon ships no types; the bench uses only its callback API and `response` event.
declare module "autocannon" {
  const autocannon: (
    options: Record<string, unknown>,
    done: (error: Error | null, result: any) => void,
  ) => {
    on(event: string, listener: (...args: any[]) => void): void;
    stop(): void;
  };
  export default autocannon;
}
