// upnp (placeholder)
// the plugin is "unavailable" (getPlugin and runDetect say why); with it, detection
// lists the raw devices libmtp finds.
import type { Indexer, Device } from "../indexer";
import type { Plugin } from "./plugin";
import type { ScanResult } from "../backend/scanner";

export class UpnpPlugin implements Plugin {
  readonly name = "upnp" as const;
  active = false;
  detecting = false;
  constructor(private ix: Indexer) {}
  unavailable() {
    return "not implemented";
  }
  async startDetect() {}
  stopDetect() {}
  async scan(_dev: Device, _sub: string, _r: boolean, _a: { aborted: boolean }): Promise<ScanResult> {
    return { files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], ms: 0, aborted: true };
  }
  close() {}
}
