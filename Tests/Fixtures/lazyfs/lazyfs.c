// lazyfs: a FUSE filesystem that loses every write not yet fsynced when the "power" goes,
// for Pacer's power-cut tests (Tests/PacerNodeLiveTests/Durability/PowerCutTests.swift compiles it at
// test time with the system C compiler and libfuse3: `cc -O2 -o lazyfs lazyfs.c
// $(pkg-config --cflags --libs fuse3)`; Debian: libfuse3-dev, fuse3). The semantics are those
// of Jepsen's LazyFS with `lose-unfsynced-writes`; the code is our own.
//
//   lazyfs [--cache DIR] [--fired FILE] [--no-host-sync] BACKING MOUNTPOINT [FUSE options]
//
// Two directories stand behind the mount point:
// - BACKING, the "disk": it holds exactly what was made durable, nothing more;
// - the cache (DIR, or a new directory under /dev/shm or $TMPDIR, removed at unmount), the
//   "page cache": every file as processes see it now. It starts as a copy of BACKING.
// Every operation on the mount is served from the cache at once (reads, writes, mmap,
// directory listings, locks); what becomes durable, and when, is this model:
//
// File data (bytes and the file's size, including truncate and fallocate) is durable only
//   through an fsync or fdatasync of that file: then its unsynced bytes and its size are
//   written to BACKING and fsynced there. Each file keeps the byte ranges written since its
//   last sync (and the smallest size it was truncated to), so only those are written through.
// Namespace operations (create, mknod, mkdir, unlink, rmdir, rename, link, symlink, chmod,
//   chown) go into one ordered journal, which every fsync, fdatasync or directory fsync
//   commits whole, in order, to BACKING (each touched BACKING directory then fsynced): one
//   journal, as ext4 (data=ordered) commits its running transaction on an fsync. A file's
//   fsync thus also makes its own creation durable (as ext4 does for a new file). Simplified
//   against ext4: there is no periodic commit (ext4 commits every 5 s, so a cut here can lose
//   namespace operations older than that: harsher), and data is never flushed except by its
//   own file's fsync (no delayed-allocation flush at commit, no auto_da_alloc on rename or
//   truncate: harsher). Timestamps (utimens) and extended attributes are not modelled.
// A cut ("power cut"): the journal is dropped, every unsynced byte and size change of every
//   file is dropped, and the cache is replaced by a copy of BACKING. It is meant for a mount
//   no process holds a file open on (the power went: every process died; an armed cut, below,
//   fails every operation of the dying process instead); handles still open across a cut
//   point at the old content (the report counts them). One thing the kernel may still do
//   after a killed process's last write: write back its dirty shared-mmap pages (SQLite's
//   -shm, which is never fsynced and which the next first connection rebuilds).
//
// Control: the file `.lazyfs` at the root of the mount (not listed by readdir).
//   echo cut > MOUNT/.lazyfs     the power cut, done when the write returns
//   echo reset > MOUNT/.lazyfs   zero the counters
//   echo arm write /f [N] > ...  a cut at an exact moment: at the next (or Nth) write to /f
//   echo arm fsync /f [N] > ...  (or with `fsync`, fsync/fdatasync of /f, before it syncs
//                                anything), the filesystem cuts, creates the file given with
//                                --fired, and holds that request until it gets SIGUSR2 (the
//                                test SIGKILLs the writer meanwhile, which cannot return from
//                                the request and so dies without another instruction); the
//                                request then fails with EIO, and so does every operation
//                                until the next `cut` (the power is off). Every cut disarms.
//   echo disarm > MOUNT/.lazyfs
//   cat MOUNT/.lazyfs            the counters, one "name value" per line, then a line per file:
//                                "file BYTES_WRITTEN BYTES_SYNCED FSYNCS /path", then a line
//                                per file the last cut dropped data of: "cut_file BYTES /path"
//
// The daemon runs single-threaded (-s), in the foreground (-f), with every kernel cache
// timeout at 0 and no writeback cache, so every write reaches it when the writer's call
// returns and a cut is atomic. It mounts with auto_unmount: if it is killed, fusermount3
// unmounts. Stop it with `fusermount3 -u MOUNTPOINT`.
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <fuse.h>

#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#define CONTROL_NAME ".lazyfs"
#define CONTROL_PATH "/" CONTROL_NAME

static struct {
    int live_fd, durable_fd;  // the cache ("page cache") and BACKING ("disk")
    char *live_path, *durable_path;
    int host_sync;            // fsync BACKING's files and directories on the host
    char *armed_path;         // an armed cut: at the next write (or fsync) of this path
    int armed_fsync;
    long armed_count;         // fire at this many more matching requests (1: the next)
    int dead;                 // fired: every operation fails until the next cut
    const char *fired_file;   // created when an armed cut fires
} g = {.live_fd = -1, .durable_fd = -1, .host_sync = 1};
static volatile sig_atomic_t released;

static struct {
    uint64_t cuts, writes, bytes_written, fsyncs, fdatasyncs, dir_fsyncs, bytes_synced;
    uint64_t meta_ops, meta_committed, bytes_dropped, meta_dropped, open_files;
    uint64_t last_cut_bytes_dropped, last_cut_meta_dropped, last_cut_open_files, replay_errors, armed_fired;
} c;

static void note(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("lazyfs: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

// "/a/b" -> "a/b", "/" -> "."
static const char *rel(const char *path) {
    while (*path == '/') path++;
    return *path ? path : ".";
}

// MARK: - Unsynced data per file (by the cache's inode number)

struct range { off_t start, end; };
struct dirty {
    ino_t ino;
    struct range *ranges;
    size_t count, capacity;
    off_t min_size;  // smallest size truncated to since the last sync; -1: none
    char *path;      // where it was last written (for the report of a cut)
    struct dirty *next;
};
static struct dirty *dirty_files;

static struct dirty *dirty_find(ino_t ino, int create) {
    for (struct dirty *d = dirty_files; d; d = d->next)
        if (d->ino == ino) return d;
    if (!create) return NULL;
    struct dirty *d = calloc(1, sizeof *d);
    if (!d) abort();
    d->ino = ino;
    d->min_size = -1;
    d->next = dirty_files;
    dirty_files = d;
    return d;
}

static void dirty_drop(ino_t ino) {
    for (struct dirty **p = &dirty_files; *p; p = &(*p)->next) {
        if ((*p)->ino == ino) {
            struct dirty *d = *p;
            *p = d->next;
            free(d->ranges);
            free(d->path);
            free(d);
            return;
        }
    }
}

static uint64_t dirty_bytes(const struct dirty *d) {
    uint64_t total = 0;
    for (size_t i = 0; i < d->count; i++) total += (uint64_t)(d->ranges[i].end - d->ranges[i].start);
    return total;
}

// Adds [start, end) to the sorted, disjoint, non-adjacent ranges.
static void dirty_add(struct dirty *d, off_t start, off_t end) {
    if (end <= start) return;
    size_t i = 0;
    while (i < d->count && d->ranges[i].end < start) i++;  // first range that may touch
    size_t j = i;
    while (j < d->count && d->ranges[j].start <= end) {    // merge every touching range
        if (d->ranges[j].start < start) start = d->ranges[j].start;
        if (d->ranges[j].end > end) end = d->ranges[j].end;
        j++;
    }
    if (j == i) {  // insert at i
        if (d->count == d->capacity) {
            d->capacity = d->capacity ? d->capacity * 2 : 8;
            d->ranges = realloc(d->ranges, d->capacity * sizeof *d->ranges);
            if (!d->ranges) abort();
        }
        memmove(d->ranges + i + 1, d->ranges + i, (d->count - i) * sizeof *d->ranges);
        d->count++;
    } else if (j > i + 1) {  // ranges i..j-1 become one
        memmove(d->ranges + i + 1, d->ranges + j, (d->count - j) * sizeof *d->ranges);
        d->count -= j - i - 1;
    }
    d->ranges[i].start = start;
    d->ranges[i].end = end;
}

// The file shrank to `size`: nothing at or past it is to be written through any more.
static void dirty_truncate(struct dirty *d, off_t size) {
    if (d->min_size < 0 || size < d->min_size) d->min_size = size;
    size_t kept = 0;
    for (size_t i = 0; i < d->count; i++) {
        if (d->ranges[i].start >= size) continue;
        d->ranges[kept] = d->ranges[i];
        if (d->ranges[kept].end > size) d->ranges[kept].end = size;
        kept++;
    }
    d->count = kept;
}

// MARK: - Counters per file (by path, moved on rename)

struct file_stats {
    char *path;
    uint64_t written, synced, fsyncs;
    struct file_stats *next;
};
static struct file_stats *stats;

static struct file_stats *stats_for(const char *path) {
    if (!path) path = "(unlinked)";
    for (struct file_stats *s = stats; s; s = s->next)
        if (strcmp(s->path, path) == 0) return s;
    struct file_stats *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) abort();
    s->next = stats;
    stats = s;
    return s;
}

static void stats_rename(const char *from, const char *to) {
    for (struct file_stats *s = stats; s; s = s->next) {
        if (strcmp(s->path, from) == 0) {
            char *moved = strdup(to);
            if (!moved) abort();
            free(s->path);
            s->path = moved;
            return;
        }
    }
}

static void stats_reset(void) {
    while (stats) {
        struct file_stats *next = stats->next;
        free(stats->path);
        free(stats);
        stats = next;
    }
}

// MARK: - The namespace journal

enum op { J_CREATE, J_MKNOD, J_MKDIR, J_UNLINK, J_RMDIR, J_RENAME, J_LINK, J_SYMLINK, J_CHMOD, J_CHOWN };
struct entry {
    enum op op;
    char *a, *b;  // paths relative to the root (a symlink's target in a)
    mode_t mode;
    dev_t rdev;
    uid_t uid;
    gid_t gid;
    unsigned flags;
    struct entry *next;
};
static struct entry *journal_head, **journal_tail = &journal_head;
static uint64_t journal_length;

static void journal_add(enum op op, const char *a, const char *b, mode_t mode) {
    struct entry *e = calloc(1, sizeof *e);
    if (!e || !(e->a = strdup(a)) || (b && !(e->b = strdup(b)))) abort();
    e->op = op;
    e->mode = mode;
    *journal_tail = e;
    journal_tail = &e->next;
    journal_length++;
    c.meta_ops++;
}

static struct entry *journal_last(void) {
    struct entry *last = journal_head;
    while (last && last->next) last = last->next;
    return last;
}

static void journal_free(void) {
    while (journal_head) {
        struct entry *next = journal_head->next;
        free(journal_head->a);
        free(journal_head->b);
        free(journal_head);
        journal_head = next;
    }
    journal_tail = &journal_head;
    journal_length = 0;
}

// The directory (relative) that holds `path` (relative).
static void parent_of(const char *path, char *out, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, size, ".");
    } else {
        snprintf(out, size, "%.*s", (int)(slash - path), path);
    }
}

static void sync_durable_dir(const char *dir) {
    if (!g.host_sync) return;
    int fd = openat(g.durable_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

// Replays every journaled operation on BACKING, in order, then fsyncs the directories touched.
static void journal_commit(void) {
    char dirs[64][PATH_MAX];
    int ndirs = 0, overflow = 0;
    for (struct entry *e = journal_head; e; e = e->next) {
        int rc = 0;
        switch (e->op) {
        case J_CREATE: {
            int fd = openat(g.durable_fd, e->a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, e->mode);
            rc = fd < 0 ? -1 : close(fd);
            break;
        }
        case J_MKNOD: rc = mknodat(g.durable_fd, e->a, e->mode, e->rdev); break;
        case J_MKDIR: rc = mkdirat(g.durable_fd, e->a, e->mode); break;
        case J_UNLINK: rc = unlinkat(g.durable_fd, e->a, 0); break;
        case J_RMDIR: rc = unlinkat(g.durable_fd, e->a, AT_REMOVEDIR); break;
        case J_RENAME: rc = renameat2(g.durable_fd, e->a, g.durable_fd, e->b, e->flags); break;
        case J_LINK: rc = linkat(g.durable_fd, e->a, g.durable_fd, e->b, 0); break;
        case J_SYMLINK: rc = symlinkat(e->a, g.durable_fd, e->b); break;
        case J_CHMOD: rc = fchmodat(g.durable_fd, e->a, e->mode, 0); break;
        case J_CHOWN: rc = fchownat(g.durable_fd, e->a, e->uid, e->gid, AT_SYMLINK_NOFOLLOW); break;
        }
        if (rc != 0) {
            c.replay_errors++;
            note("journal replay of operation %d on %s failed: %s", (int)e->op, e->a, strerror(errno));
        }
        const char *paths[2] = {e->op == J_SYMLINK ? e->b : e->a, e->op == J_RENAME || e->op == J_LINK ? e->b : NULL};
        for (int k = 0; k < 2; k++) {
            if (!paths[k]) continue;
            char dir[PATH_MAX];
            parent_of(paths[k], dir, sizeof dir);
            int known = 0;
            for (int i = 0; i < ndirs; i++) known |= strcmp(dirs[i], dir) == 0;
            if (known) continue;
            if (ndirs < 64) snprintf(dirs[ndirs++], PATH_MAX, "%s", dir); else overflow = 1;
        }
        c.meta_committed++;
    }
    for (int i = 0; i < ndirs; i++) sync_durable_dir(dirs[i]);
    if (overflow && g.host_sync) syncfs(g.durable_fd);
    journal_free();
}

// MARK: - Write-through of one file

static int copy_range(int from, int to, off_t start, off_t end) {
    char buffer[65536];
    while (start < end) {
        size_t want = (size_t)(end - start) < sizeof buffer ? (size_t)(end - start) : sizeof buffer;
        ssize_t n = pread(from, buffer, want, start);
        if (n < 0) return -errno;
        if (n == 0) break;  // past the end: the size is set separately
        for (ssize_t done = 0; done < n;) {
            ssize_t w = pwrite(to, buffer + done, (size_t)(n - done), start + done);
            if (w < 0) return -errno;
            done += w;
        }
        start += n;
    }
    return 0;
}

// fsync/fdatasync of the file at `path` (NULL: unlinked) open as `fd` in the cache.
static int sync_file(const char *path, int fd) {
    journal_commit();
    struct stat st;
    if (fstat(fd, &st) != 0) return -errno;
    struct dirty *d = dirty_find(st.st_ino, 0);
    struct file_stats *s = stats_for(path);
    s->fsyncs++;
    if (!path || st.st_nlink == 0) return 0;  // an unlinked file has nothing to keep
    int out = openat(g.durable_fd, rel(path), O_WRONLY | O_CLOEXEC);
    if (out < 0) {
        c.replay_errors++;
        note("fsync of %s: not on the backing directory after the journal commit: %s", path, strerror(errno));
        return 0;
    }
    int rc = 0;
    if (d && d->min_size >= 0) {
        struct stat old;
        if (fstat(out, &old) == 0 && old.st_size > d->min_size && ftruncate(out, d->min_size) != 0) rc = -errno;
    }
    if (rc == 0 && ftruncate(out, st.st_size) != 0) rc = -errno;
    if (d) {
        for (size_t i = 0; rc == 0 && i < d->count; i++) {
            rc = copy_range(fd, out, d->ranges[i].start, d->ranges[i].end);
            if (rc == 0) {
                c.bytes_synced += (uint64_t)(d->ranges[i].end - d->ranges[i].start);
                s->synced += (uint64_t)(d->ranges[i].end - d->ranges[i].start);
            }
        }
        if (rc == 0) dirty_drop(st.st_ino);
    }
    if (rc == 0 && g.host_sync && fsync(out) != 0) rc = -errno;
    close(out);
    return rc;
}

// MARK: - Whole trees (mount and cut)

static int remove_tree_contents(int dirfd) {
    int fd = dup(dirfd);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (!dir) return -1;
    rewinddir(dir);
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) { rc = -1; continue; }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub < 0 || remove_tree_contents(sub) != 0) rc = -1;
            if (sub >= 0) close(sub);
            if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) != 0) rc = -1;
        } else if (unlinkat(dirfd, e->d_name, 0) != 0) {
            rc = -1;
        }
    }
    closedir(dir);
    return rc;
}

static int copy_tree(int from, int to) {
    int fd = dup(from);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (!dir) return -1;
    rewinddir(dir);
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) { rc = -1; continue; }
        if (S_ISDIR(st.st_mode)) {
            if (mkdirat(to, e->d_name, st.st_mode & 07777) != 0 && errno != EEXIST) { rc = -1; continue; }
            int a = openat(from, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int b = openat(to, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (a < 0 || b < 0 || copy_tree(a, b) != 0) rc = -1;
            if (a >= 0) close(a);
            if (b >= 0) close(b);
        } else if (S_ISREG(st.st_mode)) {
            int a = openat(from, e->d_name, O_RDONLY | O_CLOEXEC);
            int b = openat(to, e->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
            if (a < 0 || b < 0 || copy_range(a, b, 0, st.st_size) != 0 || ftruncate(b, st.st_size) != 0) rc = -1;
            if (a >= 0) close(a);
            if (b >= 0) close(b);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlinkat(from, e->d_name, target, sizeof target - 1);
            if (n < 0) { rc = -1; continue; }
            target[n] = 0;
            if (symlinkat(target, to, e->d_name) != 0) rc = -1;
        } else if (mknodat(to, e->d_name, st.st_mode, st.st_rdev) != 0) {
            rc = -1;
        }
    }
    closedir(dir);
    return rc;
}

// The power cut: drop the journal and every unsynced byte; the cache becomes BACKING again.
static char *last_cut_files;  // "cut_file BYTES PATH" lines: what the last cut dropped, per file

static int power_cut(void) {
    uint64_t dropped = 0;
    size_t size = 0;
    free(last_cut_files);
    FILE *f = open_memstream(&last_cut_files, &size);
    if (!f) abort();
    for (struct dirty *d = dirty_files; d; d = d->next) {
        dropped += dirty_bytes(d);
        if (dirty_bytes(d) > 0 || d->min_size >= 0) fprintf(f, "cut_file %lu %s\n", dirty_bytes(d), d->path ? d->path : "(unknown)");
    }
    fclose(f);
    while (dirty_files) dirty_drop(dirty_files->ino);
    c.last_cut_bytes_dropped = dropped;
    c.last_cut_meta_dropped = journal_length;
    c.last_cut_open_files = c.open_files;
    c.bytes_dropped += dropped;
    c.meta_dropped += journal_length;
    journal_free();
    c.cuts++;
    g.dead = 0;
    free(g.armed_path);
    g.armed_path = NULL;
    if (remove_tree_contents(g.live_fd) != 0 || copy_tree(g.durable_fd, g.live_fd) != 0) {
        note("cut: could not rebuild the cache %s from %s: %s", g.live_path, g.durable_path, strerror(errno));
        return -EIO;
    }
    return 0;
}

static size_t report(char **out) {
    uint64_t unsynced = 0;
    for (struct dirty *d = dirty_files; d; d = d->next) unsynced += dirty_bytes(d);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) abort();
    fprintf(f,
            "cuts %lu\nwrites %lu\nbytes_written %lu\nfsyncs %lu\nfdatasyncs %lu\ndir_fsyncs %lu\nbytes_synced %lu\n"
            "meta_ops %lu\nmeta_committed %lu\nbytes_dropped %lu\nmeta_dropped %lu\nunsynced_bytes %lu\npending_meta %lu\n"
            "open_files %lu\nlast_cut_bytes_dropped %lu\nlast_cut_meta_dropped %lu\nlast_cut_open_files %lu\nreplay_errors %lu\n"
            "armed_fired %lu\ndead %d\narmed %s%s\n",
            c.cuts, c.writes, c.bytes_written, c.fsyncs, c.fdatasyncs, c.dir_fsyncs, c.bytes_synced,
            c.meta_ops, c.meta_committed, c.bytes_dropped, c.meta_dropped, unsynced, journal_length,
            c.open_files, c.last_cut_bytes_dropped, c.last_cut_meta_dropped, c.last_cut_open_files, c.replay_errors,
            c.armed_fired, g.dead, g.armed_path ? (g.armed_fsync ? "fsync " : "write ") : "none", g.armed_path ? g.armed_path : "");
    for (struct file_stats *s = stats; s; s = s->next)
        fprintf(f, "file %lu %lu %lu %s\n", s->written, s->synced, s->fsyncs, s->path);
    if (last_cut_files) fputs(last_cut_files, f);
    fclose(f);
    *out = text;
    return size;
}

// MARK: - Armed cuts

static void on_release(int signal) {
    (void)signal;
    released = 1;
}

// Whether an armed cut fires at this operation on `path`: then it cuts, says so (--fired),
// and holds the request until SIGUSR2 (at most 60 s), while the test kills the writer.
static int fires(const char *path, int is_fsync) {
    if (!g.armed_path || !path || is_fsync != g.armed_fsync || strcmp(path, g.armed_path) != 0) return 0;
    if (--g.armed_count > 0) return 0;
    released = 0;
    power_cut();  // (disarms)
    g.dead = 1;
    c.armed_fired++;
    if (g.fired_file) {
        int fd = open(g.fired_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) close(fd);
    }
    for (int i = 0; i < 60000 && !released; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    return 1;
}

// MARK: - File handles

struct handle {
    int fd;       // in the cache; -1 for the control file
    ino_t ino;    // in the cache
    char *text;   // the control file's report, made at open
    size_t length;
    struct handle *next;
};
static struct handle *handles;
#define H(fi) ((struct handle *)(uintptr_t)(fi)->fh)

static int is_control(const char *path) { return path && strcmp(path, CONTROL_PATH) == 0; }

static int new_handle(struct fuse_file_info *fi, int fd) {
    struct handle *h = calloc(1, sizeof *h);
    if (!h) return -ENOMEM;
    h->fd = fd;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) h->ino = st.st_ino;
    h->next = handles;
    handles = h;
    fi->fh = (uint64_t)(uintptr_t)h;
    if (fd >= 0) c.open_files++;
    return 0;
}

static int is_open(ino_t ino) {
    for (struct handle *h = handles; h; h = h->next)
        if (h->fd >= 0 && h->ino == ino) return 1;
    return 0;
}

// Data of the file open as `fd` changed in [start, end).
static void wrote(const char *path, int fd, off_t start, off_t end) {
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    struct dirty *d = dirty_find(st.st_ino, 1);
    dirty_add(d, start, end);
    if (path && (!d->path || strcmp(d->path, path) != 0)) {
        free(d->path);
        if (!(d->path = strdup(path))) abort();
    }
    c.writes++;
    c.bytes_written += (uint64_t)(end - start);
    stats_for(path)->written += (uint64_t)(end - start);
}

// The file open as `fd` is about to be truncated to `size`.
static void truncating(int fd, off_t size) {
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    if (size < st.st_size) dirty_truncate(dirty_find(st.st_ino, 1), size);
}

// MARK: - Operations

static void *lz_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    cfg->use_ino = 1;
    cfg->hard_remove = 1;
    cfg->nullpath_ok = 0;  // the path of every file operation (NULL only for an unlinked file)
    cfg->entry_timeout = 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    cfg->direct_io = 0;
    note("mounted: backing %s, cache %s%s", g.durable_path, g.live_path, g.host_sync ? "" : ", no host fsync");
    return NULL;
}

static int lz_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if (is_control(path)) {
        memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        st->st_uid = getuid();
        st->st_gid = getgid();
        return 0;
    }
    int rc = fi && H(fi)->fd >= 0 ? fstat(H(fi)->fd, st) : fstatat(g.live_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    return rc == 0 ? 0 : -errno;
}

static int lz_access(const char *path, int mask) {
    if (is_control(path)) return 0;
    return faccessat(g.live_fd, rel(path), mask, 0) == 0 ? 0 : -errno;
}

static int lz_readlink(const char *path, char *buf, size_t size) {
    if (g.dead) return -EIO;  // the power is off
    ssize_t n = readlinkat(g.live_fd, rel(path), buf, size - 1);
    if (n < 0) return -errno;
    buf[n] = 0;
    return 0;
}

static int lz_opendir(const char *path, struct fuse_file_info *fi) {
    if (g.dead) return -EIO;  // the power is off
    int fd = openat(g.live_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        return -e;
    }
    fi->fh = (uint64_t)(uintptr_t)dir;
    return 0;
}

static int lz_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t offset,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)path; (void)offset; (void)flags;
    DIR *dir = (DIR *)(uintptr_t)fi->fh;
    rewinddir(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    return 0;
}

static int lz_releasedir(const char *path, struct fuse_file_info *fi) {
    (void)path;
    closedir((DIR *)(uintptr_t)fi->fh);
    return 0;
}

static int lz_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
    if (g.dead) return -EIO;  // the power is off
    (void)path; (void)datasync; (void)fi;
    c.dir_fsyncs++;
    journal_commit();
    return 0;
}

static int lz_mknod(const char *path, mode_t mode, dev_t rdev) {
    if (is_control(path)) return -EEXIST;
    if (g.dead) return -EIO;  // the power is off
    if (mknodat(g.live_fd, rel(path), mode, rdev) != 0) return -errno;
    journal_add(J_MKNOD, rel(path), NULL, mode);
    journal_last()->rdev = rdev;
    return 0;
}

static int lz_mkdir(const char *path, mode_t mode) {
    if (is_control(path)) return -EEXIST;
    if (g.dead) return -EIO;  // the power is off
    if (mkdirat(g.live_fd, rel(path), mode) != 0) return -errno;
    journal_add(J_MKDIR, rel(path), NULL, mode);
    return 0;
}

// Forgets the unsynced data of the file at `path` if this removes its last name.
static void forget_if_last_link(const char *path) {
    struct stat st;
    if (fstatat(g.live_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_nlink <= 1
        && !is_open(st.st_ino))
        dirty_drop(st.st_ino);
}

static int lz_unlink(const char *path) {
    if (is_control(path)) return -EPERM;
    if (g.dead) return -EIO;  // the power is off
    struct stat st;
    int last = fstatat(g.live_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_nlink <= 1;
    if (unlinkat(g.live_fd, rel(path), 0) != 0) return -errno;
    // Its unsynced data cannot be synced any more: forgotten now, or at the last release.
    if (last && !is_open(st.st_ino)) dirty_drop(st.st_ino);
    journal_add(J_UNLINK, rel(path), NULL, 0);
    return 0;
}

static int lz_rmdir(const char *path) {
    if (g.dead) return -EIO;  // the power is off
    if (unlinkat(g.live_fd, rel(path), AT_REMOVEDIR) != 0) return -errno;
    journal_add(J_RMDIR, rel(path), NULL, 0);
    return 0;
}

static int lz_symlink(const char *target, const char *path) {
    if (is_control(path)) return -EEXIST;
    if (g.dead) return -EIO;  // the power is off
    if (symlinkat(target, g.live_fd, rel(path)) != 0) return -errno;
    journal_add(J_SYMLINK, target, rel(path), 0);
    return 0;
}

static int lz_rename(const char *from, const char *to, unsigned int flags) {
    if (is_control(from) || is_control(to)) return -EPERM;
    if (g.dead) return -EIO;  // the power is off
    if (!(flags & RENAME_EXCHANGE)) forget_if_last_link(to);
    if (renameat2(g.live_fd, rel(from), g.live_fd, rel(to), flags) != 0) return -errno;
    journal_add(J_RENAME, rel(from), rel(to), 0);
    journal_last()->flags = flags;
    stats_rename(from, to);
    return 0;
}

static int lz_link(const char *from, const char *to) {
    if (is_control(from) || is_control(to)) return -EPERM;
    if (g.dead) return -EIO;  // the power is off
    if (linkat(g.live_fd, rel(from), g.live_fd, rel(to), 0) != 0) return -errno;
    journal_add(J_LINK, rel(from), rel(to), 0);
    return 0;
}

static int lz_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    if (is_control(path)) return 0;
    if (g.dead) return -EIO;  // the power is off
    int rc = fi && H(fi)->fd >= 0 ? fchmod(H(fi)->fd, mode) : fchmodat(g.live_fd, rel(path), mode, 0);
    if (rc != 0) return -errno;
    if (path) journal_add(J_CHMOD, rel(path), NULL, mode);
    return 0;
}

static int lz_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    if (is_control(path)) return 0;
    if (g.dead) return -EIO;  // the power is off
    int rc = fi && H(fi)->fd >= 0 ? fchown(H(fi)->fd, uid, gid) : fchownat(g.live_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
    if (rc != 0) return -errno;
    if (path) {
        journal_add(J_CHOWN, rel(path), NULL, 0);
        journal_last()->uid = uid;
        journal_last()->gid = gid;
    }
    return 0;
}

static int lz_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    if (is_control(path)) return 0;  // `echo cut > .lazyfs` truncates first
    if (g.dead) return -EIO;  // the power is off
    int fd = fi && H(fi)->fd >= 0 ? H(fi)->fd : openat(g.live_fd, rel(path), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    truncating(fd, size);
    int rc = ftruncate(fd, size) == 0 ? 0 : -errno;
    if (!(fi && H(fi)->fd >= 0)) close(fd);
    return rc;
}

static int lz_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    if (is_control(path)) return 0;
    if (g.dead) return -EIO;  // the power is off
    int rc = fi && H(fi)->fd >= 0 ? futimens(H(fi)->fd, tv) : utimensat(g.live_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
    return rc == 0 ? 0 : -errno;
}

static int open_live(const char *path, struct fuse_file_info *fi, int create, mode_t mode) {
    // O_APPEND: the kernel gives the offset; O_TRUNC: done below, so the truncation is seen.
    int flags = fi->flags & ~(O_APPEND | O_TRUNC | O_CREAT | O_EXCL | O_NOCTTY);
    if ((flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
    struct stat before;
    int existed = fstatat(g.live_fd, rel(path), &before, AT_SYMLINK_NOFOLLOW) == 0;
    if (create && existed && (fi->flags & O_EXCL)) return -EEXIST;
    int fd = openat(g.live_fd, rel(path), flags | O_CLOEXEC | (create ? O_CREAT : 0), mode);
    if (fd < 0) return -errno;
    if (create && !existed) journal_add(J_CREATE, rel(path), NULL, mode & 07777);
    if ((fi->flags & O_TRUNC) && existed) {
        truncating(fd, 0);
        if (ftruncate(fd, 0) != 0) {
            int e = errno;
            close(fd);
            return -e;
        }
    }
    int rc = new_handle(fi, fd);
    if (rc != 0) close(fd);
    return rc;
}

static int lz_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    if (is_control(path)) return -EEXIST;
    if (g.dead) return -EIO;  // the power is off
    return open_live(path, fi, 1, mode);
}

static int lz_open(const char *path, struct fuse_file_info *fi) {
    if (is_control(path)) {
        int rc = new_handle(fi, -1);
        if (rc != 0) return rc;
        H(fi)->length = report(&H(fi)->text);
        fi->direct_io = 1;
        return 0;
    }
    if (g.dead) return -EIO;  // the power is off
    return open_live(path, fi, 0, 0);
}

static int lz_read(const char *path, char *buf, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)path;
    struct handle *h = H(fi);
    if (h->fd < 0) {
        if ((size_t)offset >= h->length) return 0;
        size_t n = h->length - (size_t)offset < size ? h->length - (size_t)offset : size;
        memcpy(buf, h->text + offset, n);
        return (int)n;
    }
    if (g.dead) return -EIO;  // the power is off
    ssize_t n = pread(h->fd, buf, size, offset);
    return n < 0 ? -errno : (int)n;
}

static int control_command(const char *buf, size_t size) {
    char command[32] = {0};
    size_t n = 0;
    while (n < size && n < sizeof command - 1 && buf[n] != '\n' && buf[n] != ' ' && buf[n] != '\r') {
        command[n] = buf[n];
        n++;
    }
    if (strcmp(command, "cut") == 0) {
        int rc = power_cut();
        return rc == 0 ? (int)size : rc;
    }
    if (strcmp(command, "arm") == 0 || strcmp(command, "disarm") == 0) {
        free(g.armed_path);
        g.armed_path = NULL;
        if (command[0] == 'd') return (int)size;
        // "arm write /path" or "arm fsync /path"
        char text[PATH_MAX + 16] = {0};
        memcpy(text, buf, size < sizeof text - 1 ? size : sizeof text - 1);
        text[strcspn(text, "\r\n")] = 0;
        char *kind = text + 3;
        while (*kind == ' ') kind++;
        char *target = strchr(kind, ' ');
        if (!target) return -EINVAL;
        *target++ = 0;
        while (*target == ' ') target++;
        char *count = strchr(target, ' ');
        g.armed_count = 1;
        if (count) {
            *count++ = 0;
            g.armed_count = strtol(count, NULL, 10);
            if (g.armed_count < 1) return -EINVAL;
        }
        if ((strcmp(kind, "write") != 0 && strcmp(kind, "fsync") != 0) || target[0] != '/') return -EINVAL;
        g.armed_fsync = kind[0] == 'f';
        if (!(g.armed_path = strdup(target))) abort();
        return (int)size;
    }
    if (strcmp(command, "reset") == 0) {
        uint64_t open_files = c.open_files;
        memset(&c, 0, sizeof c);
        c.open_files = open_files;
        stats_reset();
        return (int)size;
    }
    note("unknown control command '%s' (cut, reset, arm, disarm)", command);
    return -EINVAL;
}

static int lz_write(const char *path, const char *buf, size_t size, off_t offset, struct fuse_file_info *fi) {
    struct handle *h = H(fi);
    if (h->fd < 0) return control_command(buf, size);
    if (g.dead || fires(path, 0)) return -EIO;
    ssize_t n = pwrite(h->fd, buf, size, offset);
    if (n < 0) return -errno;
    wrote(path, h->fd, offset, offset + n);
    return (int)n;
}

static int lz_statfs(const char *path, struct statvfs *st) {
    (void)path;
    return fstatvfs(g.live_fd, st) == 0 ? 0 : -errno;
}

static int lz_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    struct handle *h = H(fi);
    if (h->fd >= 0) {
        struct stat st;
        // The last name is gone and now the last handle: nothing of it can be synced any more.
        if (fstat(h->fd, &st) == 0 && st.st_nlink == 0) dirty_drop(st.st_ino);
        close(h->fd);
    }
    for (struct handle **p = &handles; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            break;
        }
    }
    if (h->fd >= 0 && c.open_files > 0) c.open_files--;
    free(h->text);
    free(h);
    return 0;
}

static int lz_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    struct handle *h = H(fi);
    if (h->fd < 0) return 0;
    if (g.dead || fires(path, 1)) return -EIO;
    if (datasync) c.fdatasyncs++; else c.fsyncs++;
    return sync_file(path, h->fd);
}

static int lz_fallocate(const char *path, int mode, off_t offset, off_t length, struct fuse_file_info *fi) {
    if (g.dead) return -EIO;  // the power is off
    struct handle *h = H(fi);
    if (h->fd < 0) return -EOPNOTSUPP;
    if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) return -EOPNOTSUPP;
    if (fallocate(h->fd, mode, offset, length) != 0) return -errno;
    // Punched or zeroed bytes changed content; a plain allocation only the size (taken at sync).
    if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
        struct stat st;
        if (fstat(h->fd, &st) == 0) {
            off_t end = offset + length < st.st_size ? offset + length : st.st_size;
            if (end > offset) dirty_add(dirty_find(st.st_ino, 1), offset, end);
        }
    }
    (void)path;
    return 0;
}

static const struct fuse_operations operations = {
    .init = lz_init,
    .getattr = lz_getattr,
    .access = lz_access,
    .readlink = lz_readlink,
    .opendir = lz_opendir,
    .readdir = lz_readdir,
    .releasedir = lz_releasedir,
    .fsyncdir = lz_fsyncdir,
    .mknod = lz_mknod,
    .mkdir = lz_mkdir,
    .unlink = lz_unlink,
    .rmdir = lz_rmdir,
    .symlink = lz_symlink,
    .rename = lz_rename,
    .link = lz_link,
    .chmod = lz_chmod,
    .chown = lz_chown,
    .truncate = lz_truncate,
    .utimens = lz_utimens,
    .create = lz_create,
    .open = lz_open,
    .read = lz_read,
    .write = lz_write,
    .statfs = lz_statfs,
    .release = lz_release,
    .fsync = lz_fsync,
    .fallocate = lz_fallocate,
};

static void usage(void) {
    fprintf(stderr, "usage: lazyfs [--cache DIR] [--fired FILE] [--no-host-sync] BACKING MOUNTPOINT [FUSE options]\n");
    exit(2);
}

int main(int argc, char *argv[]) {
    const char *cache = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc) cache = argv[++i];
        else if (strcmp(argv[i], "--fired") == 0 && i + 1 < argc) g.fired_file = argv[++i];
        else if (strcmp(argv[i], "--no-host-sync") == 0) g.host_sync = 0;
        else usage();
    }
    if (argc - i < 2) usage();
    const char *backing = argv[i], *mountpoint = argv[i + 1];
    if (!(g.durable_path = realpath(backing, NULL))) {
        note("backing directory %s: %s", backing, strerror(errno));
        return 1;
    }
    if (cache) {
        // Emptied at start and removed at the end: it must be new or empty.
        if (mkdir(cache, 0700) != 0 && (errno != EEXIST || rmdir(cache) != 0 || mkdir(cache, 0700) != 0)) {
            note("cache directory %s: must be new or empty: %s", cache, strerror(errno));
            return 1;
        }
        g.live_path = realpath(cache, NULL);
    } else {
        const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        char template[PATH_MAX];
        snprintf(template, sizeof template, "%s/lazyfs-cache.XXXXXX", tmp);
        if (!mkdtemp(template)) {
            note("cache directory in %s: %s", tmp, strerror(errno));
            return 1;
        }
        g.live_path = strdup(template);
    }
    g.durable_fd = open(g.durable_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g.live_fd = g.live_path ? open(g.live_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (g.durable_fd < 0 || g.live_fd < 0) {
        note("cannot open %s or the cache: %s", g.durable_path, strerror(errno));
        return 1;
    }
    if (remove_tree_contents(g.live_fd) != 0 || copy_tree(g.durable_fd, g.live_fd) != 0) {
        note("cannot copy %s into the cache %s: %s", g.durable_path, g.live_path, strerror(errno));
        return 1;
    }

    struct sigaction release_action = {.sa_handler = on_release};
    sigemptyset(&release_action.sa_mask);
    sigaction(SIGUSR2, &release_action, NULL);

    char *args[64];
    int n = 0;
    args[n++] = argv[0];
    args[n++] = (char *)mountpoint;
    args[n++] = "-f";
    args[n++] = "-s";
    args[n++] = "-o";
    args[n++] = "auto_unmount,fsname=lazyfs,subtype=lazyfs";
    for (int k = i + 2; k < argc && n < 63; k++) args[n++] = argv[k];
    args[n] = NULL;
    int rc = fuse_main(n, args, &operations, NULL);

    // Unmounted: the cache goes (what was not synced is lost, as at a cut); BACKING stays.
    remove_tree_contents(g.live_fd);
    rmdir(g.live_path);
    return rc;
}
