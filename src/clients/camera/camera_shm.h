/*
 * camera_shm.h: reading the frames the camera service (com.vendor.service.camera2)
 * writes into shared memory. The layout is docs/services/camera.md, "Shared memory";
 * src/services/camera/ring.ts writes it (layout.ts here is the same layout), and
 * reader.ts here is the TypeScript reader.
 *
 * Map the ring read-only: POSIX memory from the fd of getFd {type: "buffer"}
 * (mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0), size from fstat), System V from
 * the key of startCamera {params: {type: "sysvshm"}} (shmget(key, 0, 0), then
 * shmat(id, NULL, SHM_RDONLY)). Wait for frames on the eventfd of getFd
 * {type: "event"} (poll for POLLIN, then read 8 bytes), or poll write_index.
 */
#ifndef CAMERA_SHM_H
#define CAMERA_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CAMERA_RING_MAGIC 0x46435344u /* "DSCF" */
#define CAMERA_RING_VERSION 1u
#define CAMERA_RING_STOPPED 0x1u /* header flags: the writer has stopped */

struct camera_ring_header {
  uint32_t magic;
  uint32_t version;
  uint32_t header_size;  /* offset of slot 0 */
  uint32_t slot_count;
  uint32_t slot_size;    /* bytes from one slot to the next (slot header included) */
  uint32_t width;
  uint32_t height;
  uint32_t fourcc;       /* V4L2 pixel format: YUYV or MJPG */
  uint32_t fps_milli;    /* frames per second x 1000 */
  uint32_t flags;        /* CAMERA_RING_STOPPED */
  uint32_t write_index;  /* frames written so far; frame n is in slot n % slot_count */
  uint32_t reserved[5];
};

struct camera_slot_header {
  uint32_t lock;            /* odd while the slot is being written */
  uint32_t bytesused;       /* bytes of the frame */
  uint32_t frame;           /* frame number in the stream (0, 1, 2...) */
  uint32_t device_sequence; /* the driver's sequence number */
  uint64_t timestamp_us;    /* capture time, CLOCK_MONOTONIC microseconds */
  uint32_t flags;
  uint32_t reserved[9];
};

#define CAMERA_SLOT_HEADER_SIZE 64u

struct camera_frame {
  uint32_t frame;
  uint32_t device_sequence;
  uint64_t timestamp_us;
  uint32_t bytesused;
};

static inline uint32_t camera_load_(const volatile uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Whether the mapping holds a ring this header understands. */
static inline int camera_ring_valid(const void *base) {
  const struct camera_ring_header *h = (const struct camera_ring_header *)base;
  return camera_load_(&h->magic) == CAMERA_RING_MAGIC && h->version == CAMERA_RING_VERSION;
}

static inline uint32_t camera_ring_write_index(const void *base) {
  return camera_load_(&((const struct camera_ring_header *)base)->write_index);
}

/*
 * Copies frame *next into dst (cap bytes) and advances *next.
 * Returns 1 with *out filled; 0 when frame *next is not written yet; -1 when it
 * was overwritten before it could be read (*next moves on: count it as lost);
 * -2 when dst is too small.
 */
static inline int camera_ring_read(const void *base, uint32_t *next, void *dst, size_t cap, struct camera_frame *out) {
  const struct camera_ring_header *h = (const struct camera_ring_header *)base;
  uint32_t w = camera_ring_write_index(base);
  if (*next == w) return 0;
  if (w - *next > h->slot_count) { /* fell behind: skip to the oldest frame still there */
    *next = w - h->slot_count;
    return -1;
  }
  uint32_t n = (*next)++;
  const unsigned char *slot = (const unsigned char *)base + h->header_size + (size_t)(n % h->slot_count) * h->slot_size;
  const struct camera_slot_header *s = (const struct camera_slot_header *)slot;
  uint32_t lock = camera_load_(&s->lock);
  uint32_t used = s->bytesused;
  if ((lock & 1u) || s->frame != n) return -1;
  if (used > cap) return -2;
  memcpy(dst, slot + CAMERA_SLOT_HEADER_SIZE, used);
  out->frame = n;
  out->device_sequence = s->device_sequence;
  out->timestamp_us = s->timestamp_us;
  out->bytesused = used;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (camera_load_(&s->lock) != lock) return -1; /* overwritten while copied */
  return 1;
}

#endif
