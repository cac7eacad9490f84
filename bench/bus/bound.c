/* bench/bus bound: the least work any service can do to answer the bench's `ping` on
 * this bus, in any language. A raw socket (no sd-bus): it waits in poll(2), as an event
 * loop does, then one read takes whatever the daemon has sent, every complete `ping` in
 * it is answered by copying the caller's string into a method return, and all the
 * replies of that read go out in one write. Nothing is checked, and nothing is parsed
 * beyond the three header fields it needs. What is left of a call's time is the
 * daemon's routing, the client's work and the machine's scheduling, so its ratio to the
 * C sd-bus service is about the most any service reaches against that reference here
 * (docs/performance.md).
 * Usage: bound SOCKET_PATH BUS_NAME; prints "ready" once the name is owned. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <poll.h>

static uint32_t serial;
static unsigned char out[1 << 20];
static size_t outlen;

static void u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static size_t field_s(unsigned char *b, size_t pos, int code, char t, const char *s, size_t n) {
  while (pos % 8) b[pos++] = 0;
  b[pos] = code; b[pos + 1] = 1; b[pos + 2] = t; b[pos + 3] = 0; pos += 4;
  if (t == 'g') { b[pos++] = n; memcpy(b + pos, s, n); pos += n; b[pos++] = 0; }
  else { u32(b + pos, n); pos += 4; memcpy(b + pos, s, n); pos += n; b[pos++] = 0; }
  return pos;
}

static void call(int fd, const char *member, const char *sig, const char *arg) {
  unsigned char b[512];
  memset(b, 0, sizeof b);
  size_t pos = 16;
  pos = field_s(b, pos, 1, 'o', "/org/freedesktop/DBus", 21);
  pos = field_s(b, pos, 2, 's', "org.freedesktop.DBus", 20);
  pos = field_s(b, pos, 6, 's', "org.freedesktop.DBus", 20);
  pos = field_s(b, pos, 3, 's', member, strlen(member));
  if (sig) pos = field_s(b, pos, 8, 'g', sig, strlen(sig));
  size_t flen = pos - 16;
  while (pos % 8) b[pos++] = 0;
  size_t body = pos;
  if (arg) { u32(b + pos, strlen(arg)); pos += 4; memcpy(b + pos, arg, strlen(arg)); pos += strlen(arg); b[pos++] = 0; while (pos % 4) b[pos++] = 0; u32(b + pos, 0); pos += 4; }
  b[0] = 'l'; b[1] = 1; b[2] = 0; b[3] = 1;
  u32(b + 4, pos - body); u32(b + 8, ++serial); u32(b + 12, flen);
  if (write(fd, b, pos) != (ssize_t)pos) { perror("write"); exit(1); }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: bound SOCKET_PATH BUS_NAME\n"); return 2; }
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
  char auth[64], hex[32] = "";
  snprintf(auth, sizeof auth, "%u", getuid());
  for (size_t i = 0; auth[i]; i++) sprintf(hex + 2 * i, "%02x", auth[i]);
  dprintf(fd, "%cAUTH EXTERNAL %s\r\n", 0, hex);
  char line[256]; ssize_t n = read(fd, line, sizeof line);
  if (n < 3 || memcmp(line, "OK ", 3)) { fprintf(stderr, "auth refused\n"); return 1; }
  if (write(fd, "BEGIN\r\n", 7) != 7) return 1;
  call(fd, "Hello", NULL, NULL);
  call(fd, "RequestName", "su", argv[2]);
  static unsigned char in[1 << 20];
  size_t have = 0;
  int ready = 0;
  for (;;) {
    /* Waiting in poll, then reading, answered sequential calls sooner here than a
     * blocking read (1.07 against 1.00 of the C service, 10 alternating rounds). */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, -1) < 0) { perror("poll"); return 1; }
    n = read(fd, in + have, sizeof in - have);
    if (n <= 0) return 0;
    have += n;
    size_t at = 0;
    outlen = 0;
    while (have - at >= 16) {
      unsigned char *m = in + at;
      size_t flen = rd32(m + 12), blen = rd32(m + 4);
      size_t total = 16 + ((flen + 7) & ~7u) + blen;
      if (have - at < total) break;
      /* the header fields it needs: sender (7), member (3), reply serial (5) */
      const unsigned char *sender = NULL; size_t slen = 0; const char *member = ""; size_t mlen = 0; uint32_t rs = 0;
      size_t pos = 16, end = 16 + flen;
      while (pos < end) {
        pos = (pos + 7) & ~7u;
        int code = m[pos], t = m[pos + 2];
        pos += 4;
        if (t == 'g') pos += m[pos] + 2;
        else if (t == 'u') { if (code == 5) rs = rd32(m + pos); pos += 4; }
        else { size_t l = rd32(m + pos); if (code == 7) { sender = m + pos + 4; slen = l; } else if (code == 3) { member = (const char *)m + pos + 4; mlen = l; } pos += 4 + l + 1; }
      }
      size_t bodyAt = (end + 7) & ~7u;
      if (m[1] == 1 && sender && mlen == 4 && !memcmp(member, "ping", 4)) {
        size_t sl = rd32(m + bodyAt);
        unsigned char *o = out + outlen;
        size_t destEnd = 16 + 8 + 8 + slen + 1, sigAt = (destEnd + 7) & ~7u, fieldsEnd = sigAt + 7, body = (fieldsEnd + 7) & ~7u;
        size_t len = body + 4 + sl + 1;
        memset(o, 0, body);
        o[0] = 'l'; o[1] = 2; o[2] = 1; o[3] = 1;
        u32(o + 4, 4 + sl + 1); u32(o + 8, ++serial); u32(o + 12, fieldsEnd - 16);
        o[16] = 5; o[17] = 1; o[18] = 'u'; u32(o + 20, rd32(m + 8));
        o[24] = 6; o[25] = 1; o[26] = 's'; u32(o + 28, slen); memcpy(o + 32, sender, slen); o[32 + slen] = 0;
        o[sigAt] = 8; o[sigAt + 1] = 1; o[sigAt + 2] = 'g'; o[sigAt + 3] = 0; o[sigAt + 4] = 1; o[sigAt + 5] = 's'; o[sigAt + 6] = 0;
        u32(o + body, sl); memcpy(o + body + 4, m + bodyAt + 4, sl); o[body + 4 + sl] = 0;
        outlen += len; /* messages follow one another with no padding between them */
      } else if (m[1] == 2 && !ready && rs == 2) {
        if (rd32(m + bodyAt) != 1) { fprintf(stderr, "name not ours\n"); return 1; }
        ready = 1;
        printf("ready\n");
        fflush(stdout);
      }
      at += total;
    }
    if (outlen) {
      size_t w = 0;
      while (w < outlen) { ssize_t k = write(fd, out + w, outlen - w); if (k <= 0) { perror("write"); return 1; } w += k; }
    }
    memmove(in, in + at, have - at);
    have -= at;
  }
}
