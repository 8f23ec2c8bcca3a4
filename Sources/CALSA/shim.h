#ifndef PACER_CALSA_SHIM_H
#define PACER_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/// alsa-lib prints its own errors to stderr on every failed open; Pacer reports failures
/// itself, once, through its log. (A variadic C callback cannot be written in Swift.)
static void pacer_alsa_ignore_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void pacer_alsa_silence_library_errors(void) {
    snd_lib_error_set_handler(pacer_alsa_ignore_error);
}
#endif
