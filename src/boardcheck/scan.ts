// `devservices board scan`: a draft recipe from what the kernel shows, which `board
// check` passes on the same system. I2C addresses are not probed (slaveAddresses is
// left empty for the engineer to fill in); GPIO lines held by another consumer and
// the console's tty are left out.
import { hostname } from "node:os";
import { parseBoard } from "../core/board";
import { loadPeripheralOptions } from "../services/peripheralmanager/config";
import { scanI2c, scanSpi, scanUart } from "./buses";
import { listChips, scanGpio } from "./gpio";
import { listInterfaces } from "./host";
import { listCards, listVideo, scanVideo } from "./media";
import type { HardwareSectionT } from "./section";
import type { ProbeOptions } from "./system";

export async function scanSystem(o: ProbeOptions, name = hostname() || "board"): Promise<Record<string, unknown>> {
  const consumer = loadPeripheralOptions({}).config.gpioConsumer;
  const peripherals = {
    gpio: scanGpio(listChips(o), consumer),
    i2c: scanI2c(o),
    spi: scanSpi(o),
    uart: scanUart(o),
  };
  const video = scanVideo(listVideo(o));
  const cards = listCards(o).filter((c) => !c.error && c.planes.length > 0);
  const interfaces = await listInterfaces(o).catch(() => [] as string[]);

  const services = ["testautomation", "intent", "filecache", "nettools"];
  const serviceConfig: Record<string, Record<string, unknown>> = {};
  const hardware: Partial<HardwareSectionT> = {};
  if (Object.values(peripherals).some((t) => Object.keys(t).length)) services.push("peripheralmanager");
  if (Object.keys(video).length) {
    services.push("camera2");
    serviceConfig.camera2 = { backend: "linux" };
    hardware.video = video;
  }
  const card = cards[0];
  if (card) {
    services.push("videooutput");
    // A card is named by its driver: /dev/dri/cardN numbers follow probe order.
    const byDriver = cards.filter((c) => c.driver === card.driver).length === 1;
    const cardName = byDriver ? card.driver : card.path;
    const sinks = card.planes.slice(0, 2).map((p, i) => ({ sink: i === 0 ? "MAIN" : "SUB0", plane: p.index }));
    serviceConfig.videooutput = { card: cardName, sinks };
    hardware.display = { card: cardName, planes: card.planes.map((p) => ({ index: p.index, ...(p.type ? { type: p.type as "Primary" } : {}), properties: p.properties })) };
  }
  const network = Object.fromEntries(interfaces.filter((n) => n !== "lo").map((n) => [n, { optional: false }]));
  if (Object.keys(network).length) hardware.network = network;

  const draft: Record<string, unknown> = {
    name,
    description: `Draft from devservices board scan on ${name}: check names, fill in I2C slaveAddresses, drop what the product does not use.`,
    backend: "linux",
    services,
    serviceConfig,
    peripheralmanager: peripherals,
    hardware,
  };
  parseBoard(draft, "the scan's draft");
  return draft;
}
