// errno values (<errno.h>, i.e. asm-generic/errno-base.h and asm-generic/errno.h): the
// one place the numbers are written. Linux on x86_64 and aarch64 share these values;
// test/ffi/errno.test.ts compares each one with the C header.

export const EPERM = 1;
export const ENOENT = 2;
export const ESRCH = 3;
export const EINTR = 4;
export const EIO = 5;
export const ENXIO = 6;
export const E2BIG = 7;
export const ENOEXEC = 8;
export const EBADF = 9;
export const ECHILD = 10;
export const EAGAIN = 11;
export const EWOULDBLOCK = EAGAIN;
export const ENOMEM = 12;
export const EACCES = 13;
export const EFAULT = 14;
export const EBUSY = 16;
export const EEXIST = 17;
export const EXDEV = 18;
export const ENODEV = 19;
export const ENOTDIR = 20;
export const EISDIR = 21;
export const EINVAL = 22;
export const ENFILE = 23;
export const EMFILE = 24;
export const ENOTTY = 25;
export const ETXTBSY = 26;
export const EFBIG = 27;
export const ENOSPC = 28;
export const ESPIPE = 29;
export const EROFS = 30;
export const EMLINK = 31;
export const EPIPE = 32;
export const ERANGE = 34;
export const EDEADLK = 35;
export const ENAMETOOLONG = 36;
export const ENOSYS = 38;
export const ENOTEMPTY = 39;
export const ELOOP = 40;
export const ENODATA = 61;
export const ETIME = 62;
export const EPROTO = 71;
export const EBADMSG = 74;
export const EOVERFLOW = 75;
export const EMSGSIZE = 90;
export const EPROTONOSUPPORT = 93;
export const EOPNOTSUPP = 95;
export const ENOTSUP = EOPNOTSUPP;
export const EAFNOSUPPORT = 97;
export const EADDRINUSE = 98;
export const EADDRNOTAVAIL = 99;
export const ENETDOWN = 100;
export const ENETUNREACH = 101;
export const ECONNABORTED = 103;
export const ECONNRESET = 104;
export const ENOBUFS = 105;
export const ENOTCONN = 107;
export const ETIMEDOUT = 110;
export const ECONNREFUSED = 111;
export const EHOSTDOWN = 112;
export const EHOSTUNREACH = 113;
export const EALREADY = 114;
export const EINPROGRESS = 115;
export const EREMOTEIO = 121;
export const EDQUOT = 122;
export const ECANCELED = 125;

/** Every name above with its value (aliases included), for the header check and errnoName. */
export const errnos = {
  EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, ENOEXEC, EBADF, ECHILD, EAGAIN, EWOULDBLOCK, ENOMEM, EACCES, EFAULT,
  EBUSY, EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ENFILE, EMFILE, ENOTTY, ETXTBSY, EFBIG, ENOSPC, ESPIPE, EROFS,
  EMLINK, EPIPE, ERANGE, EDEADLK, ENAMETOOLONG, ENOSYS, ENOTEMPTY, ELOOP, ENODATA, ETIME, EPROTO, EBADMSG, EOVERFLOW,
  EMSGSIZE, EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP, EAFNOSUPPORT, EADDRINUSE, EADDRNOTAVAIL, ENETDOWN, ENETUNREACH,
  ECONNABORTED, ECONNRESET, ENOBUFS, ENOTCONN, ETIMEDOUT, ECONNREFUSED, EHOSTDOWN, EHOSTUNREACH, EALREADY, EINPROGRESS,
  EREMOTEIO, EDQUOT, ECANCELED,
} as const;

const ALIASES = new Set(["EWOULDBLOCK", "ENOTSUP"]);
const names = new Map<number, string>(Object.entries(errnos).filter(([k]) => !ALIASES.has(k)).map(([k, v]) => [v, k]));

/** The symbolic name of an errno value ("EAGAIN"), or undefined for one not listed here. */
export function errnoName(n: number): string | undefined {
  return names.get(n);
}
