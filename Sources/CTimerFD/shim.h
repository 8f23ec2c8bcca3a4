#ifndef PACER_CTIMERFD_SHIM_H
#define PACER_CTIMERFD_SHIM_H
/* Linux timer file descriptors (timerfd_create, timerfd_settime), which Swift's Glibc module
   leaves out: the engine thread's alarm, an absolute instant on CLOCK_BOOTTIME that its poll
   watches (PacerNode/Scheduling/EngineThread.swift). Part of libc: nothing to link. */
#include <sys/timerfd.h>
#endif
