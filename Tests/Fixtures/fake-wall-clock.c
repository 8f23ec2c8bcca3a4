// An LD_PRELOAD shim that steps the wall clock of one process, for Pacer's clock-jump test
// (Tests/PacerNodeTests/ClockJumpTests.swift compiles it with `cc -shared -fPIC -O2 -ldl`).
// Only CLOCK_REALTIME(_COARSE), gettimeofday and time get the offset; every other clock and
// every timer (timerfd, nanosleep, futex...) is untouched, so sleeps on the monotonic clock
// keep working. The offset, signed milliseconds as text, is read from the file named by
// FAKE_WALL_CLOCK_OFFSET_FILE (no such file: 0), re-read at most every 20 ms.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*_Atomic real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *restrict, void *restrict);
static const char *offset_file;
static _Atomic long long cached_offset_ms, next_read_ns;

// At load, and on first use by another library's constructor that runs before ours.
__attribute__((constructor)) static void resolve(void) {
    if (real_clock_gettime) return;
    real_gettimeofday = (int (*)(struct timeval *restrict, void *restrict))dlsym(RTLD_NEXT, "gettimeofday");
    offset_file = getenv("FAKE_WALL_CLOCK_OFFSET_FILE");
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
}

static long long offset_ms(void) {
    struct timespec mono;
    real_clock_gettime(CLOCK_MONOTONIC, &mono);
    long long now = mono.tv_sec * 1000000000LL + mono.tv_nsec;
    if (now < next_read_ns) return cached_offset_ms;
    next_read_ns = now + 20000000LL;
    int fd = offset_file ? open(offset_file, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) return cached_offset_ms = 0;
    char text[32] = {0};
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    char *end;
    long long value = strtoll(text, &end, 10);
    if (n > 0 && end != text) cached_offset_ms = value;  // else (caught mid-write): keep the last
    return cached_offset_ms;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    resolve();
    int rc = real_clock_gettime(id, ts);
    if (rc != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) return rc;
    long long ns = ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ms() * 1000000LL;
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    resolve();
    int rc = real_gettimeofday(tv, tz);
    if (rc != 0) return rc;
    long long us = tv->tv_sec * 1000000LL + tv->tv_usec + offset_ms() * 1000LL;
    tv->tv_sec = us / 1000000LL;
    tv->tv_usec = us % 1000000LL;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
