/*
 * camera_frames: a camera's frames from shared memory. Opens CAMERA, starts a
 * preview on WINDOW, maps the frame ring from the fd of getFd {type: "buffer"},
 * waits on the eventfd of getFd {type: "event"} and reads COUNT frames with
 * src/clients/camera/camera_shm.h; then stops the preview and closes the handle.
 *
 *   camera_frames CAMERA WINDOW COUNT
 *   ./camera_frames camera1 window0 30
 *
 * Output: "handle <n>", "ring <w>x<h> fourcc <fourcc> fps <fps> slots <n>", one
 * "frame <n> seq <device sequence> bytes <size> ts <microseconds>" per frame,
 * "lost <count>", "stopped". A spec error is shown as "error <code>: <text>" (exit 1).
 *
 * The handle is a lease of this connection: it stays open while the program is
 * connected, and the service closes it (stopping the stream) when the program exits.
 * open, startPreview and stopPreview are for root and the group devservices-camera.
 */
#include <poll.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "example_bus.h"
#include "camera_shm.h"

static sd_bus *bus;
static const char *CAMERA = "com.vendor.service.camera2";

/* One call whose failure ends the program; returns the response (malloc'ed). */
static char *must(const char *method, const char *payload, int *fd) {
  char *response = example_call(bus, CAMERA, method, payload, fd);
  if (!response) exit(2);
  if (example_show_error(response)) exit(1);
  return response;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CAMERA WINDOW COUNT\n", argv[0]);
    return 64;
  }
  long wanted = atol(argv[3]);
  char payload[256];
  bus = example_connect();

  snprintf(payload, sizeof payload, "{\"id\":\"%s\"}", argv[1]);
  char *response = must("open", payload, NULL);
  long long handle = json_number(response, "handle", -1);
  free(response);
  printf("handle %lld\n", handle);

  snprintf(payload, sizeof payload, "{\"handle\":%lld,\"windowId\":\"%s\"}", handle, argv[2]);
  free(must("startPreview", payload, NULL));

  int ring_fd, event_fd;
  snprintf(payload, sizeof payload, "{\"handle\":%lld,\"type\":\"buffer\"}", handle);
  free(must("getFd", payload, &ring_fd));
  snprintf(payload, sizeof payload, "{\"handle\":%lld,\"type\":\"event\"}", handle);
  free(must("getFd", payload, &event_fd));
  if (ring_fd < 0 || event_fd < 0) {
    fprintf(stderr, "getFd answered without a descriptor\n");
    return 2;
  }

  struct stat st;
  if (fstat(ring_fd, &st) < 0) { perror("fstat"); return 2; }
  const void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, ring_fd, 0);
  if (base == MAP_FAILED) { perror("mmap"); return 2; }
  if (!camera_ring_valid(base)) { fprintf(stderr, "not a camera ring\n"); return 2; }
  const struct camera_ring_header *h = base;
  printf("ring %ux%u fourcc %.4s fps %.3f slots %u\n", h->width, h->height, (const char *)&h->fourcc, h->fps_milli / 1000.0, h->slot_count);

  unsigned char *frame = malloc(h->slot_size);
  uint32_t next = camera_ring_write_index(base); /* frames from now on */
  long got = 0, lost = 0;
  while (got < wanted) {
    struct camera_frame f;
    int r = camera_ring_read(base, &next, frame, h->slot_size, &f);
    if (r == 1) {
      printf("frame %u seq %u bytes %u ts %llu\n", f.frame, f.device_sequence, f.bytesused, (unsigned long long)f.timestamp_us);
      got++;
    } else if (r == -1) {
      lost++;
    } else if (r == -2) {
      fprintf(stderr, "frame larger than a slot\n");
      return 2;
    } else { /* nothing new: wait for the eventfd (one count per frame written) */
      if (h->flags & CAMERA_RING_STOPPED) { fprintf(stderr, "the stream stopped\n"); break; }
      struct pollfd p = { .fd = event_fd, .events = POLLIN };
      int n = poll(&p, 1, 2000);
      if (n == 0) { fprintf(stderr, "no frame within 2 s\n"); break; }
      uint64_t count;
      if (n > 0 && read(event_fd, &count, sizeof count) < 0 && errno != EAGAIN) { perror("read eventfd"); return 2; }
    }
  }
  printf("lost %ld\n", lost);
  munmap((void *)base, (size_t)st.st_size);
  close(ring_fd);
  close(event_fd);
  free(frame);

  snprintf(payload, sizeof payload, "{\"handle\":%lld}", handle);
  free(must("stopPreview", payload, NULL));
  free(must("close", payload, NULL));
  printf("stopped\n");
  sd_bus_flush_close_unref(bus);
  return got == wanted ? 0 : 1;
}
