/* Puts a V4L2 capture device on its HDMI input with the DV timings of a given size
 * and rate, for the camera bench: vivid's webcam input offers 1920x1080 at 5 fps at
 * most, its HDMI input whatever the timings say. The input and timings are device
 * state, so the camera service and GStreamer that open the device afterwards capture
 * from it.
 *   hdmi-input DEVICE WIDTH HEIGHT FPS
 * Prints one JSON line: the input chosen and the timings set. Exit 1 when the device
 * has no input with DV timings or none of its timings matches. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/videodev2.h>

static double rate(const struct v4l2_bt_timings *bt) {
  double total = (double)V4L2_DV_BT_FRAME_WIDTH(bt) * V4L2_DV_BT_FRAME_HEIGHT(bt);
  return total ? (double)bt->pixelclock / total : 0;
}

int main(int argc, char **argv) {
  if (argc != 5) { fprintf(stderr, "usage: %s DEVICE WIDTH HEIGHT FPS\n", argv[0]); return 2; }
  unsigned width = atoi(argv[2]), height = atoi(argv[3]);
  double fps = atof(argv[4]);
  int fd = open(argv[1], O_RDWR);
  if (fd < 0) { fprintf(stderr, "%s: %s\n", argv[1], strerror(errno)); return 1; }
  struct v4l2_input in = {0};
  for (in.index = 0; ioctl(fd, VIDIOC_ENUMINPUT, &in) == 0; in.index++)
    if (in.type == V4L2_INPUT_TYPE_CAMERA && (in.capabilities & V4L2_IN_CAP_DV_TIMINGS)) break;
  if (!(in.capabilities & V4L2_IN_CAP_DV_TIMINGS)) { fprintf(stderr, "%s has no input with DV timings\n", argv[1]); return 1; }
  int index = in.index;
  if (ioctl(fd, VIDIOC_S_INPUT, &index) < 0) { fprintf(stderr, "VIDIOC_S_INPUT %d: %s\n", index, strerror(errno)); return 1; }
  struct v4l2_enum_dv_timings e = {0};
  for (e.index = 0; ioctl(fd, VIDIOC_ENUM_DV_TIMINGS, &e) == 0; e.index++) {
    const struct v4l2_bt_timings *bt = &e.timings.bt;
    if (bt->width != width || bt->height != height || bt->interlaced || fabs(rate(bt) - fps) > 0.5) continue;
    struct v4l2_dv_timings t = e.timings;
    if (ioctl(fd, VIDIOC_S_DV_TIMINGS, &t) < 0) { fprintf(stderr, "VIDIOC_S_DV_TIMINGS: %s\n", strerror(errno)); return 1; }
    printf("{\"input\":%d,\"name\":\"%s\",\"width\":%u,\"height\":%u,\"fps\":%.2f}\n", index, (char *)in.name, t.bt.width, t.bt.height, rate(&t.bt));
    close(fd);
    return 0;
  }
  fprintf(stderr, "%s (input %d) has no DV timings for %ux%u at %g fps\n", argv[1], index, width, height, fps);
  return 1;
}
