// Options schemas build a type several of their fields share once and give each field
// its own default (src/core/config.ts, "Shared option types"). A shared type must not
// carry one field's default, bound or message into another's.
import { expect, test } from "bun:test";
import { cameraOptions } from "../../src/services/camera/config";
import { fileCacheOptions } from "../../src/services/filecache/config";
import { intentOptions } from "../../src/services/intent/config";
import { mediaIndexerOptions } from "../../src/services/mediaindexer/config";
import { parseSection } from "../../src/services/peripheralmanager/recipe";
import { readRecipe } from "../../src/services/record/recipe";
import { loadBoard } from "../../src/core/board";
import { findService } from "../../src/services";

test("each option keeps its own default where the fields share a type", () => {
  const intent = intentOptions().parse({});
  expect([intent.launchTimeoutMs, intent.intentLifetimeMs, intent.maxIntents, intent.maxHandlerProcessesPerUid, intent.maxHandlerProcesses]).toEqual([10000, 300000, 1024, 16, 64]);
  expect(intent.launchBurstPerUid).toBeUndefined();
  const camera = cameraOptions().parse({});
  expect([camera.ringSlots, camera.shmMode, camera.frameTimeoutMs, camera.captureNameTries, camera.jpegQuality]).toEqual([8, 0o660, 5000, 1000, 85]);
  const media = mediaIndexerOptions("/var/lib/x").parse({});
  expect([media.rescanInterval, media.fallbackRescanInterval, media.mtpDetectInterval, media.upnp.searchInterval, media.scanAnswerTimeout]).toEqual([3600, 300, 10, 300, 20]);
  expect([media.scanConcurrency, media.maxWatches, media.scanBatchFiles, media.upnp.port, media.upnp.mx, media.upnp.pageSize]).toEqual([8, 8192, 1024, 1900, 1, 500]);
  const cache = fileCacheOptions("/var/lib/fc").parse({});
  expect([cache.cacheDirectory, cache.metadataFile, cache.copyDirectory]).toEqual(["/var/lib/fc/cache", "/var/lib/fc/filecache.db", "/var/lib/fc/copies"]);
  expect([cache.defaultCost, cache.defaultLifetime, cache.maxFileNameBytes, cache.storageRetryInterval]).toEqual([1, 0, 255, 1000]);
});

test("each option keeps its own bounds and names itself in the message", () => {
  // The same shared integer: one field's bounds are not another's.
  expect(cameraOptions().safeParse({ jpegQuality: 100, ringSlots: 64 }).success).toBe(true);
  const r = cameraOptions().safeParse({ ringSlots: 65 });
  expect(r.success).toBe(false);
  expect(r.error!.issues.map((i) => i.path.join("."))).toEqual(["ringSlots"]);
  // scanAnswerTimeout adds a maximum to the shared seconds; the other seconds have none.
  expect(mediaIndexerOptions("/x").safeParse({ rescanInterval: 86400 }).success).toBe(true);
  expect(mediaIndexerOptions("/x").safeParse({ scanAnswerTimeout: 61 }).error!.issues[0]!.path).toEqual(["scanAnswerTimeout"]);
  // The file cache's bounded integer and its message.
  const fc = fileCacheOptions("/x").safeParse({ defaultCost: 101 });
  expect(fc.error!.issues[0]!.message).toBe("must be 0 to 100");
  expect(fileCacheOptions("/x").safeParse({ defaultLifetime: 1_000_000 }).success).toBe(true);
  // The peripheral section's shared integer: a line offset may be 0, a header pin may not.
  expect(() => parseSection({ gpio: { gpio1: { line: 0 } } }, "b")).not.toThrow();
  expect(() => parseSection({ gpio: { gpio1: { header: 0 } } }, "b")).toThrow(/gpio\.gpio1\.header/);
  expect(parseSection({ uart: { UART0: { device: "/dev/ttyS0" } } }, "b").uart.UART0!.baudrate).toBe(115200);
});

test("a camera stream of the record section keeps its own value beside the shared defaults; every pipeline is an instance", () => {
  const board = { ...loadBoard("virtual"), record: { pipelines: ["main", "second"], videoSources: { cam: { camera: "c1", fps: 15 } } } };
  expect(readRecipe(board).videoSources.cam).toEqual({ camera: "c1", width: 640, height: 480, fps: 15 });
  // The section is read once for all its pipelines (the instances share it).
  expect(findService("record")!.instances!(board).map((m) => m.spec.busName)).toEqual(["com.vendor.pipeline.record.main", "com.vendor.pipeline.record.second"]);
});
