import { describe, expect, it } from "vitest";
import { urlProblem } from "../../src/webhooks/validate.ts";

describe("webhook URLs (review): no loopback, private or link-local targets", () => {
  it.each([
    "https://localhost/hook",
    "https://api.localhost/hook",
    "https://127.0.0.1/hook",
    "https://127.1/hook",
    "https://2130706433/hook",
    "https://0x7f000001/hook",
    "https://0.0.0.0/hook",
    "https://10.1.2.3/hook",
    "https://172.16.0.1/hook",
    "https://192.168.1.1/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/hook",
    "https://[::1]/hook",
    "https://[::]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[fd00::1]/hook",
    "https://[fe80::1]/hook",
    "https://[::127.0.0.1]/hook",
    "https://[64:ff9b::7f00:1]/hook",
  ])("refuses %s", (url) => {
    expect(urlProblem(url, false)).not.toBeNull();
  });

  it.each(["https://10.1.2.3/hook", "https://169.254.169.254/x", "http://10.1.2.3/hook", "https://[fd00::1]/hook"])(
    "refuses %s also where local http is allowed (only this machine is)",
    (url) => {
      expect(urlProblem(url, true)).not.toBeNull();
    },
  );

  it.each([
    "https://example.com/hook",
    "https://8.8.8.8/hook",
    "https://[2606:4700::1111]/hook",
    "https://localhost.example.com/x",
  ])("accepts %s", (url) => {
    expect(urlProblem(url, false)).toBeNull();
  });

  it("http:// on this machine stays allowed only when local http is", () => {
    expect(urlProblem("http://127.0.0.1:8787/hook", true)).toBeNull();
    expect(urlProblem("http://localhost:8787/hook", true)).toBeNull();
    expect(urlProblem("http://127.0.0.1:8787/hook", false)).not.toBeNull();
    expect(urlProblem("http://localhost.evil.com/hook", true)).not.toBeNull();
    expect(urlProblem("https://user:pw@example.com/hook", false)).not.toBeNull();
  });
});
