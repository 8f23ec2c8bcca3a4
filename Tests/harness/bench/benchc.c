/* The C side of scripts/bench: a libmosquitto subscriber that measures lateness, the floor
 * (a C timer loop publishing what the node publishes), the broker relay round trip and the
 * command -> state latency. Built by scripts/bench with: cc -O2 benchc.c -lmosquitto.
 *
 *   benchc sub   PORT FILTER SECONDS          lateness of remaining flips (due = ends_at_ms - value*1000)
 *   benchc count PORT FILTER N TIMEOUT        wall ms when the N-th live (not retained) message arrived
 *   benchc floor PORT BASE TIMERS SECONDS     C timer loop: clock_nanosleep absolute + the same publishes
 *   benchc rtt   PORT SAMPLES                 two-hop relay: publish QoS 1, receive own message
 *   benchc cmd   PORT BASE SAMPLES [FILE [ECHO]] `time` -> reply and `toggle` -> new state, QoS 1;
 *                                             with FILE, each toggle beside its floors: a relay round
 *                                             trip and a WAL-like fdatasync on FILE, interleaved; with
 *                                             ECHO (the base of a running `benchc echo`), also a
 *                                             command through the C echo node
 *   benchc echo  PORT BASE FILE SECONDS       the C echo node: a minimal node doing what a toggle
 *                                             needs (read BASE/cmd, the WAL-like fdatasync on FILE,
 *                                             publish BASE/state), one thread, libmosquitto's loop
 * Results are printed as one JSON object on stdout. */
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <unistd.h>
#include <pthread.h>
#include <fcntl.h>

static double now_ms(void) {
    struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y;
}
static void stats(const char *name, double *v, long n) {
    if (n == 0) { printf("\"%s\":{\"n\":0}", name); return; }
    qsort(v, n, sizeof *v, cmp);
    printf("\"%s\":{\"n\":%ld,\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f}", name, n, v[n / 2], v[(long)(n * 0.99) < n ? (long)(n * 0.99) : n - 1], v[n - 1]);
}
static struct mosquitto *connect_client(int port, void *ud) {
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(NULL, true, ud);
    mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    if (mosquitto_connect(m, "127.0.0.1", port, 30) != MOSQ_ERR_SUCCESS) { fprintf(stderr, "connect failed\n"); exit(1); }
    return m;
}

/* ---- sub: lateness of flips on <base>/timers/<id>/remaining, ends_at from <id>/state ---- */
#define MAXT 200000
static char *ids[MAXT]; static double ends[MAXT]; static int nids;
static double *late; static long nlate, caplate; static long msgs; static double t_end;
static long skipped;  /* flips that skipped a value (a second never shown) */
static long lastval[MAXT];
static int find_id(const char *id, int add) {
    /* small linear-probe hash */
    static int table[1 << 19]; static int init;
    if (!init) { memset(table, -1, sizeof table); init = 1; }
    unsigned h = 5381; for (const char *p = id; *p; p++) h = h * 33 + (unsigned char)*p;
    for (unsigned i = h & ((1 << 19) - 1);; i = (i + 1) & ((1 << 19) - 1)) {
        if (table[i] < 0) {
            if (!add || nids >= MAXT) return -1;
            table[i] = nids; ids[nids] = strdup(id); ends[nids] = 0; lastval[nids] = -1; return nids++;
        }
        if (!strcmp(ids[table[i]], id)) return table[i];
    }
}
static void on_sub_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg) {
    (void)m; (void)ud;
    double t = now_ms();
    const char *topic = msg->topic, *p = strstr(topic, "/timers/");
    if (!p) return;
    p += 8; const char *slash = strchr(p, '/'); if (!slash) return;
    char id[256]; size_t len = slash - p; if (len >= sizeof id) return;
    memcpy(id, p, len); id[len] = 0;
    int i = find_id(id, 1); if (i < 0) return;
    char buf[4096]; int n = msg->payloadlen < 4095 ? msg->payloadlen : 4095;
    memcpy(buf, msg->payload, n); buf[n] = 0;
    if (!strcmp(slash, "/state")) {
        char *e = strstr(buf, "\"ends_at_ms\":");
        ends[i] = e ? atof(e + 13) : 0;
        return;
    }
    if (strcmp(slash, "/remaining")) return;
    if (msg->retain) return;  /* delivered on subscribe, not a flip */
    msgs++;
    long v = atol(buf);
    if (lastval[i] >= 0 && lastval[i] - v > 1) skipped += lastval[i] - v - 1;
    lastval[i] = v;
    if (ends[i] <= 0) return;
    if (nlate == caplate) { caplate = caplate ? caplate * 2 : 1 << 16; late = realloc(late, caplate * sizeof *late); }
    late[nlate++] = t - (ends[i] - v * 1000.0);
    if (getenv("BENCH_DEBUG") && late[nlate - 1] > 100) fprintf(stderr, "%s v=%ld ends=%.0f t=%.0f\n", id, v, ends[i], t);
}
static int cmd_sub(int port, const char *filter, double seconds) {
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_message_callback_set(m, on_sub_message);
    char state[512]; snprintf(state, sizeof state, "%s", filter);
    char *r = strstr(state, "/remaining"); if (r) strcpy(r, "/state");
    mosquitto_subscribe(m, NULL, state, 0);
    mosquitto_subscribe(m, NULL, filter, 0);
    /* let the retained states arrive before counting (BENCHC_WARMUP_MS: longer, for a broker that
     * delivers no retained message on a wildcard: the states then come live, as timers start) */
    double warm = getenv("BENCHC_WARMUP_MS") ? atof(getenv("BENCHC_WARMUP_MS")) : 1500;
    double t0 = now_ms(); while (now_ms() - t0 < warm) mosquitto_loop(m, 100, 1);
    nlate = 0; msgs = 0; skipped = 0;
    t0 = now_ms(); t_end = t0 + seconds * 1000;
    while (now_ms() < t_end) mosquitto_loop(m, 100, 1);
    printf("{\"messages_per_s\":%.1f,\"skipped\":%ld,", msgs / seconds, skipped);
    stats("late_ms", late, nlate); printf("}\n");
    return 0;
}

/* ---- count: the N-th live message ---- */
static long want, got; static double t_nth;
static void on_count(struct mosquitto *m, void *ud, const struct mosquitto_message *msg) {
    (void)m; (void)ud;
    if (msg->retain) return;
    if (++got == want) t_nth = now_ms();
}
static int cmd_count(int port, const char *filter, long n, double timeout) {
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_message_callback_set(m, on_count);
    want = n; mosquitto_subscribe(m, NULL, filter, 0);
    double t0 = now_ms();
    printf("{\"ready_ms\":%.3f}\n", t0); fflush(stdout);
    while (got < want && now_ms() - t0 < timeout * 1000) mosquitto_loop(m, 100, 1);
    printf("{\"got\":%ld,\"nth_ms\":%.3f}\n", got, t_nth);
    return 0;
}

/* ---- floor: a C timer loop with the same messages ---- */
static int cmd_floor(int port, const char *base_topic, int timers, double seconds) {
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_loop_start(m);
    /* Timers start spread over one second, like a burst of starts; each counts down 2 h. */
    double start = 1000.0 * (long)(now_ms() / 1000) + 1000; char topic[512], payload[512];
    double *endat = malloc(timers * sizeof *endat);
    for (int i = 0; i < timers; i++) {
        endat[i] = (long)(start + (1000.0 * i) / timers) + 7200000.0;
        snprintf(topic, sizeof topic, "%s/timers/f%d/state", base_topic, i);
        int n = snprintf(payload, sizeof payload, "{\"id\":\"f%d\",\"status\":\"running\",\"ends_at_ms\":%.0f}", i, endat[i]);
        mosquitto_publish(m, NULL, topic, n, payload, 1, true);
    }
    /* Timer i flips at every whole second before endat[i]: at base + offset(i) in each
     * second, offsets ascending with i. Sleep (absolute) to the next flip, then publish
     * every timer due within that millisecond. */
    double stop = now_ms() + 1500 + seconds * 1000;
    double base = 1000.0 * (long)(now_ms() / 1000) + 1000;
    while (base < stop) {
        for (int i = 0; i < timers;) {
            double due = base + fmod(endat[i], 1000.0);
            struct timespec ts = { (time_t)(due / 1000), (long)fmod(due, 1000.0) * 1000000L };
            clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
            while (i < timers && base + fmod(endat[i], 1000.0) <= due + 1) {
                long rem = (long)((endat[i] - (base + fmod(endat[i], 1000.0)) + 999) / 1000);
                snprintf(topic, sizeof topic, "%s/timers/f%d/remaining", base_topic, i);
                int n = snprintf(payload, sizeof payload, "%ld", rem);
                mosquitto_publish(m, NULL, topic, n, payload, 0, true);
                snprintf(topic, sizeof topic, "%s/timers/f%d/display", base_topic, i);
                n = snprintf(payload, sizeof payload, "%ld:%02ld:%02ld", rem / 3600, rem / 60 % 60, rem % 60);
                mosquitto_publish(m, NULL, topic, n, payload, 0, true);
                i++;
            }
        }
        base += 1000;
    }
    mosquitto_disconnect(m); mosquitto_loop_stop(m, false);
    return 0;
}

/* ---- rtt and cmd: request/response timings ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char expect[256]; static int matched;
static void on_match(struct mosquitto *m, void *ud, const struct mosquitto_message *msg) {
    (void)m; (void)ud;
    if (msg->retain) return;
    pthread_mutex_lock(&mu);
    if (!matched && memmem(msg->payload, msg->payloadlen, expect, strlen(expect))) { matched = 1; pthread_cond_signal(&cv); }
    pthread_mutex_unlock(&mu);
}
static double roundtrip(struct mosquitto *m, const char *topic, const char *payload, const char *want_text) {
    pthread_mutex_lock(&mu); snprintf(expect, sizeof expect, "%s", want_text); matched = 0; pthread_mutex_unlock(&mu);
    double t0 = now_ms();
    mosquitto_publish(m, NULL, topic, strlen(payload), payload, 1, false);
    pthread_mutex_lock(&mu);
    struct timespec dl; clock_gettime(CLOCK_REALTIME, &dl); dl.tv_sec += 5;
    while (!matched) if (pthread_cond_timedwait(&cv, &mu, &dl)) break;
    int ok = matched; pthread_mutex_unlock(&mu);
    return ok ? now_ms() - t0 : -1;
}
static int cmd_rtt(int port, int samples) {
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_message_callback_set(m, on_match);
    mosquitto_loop_start(m);
    mosquitto_subscribe(m, NULL, "bench/rtt", 1); usleep(300000);
    double *v = malloc(samples * sizeof *v); long n = 0; char p[64];
    for (int i = 0; i < samples; i++) { snprintf(p, sizeof p, "rtt-%d;", i); double d = roundtrip(m, "bench/rtt", p, p); if (d >= 0) v[n++] = d; usleep(2000); }
    printf("{"); stats("relay_ms", v, n); printf("}\n");
    mosquitto_disconnect(m); mosquitto_loop_stop(m, false);
    return 0;
}
/* What a SQLite WAL commit of the node writes, then its fdatasync (ms): 8 frames (24-byte header +
 * 4 KB page) appended at *offset, the file wrapping at 4 MB (the WAL after a checkpoint). */
static double wal_fdatasync(int fd, long *offset) {
    static char frame[24 + 4096];
    for (int f = 0; f < 8; f++) {
        for (size_t k = 0; k < sizeof frame; k += 8) frame[k] = (char)rand();
        if (pwrite(fd, frame, sizeof frame, *offset) != (ssize_t)sizeof frame) { perror("pwrite"); exit(1); }
        *offset = (*offset + (long)sizeof frame) % (4L * 1024 * 1024);
    }
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    if (fdatasync(fd)) { perror("fdatasync"); exit(1); }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a.tv_sec) * 1000.0 + (b.tv_nsec - a.tv_nsec) / 1e6;
}
/* ---- echo: the floor of a command -> state through a node ---- */
static int echo_fd = -1; static long echo_offset; static char echo_state[512];
static void on_echo(struct mosquitto *m, void *ud, const struct mosquitto_message *msg) {
    (void)ud;
    wal_fdatasync(echo_fd, &echo_offset);  /* written before it is published, as the node does */
    mosquitto_publish(m, NULL, echo_state, msg->payloadlen, msg->payload, 1, false);
}
static int cmd_echo(int port, const char *base, const char *file, double seconds) {
    if ((echo_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) { perror(file); return 1; }
    char t_cmd[512]; snprintf(t_cmd, sizeof t_cmd, "%s/cmd", base); snprintf(echo_state, sizeof echo_state, "%s/state", base);
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_message_callback_set(m, on_echo);
    mosquitto_subscribe(m, NULL, t_cmd, 1);
    double end = now_ms() + seconds * 1000;
    while (now_ms() < end) if (mosquitto_loop(m, 100, 1) != MOSQ_ERR_SUCCESS) break;
    mosquitto_disconnect(m); close(echo_fd); unlink(file);
    return 0;
}
static int cmd_cmd(int port, const char *base, int samples, const char *fsync_file, const char *echo_base) {
    struct mosquitto *m = connect_client(port, NULL);
    mosquitto_message_callback_set(m, on_match);
    mosquitto_loop_start(m);
    char t_reply[512], t_cmd[512], t_state[512], t_tcmd[512], p[512], w[256];
    snprintf(t_reply, sizeof t_reply, "%s/reply", base); snprintf(t_cmd, sizeof t_cmd, "%s/cmd", base);
    snprintf(t_state, sizeof t_state, "%s/timers/lat/state", base); snprintf(t_tcmd, sizeof t_tcmd, "%s/timers/lat/cmd", base);
    mosquitto_subscribe(m, NULL, t_reply, 1); mosquitto_subscribe(m, NULL, t_state, 1);
    if (fsync_file) mosquitto_subscribe(m, NULL, "bench/rtt", 1);
    char t_ecmd[512], t_estate[512];
    if (echo_base) {
        snprintf(t_ecmd, sizeof t_ecmd, "%s/cmd", echo_base); snprintf(t_estate, sizeof t_estate, "%s/state", echo_base);
        mosquitto_subscribe(m, NULL, t_estate, 1);
    }
    usleep(300000);
    snprintf(p, sizeof p, "{\"action\":\"start\",\"timer\":\"lat\",\"spec\":{\"kind\":\"countdown\",\"duration\":\"6h\"}}");
    roundtrip(m, t_cmd, p, "\"lat\"");
    double *a = malloc(samples * sizeof *a), *b = malloc(samples * sizeof *b);
    double *r = malloc(samples * sizeof *r), *f = malloc(samples * sizeof *f), *own = malloc(samples * sizeof *own);
    double *e = malloc(samples * sizeof *e), *beyond = malloc(samples * sizeof *beyond);
    long na = 0, nb = 0, nr = 0, nf = 0, nown = 0, ne = 0, nbeyond = 0;
    for (int i = 0; i < samples; i++) {
        snprintf(p, sizeof p, "{\"action\":\"time\",\"id\":\"t%d\"}", i); snprintf(w, sizeof w, "\"t%d\"", i);
        double d = roundtrip(m, t_cmd, p, w); if (d >= 0) a[na++] = d;
        usleep(3000);
    }
    int fd = -1; long offset = 0;
    if (fsync_file && (fd = open(fsync_file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) { perror(fsync_file); exit(1); }
    for (int i = 0; i < samples; i++) {
        const char *want_status = i % 2 == 0 ? "\"status\":\"paused\"" : "\"status\":\"running\"";
        double d = roundtrip(m, t_tcmd, "toggle", want_status); if (d >= 0) b[nb++] = d;
        usleep(3000);
        if (fd < 0) continue;
        /* The floors of this toggle, taken right beside it: a machine's slow minute slows both. */
        snprintf(p, sizeof p, "rtt-%d;", i);
        double rt = roundtrip(m, "bench/rtt", p, p); if (rt >= 0) r[nr++] = rt;
        usleep(3000);
        double fs = wal_fdatasync(fd, &offset); f[nf++] = fs;
        if (d >= 0 && rt >= 0) own[nown++] = d - rt - fs;
        usleep(3000);
        if (!echo_base) continue;
        snprintf(p, sizeof p, "echo-%d;", i);
        double ec = roundtrip(m, t_ecmd, p, p); if (ec >= 0) e[ne++] = ec;
        if (d >= 0 && ec >= 0) beyond[nbeyond++] = d - ec;
        usleep(3000);
    }
    printf("{"); stats("time_reply_ms", a, na); printf(","); stats("toggle_state_ms", b, nb);
    if (fd >= 0) {
        printf(","); stats("relay_ms", r, nr); printf(","); stats("fdatasync_wal_paced_ms", f, nf);
        printf(","); stats("toggle_minus_floors_ms", own, nown);
        if (echo_base) { printf(","); stats("echo_ms", e, ne); printf(","); stats("toggle_minus_echo_ms", beyond, nbeyond); }
        close(fd); unlink(fsync_file);
    }
    printf("}\n");
    mosquitto_disconnect(m); mosquitto_loop_stop(m, false);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: see the comment at the top of benchc.c\n"); return 2; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int port = atoi(argv[2]);
    if (!strcmp(argv[1], "sub") && argc == 5) return cmd_sub(port, argv[3], atof(argv[4]));
    if (!strcmp(argv[1], "count") && argc == 6) return cmd_count(port, argv[3], atol(argv[4]), atof(argv[5]));
    if (!strcmp(argv[1], "floor") && argc == 6) return cmd_floor(port, argv[3], atoi(argv[4]), atof(argv[5]));
    if (!strcmp(argv[1], "rtt") && argc == 4) return cmd_rtt(port, atoi(argv[3]));
    if (!strcmp(argv[1], "cmd") && argc >= 5 && argc <= 7)
        return cmd_cmd(port, argv[3], atoi(argv[4]), argc >= 6 ? argv[5] : NULL, argc == 7 ? argv[6] : NULL);
    if (!strcmp(argv[1], "echo") && argc == 6) return cmd_echo(port, argv[3], argv[4], atof(argv[5]));
    fprintf(stderr, "bad arguments\n"); return 2;
}
