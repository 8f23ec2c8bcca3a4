/* The floor of cue-lateness.py: tones placed at wall-clock instants on an ALSA device, the
 * cheapest way to do what the node's player does (docs/sound.md, "Timing").
 *
 *     cue-floor DEVICE FIRST_MS SPACING_MS COUNT
 *
 * Opens DEVICE once (16-bit mono, 44.1 kHz, a 100 ms buffer: the node's settings), then for
 * each instant FIRST_MS + i * SPACING_MS (epoch milliseconds) sleeps until 40 ms before it,
 * reads how much the device still holds (snd_pcm_delay) and writes silence up to the instant
 * and a 150 ms 1000 Hz tone (3 ms ramps, peak 0.7 of full scale). Nothing else runs: no
 * broker, no engine, no mixing. Prints one line per tone: its instant and the write's lateness
 * against the 40 ms lead (how late the program itself woke), for the harness's log.
 *
 * Build: cc -O2 -o cue-floor cue-floor.c -lasound -lm
 */
#include <alsa/asoundlib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE 44100
#define LEAD_NS 40000000LL
#define TONE_MS 150
#define RAMP_MS 3

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

/* Writes all of `n` frames, recovering from an underrun between tones (the device idles). */
static int write_all(snd_pcm_t *pcm, const int16_t *buf, long n) {
    long off = 0;
    int attempts = 0;
    while (off < n) {
        snd_pcm_sframes_t w = snd_pcm_writei(pcm, buf + off, n - off);
        if (w < 0) {
            if (++attempts > 3 || snd_pcm_recover(pcm, (int)w, 1) < 0) return (int)w;
            continue;
        }
        off += w;
    }
    if (snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED) snd_pcm_start(pcm);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s DEVICE FIRST_MS SPACING_MS COUNT\n", argv[0]);
        return 2;
    }
    const char *device = argv[1];
    int64_t first_ms = atoll(argv[2]), spacing_ms = atoll(argv[3]);
    int count = atoi(argv[4]);

    snd_pcm_t *pcm;
    int rc = snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, 0);
    if (rc >= 0) rc = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, RATE, 1, 100000);
    if (rc < 0) {
        fprintf(stderr, "cue-floor: cannot open %s: %s\n", device, snd_strerror(rc));
        return 1;
    }

    long tone_n = (long)RATE * TONE_MS / 1000, ramp_n = (long)RATE * RAMP_MS / 1000;
    long max_gap = (long)RATE * (LEAD_NS / 1000000 + 1000) / 1000;
    int16_t *buf = calloc((size_t)(max_gap + tone_n), sizeof(int16_t));
    int16_t *tone = malloc((size_t)tone_n * sizeof(int16_t));
    for (long i = 0; i < tone_n; i++) {
        double env = 1.0;
        if (i < ramp_n) env = 0.5 - 0.5 * cos(M_PI * (double)i / (double)ramp_n);
        if (tone_n - 1 - i < ramp_n) env = 0.5 - 0.5 * cos(M_PI * (double)(tone_n - 1 - i) / (double)ramp_n);
        tone[i] = (int16_t)lround(0.7 * 32767.0 * env * sin(2 * M_PI * 1000.0 * (double)i / RATE));
    }

    for (int k = 0; k < count; k++) {
        int64_t at_ns = (first_ms + k * spacing_ms) * 1000000LL;
        sleep_until_ns(at_ns - LEAD_NS);
        int64_t woke = now_ns();
        snd_pcm_sframes_t delay = 0;
        if (snd_pcm_state(pcm) != SND_PCM_STATE_RUNNING || snd_pcm_delay(pcm, &delay) < 0 || delay < 0) delay = 0;
        /* The first frame written now is heard after the `delay` frames still queued. */
        long gap = (long)((at_ns - woke) * RATE / 1000000000LL) - (long)delay;
        if (gap < 0) gap = 0;
        if (gap > max_gap) gap = max_gap;
        memset(buf, 0, (size_t)gap * sizeof(int16_t));
        memcpy(buf + gap, tone, (size_t)tone_n * sizeof(int16_t));
        rc = write_all(pcm, buf, gap + tone_n);
        if (rc < 0) {
            fprintf(stderr, "cue-floor: write failed: %s\n", snd_strerror(rc));
            return 1;
        }
        printf("%lld %.3f\n", (long long)(at_ns / 1000000LL), (double)(woke - (at_ns - LEAD_NS)) / 1e6);
        fflush(stdout);
    }
    snd_pcm_drain(pcm);
    snd_pcm_close(pcm);
    free(buf);
    free(tone);
    return 0;
}
