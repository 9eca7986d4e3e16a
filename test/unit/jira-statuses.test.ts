/**
 * The Jira adapter's status read with no id Jira could have given: answered empty without a request (`id in ()` is a
 * JQL syntax error that would fail the whole ticket sync of the platform).
 */
import { describe, expect, it, vi } from "vitest";
import { jira } from "../../core/integration/tickets/jira";

describe("jira statuses", () => {
  it("ids that are not Jira's numeric ids: an empty answer, no request sent", async () => {
    const fetch = vi.spyOn(globalThis, "fetch");
    try {
      await expect(jira("token", "cloud-1").statuses(["ENG-12", "0", "-3"])).resolves.toEqual([]);
      expect(fetch).not.toHaveBeenCalled();
    } finally {
      fetch.mockRestore();
    }
  });
});
