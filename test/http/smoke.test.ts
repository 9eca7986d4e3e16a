import { describe, expect, it } from "vitest";
import { call, newUser } from "../support/api";

describe("smoke", () => {
  it("creates a user on first request and a workspace", async () => {
    const u = await newUser({ name: "Ada" });
    expect(u.profile.email).toBe(u.email);
    const ws = await call("POST", "/api/workspaces", { token: u.token, body: { name: "W" } });
    expect(ws.status).toBe(201);
    const list = await call("GET", "/api/workspaces", { token: u.token });
    expect(list.body.total).toBe(1);
  });
});
