// placeholder
import type { Indexer, Device } from "./indexer";
import type { Logger } from "../../core/log";
export class Watcher {
  constructor(private ix: Indexer, private log: Logger) {}
  follow(_dev: Device, _available: boolean) {}
  close() {}
}
