// Board recipes: the built-in virtual board, lookup by name and path, and errors
// that name what is wrong.
import { test, expect } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadBoard } from "../../src/core/board";
import { findService, SERVICES } from "../../src/services";

test("no name means the virtual board, which hosts every service", () => {
  const b = loadBoard();
  expect(b.name).toBe("virtual");
  expect(b.backend).toBe("virtual");
  expect([...b.services].sort()).toEqual(Object.keys(SERVICES).sort());
});

test("a recipe by path and by name from $DEVSERVICES_RECIPES", () => {
  const dir = mkdtempSync(join(tmpdir(), "recipes-"));
  writeFileSync(join(dir, "myboard.json"), JSON.stringify({ name: "myboard", backend: "linux", services: ["testautomation"] }));
  expect(loadBoard(join(dir, "myboard.json")).backend).toBe("linux");
  process.env.DEVSERVICES_RECIPES = dir;
  try {
    const b = loadBoard("myboard");
    expect(b.services).toEqual(["testautomation"]);
    expect(b.serviceConfig).toEqual({});
  } finally {
    delete process.env.DEVSERVICES_RECIPES;
  }
});

test("errors name the recipe and the field", () => {
  const dir = mkdtempSync(join(tmpdir(), "recipes-"));
  writeFileSync(join(dir, "bad.json"), JSON.stringify({ name: "bad", backend: "quantum", services: [] }));
  expect(() => loadBoard(join(dir, "bad.json"))).toThrow(/bad\.json is invalid[\s\S]*backend[\s\S]*services/);
  writeFileSync(join(dir, "broken.json"), "{ nope");
  expect(() => loadBoard(join(dir, "broken.json"))).toThrow(/broken\.json is not valid JSON/);
  expect(() => loadBoard("no-such-board")).toThrow(/no board recipe named no-such-board/);
});

test("services are found by short name and by bus name", () => {
  expect(findService("testautomation")?.spec.busName).toBe("com.vendor.service.testautomation");
  expect(findService("com.vendor.service.power2")?.spec.name).toBe("power2");
  expect(findService("nothing")).toBeUndefined();
});
