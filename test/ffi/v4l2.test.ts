import { describe, expect, test } from "bun:test";
import * as v4l2 from "../../src/ffi/v4l2.ts";
import { checkAgainstHeaders } from "./cabi.ts";

const consts: Record<string, [string, number]> = {
  BUF_TYPE_VIDEO_CAPTURE: ["V4L2_BUF_TYPE_VIDEO_CAPTURE", v4l2.BUF_TYPE_VIDEO_CAPTURE],
  MEMORY_MMAP: ["V4L2_MEMORY_MMAP", v4l2.MEMORY_MMAP],
  MEMORY_DMABUF: ["V4L2_MEMORY_DMABUF", v4l2.MEMORY_DMABUF],
  FIELD_NONE: ["V4L2_FIELD_NONE", v4l2.FIELD_NONE],
  FRMSIZE_TYPE_STEPWISE: ["V4L2_FRMSIZE_TYPE_STEPWISE", v4l2.FRMSIZE_TYPE_STEPWISE],
  CID_BASE: ["V4L2_CID_BASE", v4l2.CID_BASE],
  CID_HUE: ["V4L2_CID_HUE", v4l2.CID.HUE],
  CTRL_FLAG_NEXT_CTRL: ["V4L2_CTRL_FLAG_NEXT_CTRL", v4l2.CTRL_FLAG_NEXT_CTRL],
  CTRL_TYPE_CTRL_CLASS: ["V4L2_CTRL_TYPE_CTRL_CLASS", v4l2.CTRL_TYPE_CTRL_CLASS],
  BUF_FLAG_DONE: ["V4L2_BUF_FLAG_DONE", v4l2.BUF_FLAG_DONE],
  YUYV: ["V4L2_PIX_FMT_YUYV", v4l2.fourcc("YUYV")],
  MJPEG: ["V4L2_PIX_FMT_MJPEG", v4l2.fourcc("MJPG")],
  FRMIVAL_TYPE_STEPWISE: ["V4L2_FRMIVAL_TYPE_STEPWISE", v4l2.FRMIVAL_TYPE_STEPWISE],
  CAP_TIMEPERFRAME: ["V4L2_CAP_TIMEPERFRAME", v4l2.CAP_TIMEPERFRAME],
  CAMERA_CLASS_BASE: ["V4L2_CID_CAMERA_CLASS_BASE", v4l2.CAMERA_CLASS_BASE],
  ...Object.fromEntries(Object.entries(v4l2.CameraCID).map(([k, v]) => [`CameraCID.${k}`, [`V4L2_CID_${k}`, v]])),
  ...Object.fromEntries(Object.entries(v4l2.Cap).map(([k, v]) => [`Cap.${k}`, [`V4L2_CAP_${k}`, v]])),
};
checkAgainstHeaders("v4l2.ts mirrors linux/videodev2.h", {
  headers: ["sys/time.h", "linux/videodev2.h"],
  structs: v4l2.structs,
  ioctls: v4l2.ioctls,
  consts,
});

test("fourcc round-trips", () => {
  expect(v4l2.fourccString(v4l2.fourcc("MJPG"))).toBe("MJPG");
  expect(v4l2.fourcc("YUYV")).toBe(0x56595559);
});
