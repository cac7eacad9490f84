// `devservices board check`: every part a board recipe names, probed on the running
// system. Each probe is a few ioctls on a node opened non-blocking, or a request with
// a time bound (I2C reads in the peripheral manager's transfer thread, netlink).
import { readFileSync } from "node:fs";
import type { Board } from "../core/board";
import { loadCameraOptions } from "../services/camera/config";
import { loadConfig as loadMediaIndexerConfig } from "../services/mediaindexer/config";
import { loadPeripheralOptions } from "../services/peripheralmanager/config";
import { parseSection, requireDevices } from "../services/peripheralmanager/recipe";
import { loadPowerOptions } from "../services/power/config";
import { loadVideoOutputOptions } from "../services/videooutput/config";
import { checkI2c, checkSpi, checkUart } from "./buses";
import { checkGpio, listChips } from "./gpio";
import { checkAccess, checkMounts, checkNetwork, checkPower, findRules, listInterfaces, parseRules } from "./host";
import { checkDisplay, checkVideo, listCards, listVideo } from "./media";
import { mismatch, unchecked, type Part } from "./part";
import { parseHardware } from "./section";
import type { ProbeOptions } from "./system";

export interface CheckOptions extends ProbeOptions {
  /** The udev rules to judge node groups and modes by; undefined: the installed 70-devservices.rules, if any. */
  rules?: string;
}

const section = (board: Board, name: string) => ((board as Record<string, unknown>)[name] ?? undefined);
const serviceConfig = (board: Board, name: string) => board.serviceConfig[name] ?? {};
const hosts = (board: Board, name: string) => board.services.includes(name);

export async function checkBoard(board: Board, o: CheckOptions): Promise<Part[]> {
  if (board.backend !== "linux") {
    return [unchecked("board", board.name, `backend is ${board.backend}: the services simulate every device, nothing of the kernel is used`)];
  }
  const parts: Part[] = [];
  const hw = parseHardware(section(board, "hardware"), `board ${board.name}`);

  // Peripherals (the peripheral manager's section).
  const pm = section(board, "peripheralmanager");
  if (pm !== undefined) {
    const s = parseSection(pm, `board ${board.name}`);
    requireDevices(s, `board ${board.name}`);
    const consumer = loadPeripheralOptions(serviceConfig(board, "peripheralmanager")).config.gpioConsumer;
    parts.push(...checkGpio(s.gpio, listChips(o), consumer));
    parts.push(...(await checkI2c(s.i2c, o)), ...checkSpi(s.spi, o), ...checkUart(s.uart, o));
  }

  // Cameras: the hardware section's devices (the camera service finds its cameras itself).
  if (Object.keys(hw.video).length) {
    const seen = listVideo(o);
    parts.push(...checkVideo(hw.video, seen));
  } else if (hosts(board, "camera2")) {
    const cam = loadCameraOptions(serviceConfig(board, "camera2")).config;
    if (cam.backend !== "virtual") {
      const seen = listVideo({ ...o, dev: cam.devDir }).filter((v) => v.capture);
      parts.push(seen.length
        ? { kind: "video", name: "camera2", status: "ok", required: false, found: `capture devices: ${seen.map((v) => `${v.node} (${v.driver})`).join(", ")}`, node: seen[0]!.path }
        : { kind: "video", name: "camera2", status: "missing", required: false, found: `no V4L2 capture device under ${cam.devDir}: the camera service lists no camera`, fix: "the camera's driver, or list the cameras in the hardware section's video" });
    }
  }

  // Display: the video output service's card and sinks, and the hardware section's planes.
  if (hosts(board, "videooutput") || hw.display) {
    const vo = loadVideoOutputOptions(serviceConfig(board, "videooutput")).config;
    const card = hw.display?.card ?? vo.card;
    const cards = listCards(o);
    parts.push(...checkDisplay(card, hosts(board, "videooutput") ? vo.sinks : [], hw.display?.planes ?? [], cards));
  }

  // Network interfaces.
  if (Object.keys(hw.network).length) {
    const here = await listInterfaces(o).catch((e: Error) => e);
    parts.push(...checkNetwork(hw.network, here));
  }

  // Power states.
  if (hosts(board, "power2")) {
    const opts = loadPowerOptions(serviceConfig(board, "power2")).config;
    parts.push(...checkPower(section(board, "power2"), opts.GarageNetworkName, o));
  }

  // Media mount points.
  const dirs: { path: string; why: string }[] = [];
  if (hosts(board, "mediaindexer")) {
    const mi = loadMediaIndexerConfig(serviceConfig(board, "mediaindexer"), "/var/lib/devservices");
    if (mi.removableRoot) dirs.push({ path: mi.removableRoot, why: "mediaindexer removableRoot: removable media are mounted below it" });
    for (const r of mi.mediaRoots) dirs.push({ path: r, why: "mediaindexer mediaRoots" });
  }
  if (dirs.length || Object.keys(hw.mounts).length) parts.push(...checkMounts(dirs, hw.mounts));

  // Groups and modes of the nodes the services open.
  const rulesFile = o.rules ?? findRules();
  const nodesUsed = parts.filter((p) => p.node).map((p) => p.node!);
  if (nodesUsed.length) {
    if (!rulesFile) {
      parts.push(unchecked("access", "nodes", "70-devservices.rules is not installed here (no devservices units): node groups and modes not judged", "--rules FILE to judge them by a rules file"));
    } else {
      let text: string;
      try {
        text = readFileSync(rulesFile, "utf8");
      } catch (e) {
        parts.push(mismatch("access", "nodes", `cannot read ${rulesFile}: ${(e as Error).message}`, "the rules file"));
        return parts;
      }
      parts.push(...checkAccess(nodesUsed, parseRules(text), rulesFile, o));
    }
  }
  return parts;
}
