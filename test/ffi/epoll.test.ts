// src/ffi/epoll.ts (the event source's kernel side): struct epoll_event and the
// epoll constants against sys/epoll.h.
import * as ep from "../../src/ffi/epoll.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("epoll.ts mirrors sys/epoll.h", {
  headers: ["sys/epoll.h"],
  structs: ep.structs,
  consts: sameNames({
    EPOLLIN: ep.EPOLLIN, EPOLLPRI: ep.EPOLLPRI, EPOLLOUT: ep.EPOLLOUT, EPOLLERR: ep.EPOLLERR, EPOLLHUP: ep.EPOLLHUP,
    EPOLLRDHUP: ep.EPOLLRDHUP, EPOLLONESHOT: ep.EPOLLONESHOT, EPOLL_CTL_ADD: ep.EPOLL_CTL_ADD, EPOLL_CTL_DEL: ep.EPOLL_CTL_DEL,
    EPOLL_CTL_MOD: ep.EPOLL_CTL_MOD, EPOLL_CLOEXEC: ep.EPOLL_CLOEXEC,
  }),
});
